// The text format of fusor graphs: readable, diffable, and exact (print then parse gives a
// graph with the same fingerprint and prints the same text again). Layer: ir (std only).
//
//   # a comment runs to the end of the line
//   graph bert_layer
//   input x: f32[B, T, 768]                      # named dims are bound at run time
//   const wq: f32[768, 768] = randn(seed=1, std=0.02)
//   const g: f32[768] = fill(1.0)
//   const lo: f32[3] = uniform(seed=4, low=-1.0, high=1.0)
//   const shp: i64[4] = [0, 0, 12, 64]           # inline data, row-major
//   const w: f32[64, 3, 3, 3] = npy("w.npy")     # relative to the graph file's folder
//   q = MatMul(x, wq)
//   y = Conv(x, w, _) {strides=[2, 2], pads=[1, 1, 1, 1]} as conv1
//   output y, q
//
// Statements are one per line. A node line is `outs = Op(inputs) {attrs} [as name]`; `_`
// is an omitted optional input; the node is named after its first output unless `as`
// says otherwise. Attribute values: 3 (int), 1e-05 or 2.0 (float: has '.', 'e', inf or
// nan), [1, 2] (ints), [0.5, 1.0] (floats), "tanh" (string); an int where the schema wants
// a float is accepted and stored as float. Values must be defined before use.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace fusor {

/// Parses a graph. `base_dir` resolves relative npy("...") paths; `source` names the text in
/// error messages. Throws ParseError "source:line:col: what was expected / found", or the
/// verifier's InvalidGraph. The result is verified.
Graph parse_graph(std::string_view text, const std::string& base_dir = ".", const std::string& source = "<text>");

/// Reads and parses a graph file (Io when it cannot be read).
Graph load_graph(const std::string& path);

/// Prints a graph in the text format. Constants made from a recipe print as the recipe;
/// others print their data inline (exactly: floats in shortest round-trip form).
std::string print_graph(const Graph& g);

}  // namespace fusor
