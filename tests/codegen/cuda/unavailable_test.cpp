// The backend where CUDA is missing: loading a library that is not there fails softly with
// the places tried, and the factories throw DeviceUnavailable with the reason (on a
// machine with a GPU, make_cuda_backend works and the reason checks do not apply).
#include <doctest/doctest.h>

#include <filesystem>

#include "codegen/cuda/cuda_api.h"
#include "codegen/cuda/cuda_backend.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("cuda/unavailable") {
  TEST_CASE("a missing NVRTC or driver library is reported with every place tried") {
    cuda::Nvrtc n;
    std::string why;
    CHECK_FALSE(cuda::load_nvrtc(&n, &why, {"libfusor_no_such_nvrtc.so", "/nonexistent/libnvrtc.so"}));
    CHECK(why.find("libfusor_no_such_nvrtc.so") != std::string::npos);
    CHECK(why.find("/nonexistent/libnvrtc.so") != std::string::npos);
    cuda::Driver d;
    CHECK_FALSE(cuda::load_driver(&d, &why, {"libfusor_no_such_cuda.so.1"}));
    CHECK(why.find("libcuda") != std::string::npos);
    CHECK(why.find("libfusor_no_such_cuda.so.1") != std::string::npos);
  }

  TEST_CASE("a library without the expected entry points is rejected by name") {
    // The C library opens fine but has no NVRTC symbols.
    cuda::Nvrtc n;
    std::string why;
    CHECK_FALSE(cuda::load_nvrtc(&n, &why, {"libc.so.6"}));
    CHECK(why.find("lacks nvrtc") != std::string::npos);
  }

  TEST_CASE("make_cuda_backend works or throws DeviceUnavailable with the reason") {
    try {
      std::unique_ptr<CudaBackend> be = make_cuda_backend();
      MESSAGE("a CUDA device is present: " << be->description());
      CHECK(be->arch().rfind("sm_", 0) == 0);
    } catch (const Error& e) {
      MESSAGE("no CUDA device here: " << std::string(e.what()));
      CHECK(e.code() == ErrorCode::DeviceUnavailable);
      CHECK(e.message().find("cuda backend: ") == 0);
      CHECK(e.message().size() > 30);
    }
  }

  TEST_CASE("a device ordinal that does not exist is DeviceUnavailable") {
    std::string msg;
    CHECK(test::error_of([] { make_cuda_backend(4096); }, &msg) == ErrorCode::DeviceUnavailable);
  }

  TEST_CASE("the driver table resolves every entry point in the toolkit's stub libcuda") {
    // The stub (for linking without a driver) exports the real ABI: every symbol the
    // backend calls must be there under the name it asks for (the _v2 ones included).
    const char* stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (!std::filesystem::exists(stub)) {
      MESSAGE("skipped (no CUDA toolkit stub at " << stub << ")");
      return;
    }
    cuda::Driver d;
    std::string why;
    REQUIRE_MESSAGE(cuda::load_driver(&d, &why, {stub}), why);
    CHECK(d.path == stub);
    // The stub refuses to initialize, and the backend would say so as DeviceUnavailable.
    int r = d.Init(0);
    CHECK(r != 0);
    MESSAGE("the stub's cuInit: " << d.error_text(r));
  }
}
