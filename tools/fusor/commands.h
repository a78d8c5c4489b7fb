// The subcommands of the `fusor` tool. Each is registered once, in kCommands (main.cpp).
#pragma once

namespace fusor::cli {

/// `fusor run GRAPH ...`: run a graph on random or given inputs; prints outputs and timings.
int cmd_run(int argc, char** argv);
/// The usage text of `fusor run`.
extern const char* const kRunUsage;

/// `fusor explain GRAPH ...`: the fusion report of a graph at given dims.
int cmd_explain(int argc, char** argv);
extern const char* const kExplainUsage;

/// `fusor warmup GRAPH ...`: compile a graph's kernels for many shapes into the persistent
/// kernel store, in parallel, with progress.
int cmd_warmup(int argc, char** argv);
extern const char* const kWarmupUsage;

/// `fusor store stats|ls|verify|prune`: what the disk and remote kernel stores hold,
/// checked and pruned without loading a kernel.
int cmd_store(int argc, char** argv);
extern const char* const kStoreUsage;

/// `fusor ops [MODEL]`: the ONNX operators fusor loads, or those a model uses.
int cmd_ops(int argc, char** argv);
extern const char* const kOpsUsage;

}  // namespace fusor::cli
