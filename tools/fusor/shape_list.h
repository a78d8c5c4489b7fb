// Shape lists for `fusor warmup`: the cartesian product of --dim sizes, lists and ranges,
// and histogram files of the shapes a service observed. Layer: tools (public API only).
//
// Note [Warmup shape lists]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// --dim NAME=SPEC, SPEC a comma list of SIZE or LO..HI (inclusive), e.g. T=1..64,128,256.
// Several --dim of one name merge; a size given twice is kept once. The shapes are the
// cartesian product with the first named dim outermost, so `--dim B=1..2 --dim T=1..3`
// gives B=1 T=1, B=1 T=2, ..., B=2 T=3.
//
// A histogram file holds one observed shape per line, `COUNT NAME=SIZE NAME=SIZE...`;
// `#` starts a comment, blank lines are skipped. The same shape on several lines adds its
// counts. Shapes come back most frequent first (file order among equal counts), so an
// interrupted warmup has compiled the shapes that matter most. Single-size --dim values
// given with a histogram bind the dims its lines leave out (e.g. --dim B=1 for a file that
// only records T); a line's own size wins.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/shape_inference.h"

namespace fusor::cli {

/// One shape to prepare: its dim bindings, how often it was observed (1 for --dim
/// products) and where it came from ("FILE:LINE" for a histogram line, "" otherwise).
struct WarmShape {
  DimBindings dims;
  uint64_t count = 1;
  std::string where;
};

/// The sizes of one named dim, in the order given.
using DimValues = std::pair<std::string, std::vector<int64_t>>;

/// Refuse shape lists longer than this (a typo like T=1..100000000 would otherwise fill
/// memory before anything compiles).
inline constexpr uint64_t kMaxWarmShapes = 1000000;

/// Parses --dim specs (Note [Warmup shape lists]) into dims in order of first appearance.
/// UsageError naming the spec when malformed, negative, LO > HI, or too many shapes.
std::vector<DimValues> parse_dim_specs(const std::vector<std::string>& specs);

/// The cartesian product of `dims` (the first dim outermost); empty when `dims` is.
std::vector<WarmShape> cartesian_shapes(const std::vector<DimValues>& dims);

/// Reads a histogram file (Note [Warmup shape lists]), `defaults` binding the dims a line
/// leaves out, most frequent shape first. Throws Error(Io) when unreadable,
/// Error(ParseError) naming FILE:LINE and the fix when a line is malformed,
/// Error(InvalidArgument) when the file holds no shape.
std::vector<WarmShape> read_shape_histogram(const std::string& path, const DimBindings& defaults = {});

/// "B=1 T=17": the dims of `s` named in `names` (all of them when `names` is empty).
std::string shape_label(const WarmShape& s, const std::vector<std::string>& names = {});

/// The dims whose size differs between the shapes of `shapes` (what a progress line
/// needs to tell them apart); every dim when there is only one shape.
std::vector<std::string> varying_dims(const std::vector<WarmShape>& shapes);

}  // namespace fusor::cli
