#include "tests/support/host_jit.h"

#include <deque>
#include <map>

#include "codegen/asmjit/asmjit_backend.h"
#include "ir/error.h"
#include "jit/executor.h"
#include "tests/support/kernel_util.h"

namespace fusor::test {

namespace {

struct Instances {
  std::vector<std::unique_ptr<JitBackend>> owned;
  std::vector<HostJit> jits;
  std::string why;  ///< not empty: unavailable here
};

Instances make_instances(BackendKind kind) {
  Instances in;
  const BackendInfo& info = backend_info(kind);
  try {
    in.owned.push_back(make_jit_backend(kind));
    // asmjit emits each instruction set's code itself: on an AVX-512 host its AVX2 kernels
    // are checked too, as the asmjit suites do (tests/codegen/asmjit/asmjit_test_util.h).
    if (kind == BackendKind::Asmjit && static_cast<AsmjitBackend&>(*in.owned[0]).vector_lanes() == 16) {
      AsmjitBackend::Options avx2;
      avx2.isa = AsmjitBackend::Isa::Avx2;
      in.owned.push_back(make_asmjit_backend(avx2));
    }
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    in.owned.clear();
    in.why = e.what();
  }
  for (const std::unique_ptr<JitBackend>& b : in.owned) {
    std::string label(info.name);
    if (kind == BackendKind::Asmjit)
      label += static_cast<AsmjitBackend&>(*b).vector_lanes() == 16 ? " avx512" : " avx2";
    in.jits.push_back(HostJit{&info, b.get(), label});
  }
  return in;
}

}  // namespace

std::vector<HostJit> host_jits_or_skip(BackendKind kind) {
  static std::map<BackendKind, Instances> made;  // one JIT per instance for the test process
  auto it = made.find(kind);
  if (it == made.end()) it = made.emplace(kind, make_instances(kind)).first;
  if (it->second.jits.empty()) MESSAGE("skipped: " << std::string(backend_name(kind)) << ": " << it->second.why);
  return it->second.jits;
}

bool takes_or_skip(const HostJit& jit, const FusedGraph& f, GroupKind kind) {
  for (const KernelSpec& spec : lower_groups(f, kind)) {
    std::string why;
    if (!jit.backend->supports(spec, &why)) {
      MESSAGE("skipped: " << jit.label << " declines " << spec.name << ": " << why);
      return false;
    }
  }
  return true;
}

namespace detail {

void register_host_jit_case(void (*run)(), std::string_view backend, const char* title, const char* file,
                            unsigned line, const doctest::detail::TestSuite& suite) {
  static std::deque<std::string> names;  // doctest keeps the name's pointer
  names.push_back(std::string(backend) + "/" + title);
  doctest::detail::regTest(doctest::detail::TestCase(run, file, line, suite) * names.back().c_str());
}

}  // namespace detail
}  // namespace fusor::test
