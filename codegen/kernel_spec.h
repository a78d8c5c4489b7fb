// KernelSpec: the one input of every backend. A fused group lowered to concrete sizes,
// strides and dtypes, with the pointwise math as a scalar expression graph. Backends never
// see the user graph. Specs print readably and hash deterministically; equal specs share
// compiled kernels across shapes and graphs. Layer: codegen.
//
// A compiled kernel is called as  kernel(void** buffers, int64_t task_begin, int64_t task_end):
// buffers[i] is the base address of KernelSpec::buffers[i]; the runtime splits
// [0, KernelSpec::tasks) over the cores. A symbolic kernel also reads
// buffers[buffers.size()]: the address of an int64_t, the run's outer extent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/ops/params.h"

namespace fusor {

/// One buffer a kernel reads or writes (a graph input, constant, or group output).
struct BufferSpec {
  std::string name;     ///< the value's name (for printing and dumps only: not hashed)
  DType dtype = DType::F32;
  int64_t elements = 0;
  bool output = false;  ///< written by the kernel
  bool constant = false;
  bool operator==(const BufferSpec& o) const {
    return dtype == o.dtype && elements == o.elements && output == o.output && constant == o.constant;
  }
};

/// How a kernel addresses one buffer over an index space: element = offset + Σ i_d * strides[d].
/// Broadcast dims have stride 0; views (reshape, transpose, slice) are only strides and an offset.
struct StridedAccess {
  int buffer = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> strides;  ///< one per dim of the index space it is used in
  int64_t offset = 0;
  bool operator==(const StridedAccess&) const = default;
};

/// Scalar operations of expression graphs, one per line of codegen/scalar_ops.def.
enum class ScalarOp : uint8_t {
#define FUSOR_SCALAR_OP(kind, name, arity) kind,
#include "codegen/scalar_ops.def"
#undef FUSOR_SCALAR_OP
};

/// "load", "add", ...
const char* scalar_op_name(ScalarOp op);

/// One node of an expression graph; args refer to earlier nodes.
struct ScalarExpr {
  ScalarOp op = ScalarOp::Const;
  DType dtype = DType::F32;   ///< result type
  int32_t args[3] = {-1, -1, -1};
  int32_t load = -1;          ///< for Load: index into the owner's `accesses`
  double value = 0;           ///< for Const; for RowStat: which statistic
  bool operator==(const ScalarExpr& o) const;
};

/// A pointwise computation over an index space: nodes in topological order, loads through
/// `accesses`, and the values stored to output accesses.
struct ExprGraph {
  std::vector<ScalarExpr> nodes;
  std::vector<StridedAccess> accesses;
  struct Store {
    int32_t node;
    int32_t access;
    bool operator==(const Store&) const = default;
  };
  std::vector<Store> stores;
  bool empty() const { return nodes.empty(); }
  bool operator==(const ExprGraph&) const = default;
};

/// Pointwise: `body` over the N-d index space `shape` (collapsed where every access allows).
struct PointwiseSpec {
  std::vector<int64_t> shape;
  ExprGraph body;
  bool operator==(const PointwiseSpec&) const = default;
};

/// Row reduction over the last `cols` elements of each row of the index space `shape`
/// (rows = the product of the leading dims). `prologue` computes the value reduced (its one
/// store-less result is its last node); the epilogue runs per element (softmax,
/// layernorm) or per row (sum, mean, max) with Acc = the element's result and RowStat the
/// row statistics, and stores.
struct RowReductionSpec {
  enum class Kind : uint8_t { Softmax, LayerNorm, Sum, Mean, Max };
  Kind kind = Kind::Softmax;
  std::vector<int64_t> shape;  ///< leading dims are rows; the last dim is the reduced row
  double epsilon = 0;          ///< LayerNorm
  ExprGraph prologue;
  ExprGraph epilogue;
  bool operator==(const RowReductionSpec&) const = default;
};

/// Contraction: batched GEMM or Conv2d, then `epilogue` over the output index space with
/// Acc = the accumulated value, applied in registers before the single store.
struct ContractionSpec {
  enum class Kind : uint8_t { Gemm, Conv2d };
  Kind kind = Kind::Gemm;
  // Gemm: out[b..., m, n] = Σ_k A[b..., m, k] · B[b..., k, n]; transposes are strides.
  std::vector<int64_t> batch;  ///< batch dims of the output
  int64_t m = 0, n = 0, k = 0;
  StridedAccess a, b;          ///< strides over [batch..., m, k] and [batch..., k, n]
  // Conv2d: NCHW input, [M, C/group, kh, kw] weight, output [N, M, oh, ow].
  Conv2dParams conv{};
  ExprGraph epilogue;          ///< index space [batch..., m, n] or [N, M, oh, ow]
  /// The products read A and B rounded to bfloat16 (round to nearest even) and accumulate
  /// in f32 (Note [bf16 contractions], codegen/precision.h); the epilogue computes in f32.
  bool bf16 = false;
  bool operator==(const ContractionSpec& o) const;
};

/// Attention: out[b..., i, :] = softmax_j(score(Q[b..., i, :] · K[b..., :, j])) · V[b..., j, :]
/// where `score` is a pointwise expression of the dot product (Acc) over [b..., tq, tk]
/// (scale, mask); then `epilogue` over [b..., tq, dv].
struct AttentionSpec {
  std::vector<int64_t> batch;
  int64_t tq = 0, tk = 0, d = 0, dv = 0;
  StridedAccess q, k, v;       ///< strides over [b..., tq, d], [b..., d, tk], [b..., tk, dv]
  ExprGraph score;
  ExprGraph epilogue;
  /// Both products read bf16 operands and accumulate in f32; the score expression, the
  /// softmax and the epilogue stay f32 (Note [bf16 contractions], codegen/precision.h).
  bool bf16 = false;
  bool operator==(const AttentionSpec&) const = default;
};

/// The kind of a KernelSpec.
enum class KernelKind : uint8_t { Pointwise, RowReduction, Contraction, Attention };
const char* kernel_kind_name(KernelKind k);

/// A kernel to build.
struct KernelSpec {
  KernelKind kind = KernelKind::Pointwise;
  std::string name;                 ///< for dumps and symbols; not hashed
  std::vector<BufferSpec> buffers;  ///< in call order
  int64_t tasks = 1;                ///< independent units the runtime may split
  /// The outer extent (pointwise shape[0], row-reduction shape[0], GEMM m) is read at run
  /// time instead of compiled in (Note [Symbolic kernels], codegen/symbolic.h): the spec
  /// holds 0 there, in `tasks` and in the elements of buffers whose size depends on it.
  bool symbolic = false;
  PointwiseSpec pointwise;
  RowReductionSpec reduction;
  ContractionSpec contraction;
  AttentionSpec attention;

  /// Deterministic hash of everything that affects the generated code (not names).
  uint64_t hash() const;
  /// Everything hash() covers, serialized (the full key a persisted kernel is stored under).
  std::string key_bytes() const;
  /// Equality of everything hash() covers (a cache hit compares full specs).
  bool same_code(const KernelSpec& o) const;
  /// A readable multi-line description (used as the comment atop generated source).
  std::string str() const;
};

}  // namespace fusor
