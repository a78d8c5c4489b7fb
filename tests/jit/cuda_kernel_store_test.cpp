// Cubins in the persistent store: the cuda kernel key (backend "cuda", the architecture,
// "nvrtc-<version>", the engine version) and a cubin saved under it. NVRTC compiles for
// sm_90 with no GPU, so the store round trip runs on every machine with NVRTC; loading the
// stored bytes on the device (nothing compiled) skips with a reason where there is none.
#include <doctest/doctest.h>

#include "cache/disk_store.h"
#include "jit/cuda_executor.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/disk_store_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

namespace {

KernelSpec first_case_spec() {
  const test::CudaCase c = test::cuda_cases().front();  // a copy: cuda_cases() returns a new list
  return test::lower_one(c.text, c.dims, c.kind);
}

std::span<const uint8_t> as_bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

}  // namespace

TEST_SUITE("cuda/store") {
  TEST_CASE("the cuda kernel key names the backend the architecture and the NVRTC version") {
    KernelSpec spec = first_case_spec();
    KernelKey k = cuda_kernel_key(spec, "sm_90", "13.0");
    CHECK(k.backend == "cuda");
    CHECK(k.target == "sm_90");
    CHECK(k.compiler == "nvrtc-13.0");
    CHECK(k.engine_version == kFusorVersion);
    CHECK(k.spec.same_code(spec));
  }

  TEST_CASE("the cuda kernel key changes with the architecture and the NVRTC version") {
    KernelSpec spec = first_case_spec();
    const KernelKey base = cuda_kernel_key(spec, "sm_90", "13.0");
    for (const KernelKey& other : {cuda_kernel_key(spec, "sm_80", "13.0"), cuda_kernel_key(spec, "sm_90", "12.4")}) {
      INFO(other.target << " " << other.compiler);
      CHECK_FALSE(other == base);
      CHECK(other.hash() != base.hash());
      CHECK(other.serialize() != base.serialize());
      CHECK(DiskStore::key_hash(other.serialize()) != DiskStore::key_hash(base.serialize()));
    }
    CHECK(cuda_kernel_key(spec, "sm_90", "13.0") == base);
    CHECK(cuda_kernel_key(spec, "sm_90", "13.0").serialize() == base.serialize());
  }

  TEST_CASE("a cubin compiled for sm_90 is saved and loaded back byte-identical under its key") {
    CudaCompiler* nvrtc = test::nvrtc_or_skip();
    if (!nvrtc) return;
    KernelSpec spec = first_case_spec();
    CudaBinary b = nvrtc->compile(spec, "sm_90");
    REQUIRE(b.cubin.size() > 256);
    const KernelKey key = cuda_kernel_key(spec, "sm_90", nvrtc->nvrtc_version());
    test::TempDir dir("cuda-store");
    auto w = std::make_shared<test::Warnings>();
    {
      DiskStore store = DiskStore::open(test::store_options(dir.path().string(), w));
      REQUIRE(store.enabled());
      CHECK(store.put(key.serialize(), as_bytes(b.cubin)));
    }
    // Another process (a fresh store on the same folder) finds it.
    DiskStore store = DiskStore::open(test::store_options(dir.path().string(), w));
    std::optional<std::vector<uint8_t>> got = store.get(key.serialize());
    REQUIRE(got.has_value());
    CHECK(std::string(got->begin(), got->end()) == b.cubin);
    // Another architecture or NVRTC version is another kernel: a miss.
    CHECK_FALSE(store.get(cuda_kernel_key(spec, "sm_80", nvrtc->nvrtc_version()).serialize()).has_value());
    CHECK_FALSE(store.get(cuda_kernel_key(spec, "sm_90", nvrtc->nvrtc_version() + ".1").serialize()).has_value());
    CHECK(store.stats().hits == 1);
    CHECK(store.stats().misses == 2);
    CHECK(w->size() == 0);
  }

  TEST_CASE("a corrupt cubin entry is a miss with a warning") {
    CudaCompiler* nvrtc = test::nvrtc_or_skip();
    if (!nvrtc) return;
    KernelSpec spec = first_case_spec();
    CudaBinary b = nvrtc->compile(spec, "sm_90");
    const std::string key = cuda_kernel_key(spec, "sm_90", nvrtc->nvrtc_version()).serialize();
    test::TempDir dir("cuda-store-corrupt");
    auto w = std::make_shared<test::Warnings>();
    DiskStore store = DiskStore::open(test::store_options(dir.path().string(), w));
    REQUIRE(store.put(key, as_bytes(b.cubin)));
    std::string file = test::read_file(store.entry_path(key));
    REQUIRE(file.size() > b.cubin.size());
    file[file.size() - b.cubin.size() / 2] ^= 0x40;  // one bit inside the cubin
    test::write_file(store.entry_path(key), file);
    CHECK_FALSE(store.get(key).has_value());
    CHECK(store.stats().corrupt == 1);
    CHECK(w->count("corrupt") == 1);
    // The next save rebuilds it.
    CHECK(store.put(key, as_bytes(b.cubin)));
    std::optional<std::vector<uint8_t>> got = store.get(key);
    REQUIRE(got.has_value());
    CHECK(std::string(got->begin(), got->end()) == b.cubin);
  }

  TEST_CASE("a kernel loaded from stored cubin bytes compiles nothing and computes what the compiled one does") {
    CudaBackend* be = test::cuda_backend_or_skip();
    if (!be) return;
    KernelSpec spec = first_case_spec();
    std::shared_ptr<const CudaKernel> compiled = be->compile(spec);
    std::shared_ptr<const CudaKernel> loaded = be->load(spec, compiled->binary.cubin);
    CHECK(loaded->binary.compile_us == 0);
    CHECK(loaded->binary.source.symbol == compiled->binary.source.symbol);
    CHECK(loaded->binary.source.variant == compiled->binary.source.variant);
    std::vector<Tensor> in = test::random_buffers(spec, 3);
    std::vector<Tensor> a = test::run_on_device(*be, *compiled, in);
    std::vector<Tensor> b = test::run_on_device(*be, *loaded, in);
    for (size_t i = 0; i < spec.buffers.size(); ++i)
      if (spec.buffers[i].output) FUSOR_CHECK_CLOSE(a[i], b[i], 0, 0);
    // Bytes that are not a cubin are refused, not handed to the driver.
    std::string msg;
    CHECK(test::error_of([&] { be->load(spec, "not a cubin"); }, &msg) == ErrorCode::CompileFailed);
    CHECK(msg.find("not a cubin") != std::string::npos);
  }
}
