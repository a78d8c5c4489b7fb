// The host JIT backends of codegen/backends.def (role HostJit) for the conformance suite
// (tests/codegen/conformance/): a case written once with FUSOR_HOST_JIT_TEST_CASE("title")
// becomes one doctest case per HostJit line of the list, named "<backend>/<title>" (CTest:
// hostjit/llvm/every scalar op), which runs on every instance of that backend the host
// runs, or says "skipped: ..." with the reason. Never passes silently.
#pragma once

#include <doctest/doctest.h>

#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/backends.h"
#include "codegen/compiled_kernel.h"
#include "ir/passes/pipeline.h"

namespace fusor::test {

/// One instance of a host JIT backend under test, made once for the test process.
struct HostJit {
  const BackendInfo* info = nullptr;  ///< its line of codegen/backends.def
  JitBackend* backend = nullptr;
  std::string label;                  ///< "llvm", "asmjit avx2": the instance a failure is from
};

/// Every instance of host JIT backend `kind` this host runs: the backend for this CPU
/// (make_jit_backend) and, for asmjit, AVX2 beside AVX-512 on an AVX-512 host (its kernels
/// are emitted for each instruction set). Empty after a MESSAGE "skipped: ..." saying why
/// when the backend is not built in or the host lacks what it needs (DeviceUnavailable).
std::vector<HostJit> host_jits_or_skip(BackendKind kind);

/// Whether `jit` takes every group of `kind` in f (JitBackend::supports). When it declines
/// one: false after a MESSAGE "skipped: <backend> declines <kernel>: <why>", so CTest
/// reports the case as skipped. Only for a case whose every spec may be declined: a skip
/// marks the whole case, whatever else it checked.
bool takes_or_skip(const HostJit& jit, const FusedGraph& f, GroupKind kind);

namespace detail {

using HostJitBody = void (*)(const HostJit&);

/// Registers `run` as the doctest case "<backend>/<title>".
void register_host_jit_case(void (*run)(), std::string_view backend, const char* title, const char* file,
                            unsigned line, const doctest::detail::TestSuite& suite);

template <HostJitBody Body, BackendKind Kind>
void run_host_jit_case() {
  for (const HostJit& jit : host_jits_or_skip(Kind)) {
    INFO("backend ", jit.label, ": ", jit.backend->target_description());
    Body(jit);
  }
}

/// One case per HostJit line of kBackends, each running Body on that backend's instances.
template <HostJitBody Body>
int register_host_jit_cases(const char* title, const char* file, unsigned line, const doctest::detail::TestSuite& suite) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((kBackends[I].role == BackendRole::HostJit
          ? register_host_jit_case(&run_host_jit_case<Body, kBackends[I].kind>, kBackends[I].name, title, file, line, suite)
          : void()),
     ...);
  }(std::make_index_sequence<std::size(kBackends)>{});
  return 0;
}

}  // namespace detail
}  // namespace fusor::test

/// A test case run on every host JIT backend: the body sees `const HostJit& jit`.
#define FUSOR_HOST_JIT_TEST_CASE(title) FUSOR_HOST_JIT_TEST_CASE_IMPL(title, DOCTEST_ANONYMOUS(FUSOR_HOST_JIT_CASE_))
#define FUSOR_HOST_JIT_TEST_CASE_IMPL(title, fn)                                                                    \
  static void fn(const ::fusor::test::HostJit& jit);                                                                \
  DOCTEST_GLOBAL_NO_WARNINGS(DOCTEST_CAT(fn, _REGISTERED),                                                          \
                             ::fusor::test::detail::register_host_jit_cases<fn>(                                    \
                                 title, __FILE__, __LINE__, doctest_detail_test_suite_ns::getCurrentTestSuite())); \
  static void fn([[maybe_unused]] const ::fusor::test::HostJit& jit)
