// Helpers for pass tests: run the pipeline (or one pass) on a graph written in the text
// format, and print structure compactly for golden comparisons.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "codegen/parallel.h"
#include "ir/passes/pipeline.h"
#include "ir/shape_inference.h"

namespace fusor::test {

/// The trace-time constant evaluator tests use: the static backend, one thread.
ConstantEvaluator static_evaluator();

/// Parses `text`, binds `dims`, and runs the fusion pipeline with `options`.
FusedGraph fuse_text(const std::string& text, const DimBindings& dims, const FusionOptions& options = {});

/// Parses and traces `text` at `dims` (no other pass).
Graph trace_text(const std::string& text, const DimBindings& dims);

/// Runs every node of the fused graph on the static kernels (over `parallel`) and returns
/// every value (indexed by ValueId): the reference a lowered group is checked against.
std::vector<Tensor> run_all_static(const FusedGraph& f, const std::map<std::string, Tensor>& inputs,
                                   Parallel& parallel = serial_parallel());

/// The nodes of g, one per line: "out = Op(in1, in2)" (attributes omitted), then
/// "output a, b". Constants and inputs appear by name.
std::string structure(const Graph& g);

/// The groups, one per line: "<kind> <pattern>: <node names>".
std::string group_summary(const FusedGraph& f);

}  // namespace fusor::test

/// CHECK that two golden strings match; prints before/after/expected on failure.
#define FUSOR_CHECK_GOLDEN(before, after, expected)                                           \
  do {                                                                                        \
    INFO("before:\n" << (before) << "\nafter:\n" << (after) << "\nexpected:\n" << (expected)); \
    CHECK((after) == (expected));                                                             \
  } while (0)
