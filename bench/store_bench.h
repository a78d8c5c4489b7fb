// Where a new replica's kernels come from, measured: compiled, loaded from the local disk
// store, or loaded from the remote store a fleet shares (Note [Remote store]). Layer: bench.
#pragma once

namespace fusor::bench {

/// Registers store/kernel/<kind>/{compile,disk,redis} (one kernel: compiled by llvm, or
/// read from the store and linked) and store/<bert case>/{compile,disk,redis} (a fresh
/// engine's first run at that shape, its kernels from that source). The redis variants need
/// a server: $FUSOR_BENCH_REDIS (a redis:// URL) and $FUSOR_STORE_KEY_FILE, as
/// scripts/bench-store.sh sets; without them they are skipped with the reason.
void register_store_benchmarks();

}  // namespace fusor::bench
