// What the asmjit backend takes (codegen/asmjit/supports.h). Layer: codegen/asmjit.
#include "codegen/asmjit/supports.h"

#include <algorithm>
#include <cstdlib>

#include "codegen/asmjit/asmjit_backend.h"
#include "codegen/index_math.h"

namespace fusor {
namespace asmjit_emit {

namespace {

bool no(std::string* why, const std::string& reason) {
  if (why) *why = reason;
  return false;
}

}  // namespace

bool pointwise_supports(const KernelSpec& spec, std::string* why) {
  if (spec.kind != KernelKind::Pointwise) return no(why, "not a pointwise kernel");
  const PointwiseSpec& p = spec.pointwise;
  if (p.shape.empty()) return no(why, "an empty index space (rank 0)");
  for (int64_t d : p.shape)
    if (d < 0) return no(why, "a negative dim in the index space");
  if (spec.tasks < 1) return no(why, "tasks < 1");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  const ExprRules rules{.acc = false, .row_stat = false, .stores = true, .bool_stores = true};
  if (!check_expr(spec, p.body, p.shape.size(), rules, "", reads, writes, why)) return false;
  return check_buffer_use(reads, writes, why);
}

bool reduction_supports(const KernelSpec& spec, std::string* why) {
  using Kind = RowReductionSpec::Kind;
  if (spec.kind != KernelKind::RowReduction) return no(why, "not a row reduction kernel");
  const RowReductionSpec& r = spec.reduction;
  if (r.shape.empty()) return no(why, "an empty row space (rank 0)");
  for (int64_t d : r.shape)
    if (d < 0) return no(why, "a negative dim in the row space");
  if (spec.tasks < 1) return no(why, "tasks < 1");
  if (r.prologue.empty()) return no(why, "a prologue without a value");
  if (r.prologue.nodes.back().dtype != DType::F32) return no(why, "a prologue whose value is not f32");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  const size_t rank = r.shape.size();
  if (!check_expr(spec, r.prologue, rank, ExprRules{false, false, false}, "prologue: ", reads, writes, why)) return false;
  // RowStat is defined per element of softmax / layernorm only (kernel_spec.h).
  const bool per_element = r.kind == Kind::Softmax || r.kind == Kind::LayerNorm;
  if (!check_expr(spec, r.epilogue, rank, ExprRules{true, per_element, true}, "epilogue: ", reads, writes, why))
    return false;
  return check_buffer_use(reads, writes, why);
}

std::optional<int64_t> flat_stride(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  int64_t unit = 1;
  for (size_t d = sizes.size(); d-- > 0;)
    if (sizes[d] > 1) {
      unit = strides[d];
      break;
    }
  int64_t inner = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (sizes[d] > 1 && strides[d] != inner * unit) return std::nullopt;
    inner *= sizes[d];
  }
  return unit;
}

namespace {

// A Conv2d: NCHW input (gathered), [M, C/g, kh, kw] weights read in place along the flat
// (c, kh, kw), outputs over [N, M, oh, ow] walked along the flat (oh, ow).
bool conv_supports(const KernelSpec& spec, std::string* why) {
  const ContractionSpec& c = spec.contraction;
  const Conv2dParams& p = c.conv;
  for (int64_t v : {p.n, p.c, p.h, p.w, p.m, p.kh, p.kw, p.group, p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.oh, p.ow})
    if (v < 1) return no(why, "a convolution with an empty or non-positive size");
  if (p.c % p.group || p.m % p.group) return no(why, "channels not divisible by the groups");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  for (const StridedAccess* a : {&c.a, &c.b}) {
    const char* name = a == &c.a ? "input" : "weights";
    if (a->buffer < 0 || size_t(a->buffer) >= spec.buffers.size()) return no(why, std::string(name) + ": a buffer out of range");
    if (a->strides.size() != 4) return no(why, std::string(name) + ": strides that are not 4-d");
    if (a->dtype != DType::F32 || spec.buffers[size_t(a->buffer)].dtype != DType::F32)
      return no(why, std::string(name) + ": not f32");
    reads[size_t(a->buffer)]++;
  }
  const int64_t k = p.c / p.group * p.kh * p.kw;
  if (!flat_stride({p.c / p.group, p.kh, p.kw}, {c.b.strides[1], c.b.strides[2], c.b.strides[3]}))
    return no(why, "weights whose (c, kh, kw) do not flatten to one stride");
  if (k * 32 * 4 > kConvPanelBytes) return no(why, "an im2col panel of " + std::to_string(k) + " rows beyond the stack budget");
  const int64_t reach = std::abs(c.a.strides[2]) * p.h + std::abs(c.a.strides[3]) * p.w;
  if (reach >= (int64_t(1) << 28)) return no(why, "input: an image plane beyond a vector gather's reach");
  if (!check_expr(spec, c.epilogue, 4, ExprRules{true, false, true}, "epilogue: ", reads, writes, why)) return false;
  for (const StridedAccess& a : c.epilogue.accesses)
    if (!flat_stride({p.oh, p.ow}, {a.strides[2], a.strides[3]}))
      return no(why, "epilogue: an access whose (oh, ow) do not flatten to one stride");
  return check_buffer_use(reads, writes, why);
}

}  // namespace

GemmTasks gemm_tasks(const KernelSpec& spec, bool avx512) {
  const ContractionSpec& c = spec.contraction;
  GemmTasks t;
  const bool conv = c.kind == ContractionSpec::Kind::Conv2d;
  t.nb = gemm_panel_vectors(conv, avx512) * (avx512 ? 16 : 8);
  if (conv) {  // (image, group) x panels of output pixels
    t.batches = c.conv.n * c.conv.group;
    t.panels = std::max<int64_t>(1, (c.conv.oh * c.conv.ow + t.nb - 1) / t.nb);
  } else {
    t.prepack = spec.buffers[size_t(c.b.buffer)].constant;
    t.batches = numel(c.batch);
    t.m_blocks = std::max<int64_t>(1, (c.m + kGemmTaskRows - 1) / kGemmTaskRows);
    t.panels = std::max<int64_t>(1, (c.n + t.nb - 1) / t.nb);
  }
  // Enough tasks for a few cores: split the panels until 16 (a short product is one block
  // of rows, so only the columns can share it out).
  t.n_chunks = 1;
  while (t.batches * t.m_blocks * t.n_chunks < 16 && t.n_chunks < t.panels) t.n_chunks *= 2;
  t.n_chunks = std::min(t.n_chunks, t.panels);
  t.panels_per_task = (t.panels + t.n_chunks - 1) / t.n_chunks;
  t.n_chunks = (t.panels + t.panels_per_task - 1) / t.panels_per_task;
  return t;
}

bool contraction_supports(const KernelSpec& spec, std::string* why) {
  if (spec.kind != KernelKind::Contraction) return no(why, "not a contraction kernel");
  const ContractionSpec& c = spec.contraction;
  if (spec.tasks < 0) return no(why, "tasks < 0");
  if (c.kind == ContractionSpec::Kind::Conv2d) return conv_supports(spec, why);
  if (c.m < 0 || c.n < 0 || c.k < 0) return no(why, "a negative GEMM size");
  for (int64_t d : c.batch)
    if (d < 0) return no(why, "a negative batch dim");
  const size_t rank = c.batch.size() + 2;
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  for (const StridedAccess* a : {&c.a, &c.b}) {
    const char* name = a == &c.a ? "A" : "B";
    if (a->buffer < 0 || size_t(a->buffer) >= spec.buffers.size()) return no(why, std::string(name) + ": a buffer out of range");
    if (a->strides.size() != rank) return no(why, std::string(name) + ": strides that do not match [batch..., rows, cols]");
    if (a->dtype != DType::F32 || spec.buffers[size_t(a->buffer)].dtype != DType::F32)
      return no(why, std::string(name) + ": a " + std::string(dtype_name(spec.buffers[size_t(a->buffer)].dtype)) + " operand (only f32)");
    reads[size_t(a->buffer)]++;
  }
  // B's columns are gathered with 32-bit lane offsets when they are not contiguous.
  const int64_t sn = c.b.strides.back();
  if (sn != 1 && (sn > (int64_t(1) << 24) || sn < -(int64_t(1) << 24)))
    return no(why, "B: a column stride beyond a vector gather's reach");
  if (!check_expr(spec, c.epilogue, rank, ExprRules{true, false, true}, "epilogue: ", reads, writes, why)) return false;
  return check_buffer_use(reads, writes, why);
}

}  // namespace asmjit_emit

bool asmjit_supports(const KernelSpec& spec, std::string* why) {
  if (spec.symbolic) {
    if (why) *why = "symbolic kernels (a run-time outer extent) are the llvm backend's";
    return false;
  }
  // Its addressing takes 32-bit displacements from a buffer's base: a buffer past 2 GiB is
  // left to the other backends (the static one reports what it cannot allocate).
  for (const BufferSpec& b : spec.buffers)
    if (b.elements > 0 && b.elements > (int64_t(1) << 31) / int64_t(dtype_size(b.dtype))) {
      if (why) *why = "a buffer of " + std::to_string(b.elements) + " elements: past the 2 GiB a 32-bit displacement reaches";
      return false;
    }
  switch (spec.kind) {
    case KernelKind::Pointwise: return asmjit_emit::pointwise_supports(spec, why);
    case KernelKind::RowReduction: return asmjit_emit::reduction_supports(spec, why);
    case KernelKind::Contraction: return asmjit_emit::contraction_supports(spec, why);
    default:
      if (why) *why = std::string(kernel_kind_name(spec.kind)) + " kernels are not emitted yet";
      return false;
  }
}

}  // namespace fusor
