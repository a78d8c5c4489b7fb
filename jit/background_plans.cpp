#include "jit/background_plans.h"

#include "jit/kernel_source.h"

#include <algorithm>

#if defined(__linux__)
#include <cerrno>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fusor {

namespace {

// Note [Background priority]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The thread that builds final plans runs at nice +kBackgroundNice, so that compiling never
// takes a core from a run. A first plan exists so that a new shape is served at once; at
// the same priority, the LLVM compile it starts competes with that very run (and with the
// engine's spinning workers, the caller's other threads, the rest of the machine), and
// the scheduler splits the cores between them. Measured on a 2-vCPU Zen 5 with another
// build running beside it, the BERT layer at one thread, the first run at a new length T=128
// after T=16 (`symbolic_dim`): 21-31 ms at the same priority, 11-13 ms at nice +10, as
// fast as with no background compile at all (`specialize` off: 11-13 ms). The compile
// still gets a tenth of a busy core (CFS weights 110 against 1024), so under full load the
// final kernels arrive in seconds rather than never; on an idle core it runs at full speed.
// The value is relative to the thread's own (a process already run under `nice -n 5` gets
// 15, capped at 19). Linux sets the nice value per thread (setpriority on the thread's id);
// elsewhere, and where it is refused, the thread keeps its priority.
constexpr int kBackgroundNice = 10;

// The most a job waits for the run its first plan serves (Note [Background plans]); that
// run opens the gate when it ends, so this bounds only an entry built without one.
constexpr std::chrono::milliseconds kFirstRunWait{1000};

void lower_this_threads_priority() {
#if defined(__linux__)
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);  // -1 is a nice value too: errno tells
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, std::min(19, now + kBackgroundNice));
#endif
}

}  // namespace

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
  lower_this_threads_priority();  // Note [Background priority]
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    lk.unlock();
    // The run the first plan was built for goes first: compiling beside it would slow the
    // very request the first plan exists to serve at once.
    job.entry->first_run.wait(kFirstRunWait);
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
