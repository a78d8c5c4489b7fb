// The engines of every backend of codegen/backends.def, for tests that check the same thing
// on each: an engine per backend, or a visible message saying why one cannot start here
// (never a silent pass).
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <string>

#include "codegen/backends.h"
#include "jit/engine.h"

namespace fusor::test {

/// Calls fn(backend, engine) for each backend of the list with an engine made from
/// `options` on it; says why for each backend that is unavailable here (DeviceUnavailable).
/// Returns how many engines ran.
inline int for_each_backend(EngineOptions options, const std::function<void(const BackendInfo&, Engine&)>& fn) {
  int ran = 0;
  for (const BackendInfo& b : kBackends) {
    options.backend = b.kind;
    std::unique_ptr<Engine> engine;
    try {
      engine = std::make_unique<Engine>(options);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      MESSAGE("backend " << std::string(b.name) << " skipped: " << std::string(e.what()));
      continue;
    }
    INFO("backend " << std::string(b.name));
    fn(b, *engine);
    ++ran;
  }
  return ran;
}

}  // namespace fusor::test
