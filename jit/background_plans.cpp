#include "jit/background_plans.h"

#include "jit/kernel_source.h"

namespace fusor {

BackgroundPlans::BackgroundPlans(Build build, Recharge recharge, std::function<void(const std::string&)> warn)
    : build_(std::move(build)), recharge_(std::move(recharge)), warn_(std::move(warn)) {}

BackgroundPlans::~BackgroundPlans() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BackgroundPlans::submit(const PlanKey& key, const Graph& g, std::shared_ptr<PlanEntry> entry) {
  std::lock_guard<std::mutex> lk(mu_);
  jobs_.push_back(Job{key, g, std::move(entry)});
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  cv_.notify_all();
}

void BackgroundPlans::drain() {
  std::unique_lock<std::mutex> lk(mu_);
  idle_cv_.wait(lk, [&] { return jobs_.empty() && !busy_; });
}

void BackgroundPlans::loop() {
  count_compiles_as_background();
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lk.unlock();
    try {
      std::shared_ptr<const ExecutablePlan> plan = build_(job.graph, job.key.inputs, *job.entry->plan.load());
      const uint64_t bytes = plan->bytes;
      job.entry->plan.store(std::move(plan));
      if (recharge_) recharge_(job.key, *job.entry, bytes);
      swaps_.fetch_add(1);
    } catch (const std::exception& e) {
      warn_(std::string("a background JIT plan failed; its shape stays on the static kernels: ") + e.what());
    }
    lk.lock();
    busy_ = false;
    idle_cv_.notify_all();
  }
}

}  // namespace fusor
