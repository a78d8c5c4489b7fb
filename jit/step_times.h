// StepTimes: where run time went, per step label, when EngineOptions::profile is on
// (Engine::profile()). Layer: jit.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "jit/engine_types.h"

namespace fusor {

/// Accumulated step times. Thread-safe.
class StepTimes {
 public:
  /// Adds one call of step `label` that took `ms`.
  void add(const std::string& label, double ms);
  /// Every step's times so far, longest first.
  std::vector<StepProfile> snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, StepProfile, std::less<>> steps_;
};

}  // namespace fusor
