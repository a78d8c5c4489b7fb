#include "jit/step_times.h"

#include <algorithm>

namespace fusor {

void StepTimes::add(const std::string& label, double ms) {
  std::lock_guard<std::mutex> lk(mu_);
  StepProfile& p = steps_[label];
  p.step = label;
  ++p.calls;
  p.total_ms += ms;
}

std::vector<StepProfile> StepTimes::snapshot() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<StepProfile> out;
  for (const auto& [label, p] : steps_) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const StepProfile& a, const StepProfile& b) { return a.total_ms > b.total_ms; });
  return out;
}

}  // namespace fusor
