// Running rendered CUDA kernels on the host, for machines without a GPU: a kernel's source
// is turned into host C++ against host_emulation.h (the preamble's two cvt instructions and
// mma.sync rewritten to its stand-ins, dynamic shared memory mapped to a host buffer),
// compiled by the build's C++ compiler into a shared object and called through
// fusor_emulate(buffers, hooks). Used by emulation_test.cpp (one kernel per case) and the CUDA
// plan tests (every launch of a plan).
#pragma once

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "codegen/cuda/render_cuda.h"
#include "codegen/cuda/render_expr.h"
#include "codegen/kernel_spec.h"
#include "ir/dtype.h"
#include "tests/codegen/cuda/emulation_hooks.h"

namespace fusor::test {

/// The C++ compiler this build used (from its CMakeCache.txt), or "" when it is not there.
inline std::string host_compiler() {
  std::ifstream cache(std::string(FUSOR_BINARY_DIR) + "/CMakeCache.txt");
  const std::string key = "CMAKE_CXX_COMPILER:FILEPATH=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) {
      std::string path = line.substr(key.size());
      return std::ifstream(path).good() ? path : "";
    }
  return "";
}

/// Why rendered kernels cannot be emulated here ("" when they can): no host compiler, or
/// not the sources this binary was built from.
inline std::string emulation_unavailable() {
  if (host_compiler().empty()) return "no host C++ compiler recorded in " + std::string(FUSOR_BINARY_DIR) + "/CMakeCache.txt";
  if (!std::ifstream(std::string(FUSOR_SOURCE_DIR) + "/tests/codegen/cuda/host_emulation.h"))
    return "the sources are not at " + std::string(FUSOR_SOURCE_DIR);
  return "";
}

inline void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

/// The rendered kernel as host C++ with an entry point
/// fusor_emulate(void** buffers, const fusor_emu::Hooks* hooks).
inline std::string host_source(const KernelSpec& spec, const CudaSource& src) {
  std::string s = src.code;
  replace_all(s, "asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));", "f = fusor_emu::f16_to_f32(h);");
  replace_all(s, "asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));", "h = fusor_emu::f32_to_f16(f);");
  replace_all(s, "extern __shared__ float smem[];", "float* smem = fusor_emu::dynamic_shared;");
  if (size_t m = s.find("  asm volatile(\"mma.sync"); m != std::string::npos) {
    const size_t e = s.find(");\n}", m);
    REQUIRE(e != std::string::npos);
    const bool bf16 = s.find(".bf16.bf16", m) < e;
    s.replace(m, e + 2 - m, std::string("  fusor_emu::mma_16816(c, a, b, ") + (bf16 ? "true" : "false") + ");");
  }
  REQUIRE_MESSAGE(s.find("asm") == std::string::npos, "inline PTX the emulation has no stand-in for:\n", s);
  std::string call = src.symbol + "(";
  for (size_t i = 0; i < spec.buffers.size(); ++i)
    call += std::string(i ? ", " : "") + "(" + (spec.buffers[i].output ? "" : "const ") +
            cuda_src::storage_type(spec.buffers[i].dtype) + "*)buffers[" + std::to_string(i) + "]";
  const CudaLaunchConfig& l = src.launch;
  return "#include \"tests/codegen/cuda/host_emulation.h\"\n" + s +
         "extern \"C\" void fusor_emulate(void** buffers, const fusor_emu::Hooks* hooks) {\n"
         "  fusor_emu::hooks = hooks;\n  fusor_emu::launch(" + std::to_string(l.grid[0]) + ", " +
         std::to_string(l.grid[1]) + ", " + std::to_string(l.grid[2]) + ", " + std::to_string(l.block[0]) + ", " +
         std::to_string(l.shared_bytes) + ", [&] { " + call + "); });\n}\n";
}

/// A rendered kernel compiled for the host (emulation_unavailable() must be "").
class EmulatedKernel {
 public:
  /// Compiles `src` (rendered from `spec`) into `dir`/`tag`.so; FAILs with the compiler's
  /// output when the host compiler rejects it.
  EmulatedKernel(const KernelSpec& spec, const CudaSource& src, const std::string& dir, const std::string& tag)
      : lib_(nullptr, dlclose) {
    const std::string cpp = dir + "/" + tag + ".cpp", so = dir + "/" + tag + ".so", log = dir + "/" + tag + ".log";
    std::ofstream(cpp) << host_source(spec, src);
    const std::string cmd = host_compiler() + " -std=c++20 -O1 -w -fPIC -shared -pthread -I" + FUSOR_SOURCE_DIR + " -o " +
                            so + " " + cpp + " > " + log + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream l(log);
      FAIL("the host compiler rejected the emulated kernel:\n" << std::string(std::istreambuf_iterator<char>(l), {}));
    }
    lib_.reset(dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL));
    REQUIRE_MESSAGE(lib_ != nullptr, std::string(dlerror()));
    run_ = reinterpret_cast<void (*)(void**, const fusor_emu::Hooks*)>(dlsym(lib_.get(), "fusor_emulate"));
    REQUIRE_MESSAGE(bool(run_), "no fusor_emulate in ", so);
  }
  /// Runs the whole grid on `buffers` (one pointer per spec buffer).
  void run(void** buffers) const {
    static const fusor_emu::Hooks hooks{[](unsigned short h) { return f16_to_f32(h); },
                                        [](float f) { return (unsigned short)f32_to_f16(f); },
                                        [](unsigned short h) { return bf16_to_f32(h); }};
    run_(buffers, &hooks);
  }

 private:
  std::unique_ptr<void, int (*)(void*)> lib_;
  void (*run_)(void**, const fusor_emu::Hooks*) = nullptr;
};

}  // namespace fusor::test
