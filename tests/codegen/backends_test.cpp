// The backend list (codegen/backends.def, codegen/backends.h): every line's name parses back
// to its kind, the choices an unknown name is refused with list every backend in order, and
// each host JIT backend's factory makes that backend or says why it cannot.
#include <doctest/doctest.h>

#include <string>

#include "codegen/backends.h"
#include "codegen/compiled_kernel.h"
#include "jit/executor.h"
#include "tests/support/test_util.h"

using namespace fusor;

TEST_SUITE("codegen/backends") {
  TEST_CASE("every backend's name parses back to its kind and the choices list them in order") {
    std::string choices;
    for (const BackendInfo& b : kBackends) {
      INFO(std::string(b.name));
      CHECK(parse_backend(b.name) == b.kind);
      CHECK(backend_name(b.kind) == b.name);
      CHECK(&backend_info(b.kind) == &b);
      CHECK_FALSE(b.summary.empty());
      CHECK(b.summary.size() <= 55);
      choices += (choices.empty() ? "" : ", ") + std::string(b.name);
    }
    CHECK(backend_choices() == choices);
    CHECK(kBackends[0].kind == BackendKind::Static);  // the default backend comes first
    std::string msg;
    CHECK(test::error_of([] { parse_backend("tpu"); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find(choices) != std::string::npos);
  }

  TEST_CASE("each host JIT backend's factory makes it or says why not and other roles are refused") {
    for (const BackendInfo& b : kBackends) {
      INFO(std::string(b.name));
      if (b.role != BackendRole::HostJit) {
        CHECK(test::error_of([&] { make_jit_backend(b.kind); }) == ErrorCode::InvalidArgument);
        continue;
      }
      try {
        std::unique_ptr<JitBackend> be = make_jit_backend(b.kind);
        REQUIRE(be != nullptr);
        CHECK(be->name() == b.name);
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::DeviceUnavailable);
        MESSAGE(std::string(b.name) << " is not available here: " << e.what());
      }
    }
  }
}
