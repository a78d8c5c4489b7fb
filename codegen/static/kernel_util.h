// Shared helpers of the static kernels: dtype dispatch, broadcast index iteration and the
// errors kernels raise. Internal to codegen/static.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "codegen/static/static_backend.h"
#include "ir/op_schema.h"

namespace fusor::static_kernels {

/// Throws Unsupported: the static kernel of this node does not take dtype t.
[[noreturn]] inline void unsupported_dtype(const Node& n, DType t) {
  node_fail(n, ErrorCode::Unsupported, "the static backend has no kernel for dtype ", dtype_name(t));
}

/// Calls f(T{}) with T the C type of a computational dtype (float for f32, int32_t, int64_t).
/// f16/bf16/bool go to `unsupported_dtype`.
template <class F>
void dispatch_numeric(const Node& n, DType t, F&& f) {
  switch (t) {
    case DType::F32: f(float{}); return;
    case DType::I32: f(int32_t{}); return;
    case DType::I64: f(int64_t{}); return;
    default: unsupported_dtype(n, t);
  }
}

/// Sets OpenBLAS's thread count for the calls that follow (Note [BLAS threads] in
/// contraction.cpp).
void use_blas_threads(int n);
/// C[m, n] = alpha * op(A) * op(B) + beta * C, row-major with the given leading dimensions
/// (OpenBLAS; sgemv for a single row or column). beta == 0 ignores what C held.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
/// Throws Unsupported naming the node when a dimension exceeds what BLAS takes (int).
void check_blas_dims(const Node& node, std::initializer_list<int64_t> dims);

/// Converts n contiguous f16 (t == F16) or bf16 (t == BF16) elements to f32 (exact).
void half_to_f32(DType t, const uint16_t* src, float* dst, int64_t n);
/// Converts n contiguous f32 elements to f16 or bf16, rounding to nearest even exactly as
/// f32_to_f16/f32_to_bf16 of ir/dtype.h do (F16C instructions when the target has them).
void f32_to_half(DType t, const float* src, uint16_t* dst, int64_t n);

/// Runs an f32 kernel on a node whose floating tensors are f16/bf16: converts those inputs
/// to f32, runs `kernel` on f32 outputs, and rounds them back (nearest even). Inputs and
/// outputs of other dtypes are passed through. For kernels where the simplicity is worth
/// the extra copies (normalizations, reductions).
void run_in_f32(StaticKernelArgs& args, void (*kernel)(StaticKernelArgs&));

/// Runs an f32 kernel on f32 tensors directly and on f16/bf16 tensors through run_in_f32
/// (one rounding of the f32 result); other dtypes are unsupported.
void run_floating(StaticKernelArgs& args, void (*kernel)(StaticKernelArgs&));

/// The output positions o in [0, count) whose input position o * stride + offset lies in
/// [0, size), as [*lo, *hi) (empty when *lo == *hi): the part of a sliding window's row
/// that reads real input, not padding (conv im2col and the pools).
void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count, int64_t* lo, int64_t* hi);

/// An N-d loop nest over an output shape with up to 4 operands, each with its own element
/// strides (0 on broadcast dims). Adjacent dims that are contiguous for every operand are
/// merged, so the innermost loop is as long as possible.
struct StridedLoop {
  std::vector<int64_t> dims;                  ///< merged output dims; innermost last
  std::vector<std::vector<int64_t>> strides;  ///< per operand, per merged dim
  int64_t inner() const { return dims.empty() ? 1 : dims.back(); }
  /// Number of rows (product of all dims but the innermost).
  int64_t rows() const;
  /// Element offset of each operand at the start of `row`.
  void row_offsets(int64_t row, int64_t* offsets) const;
};

/// Builds the loop for output shape `out` and operands of the given shapes (broadcast to
/// `out` under numpy rules). Operand 0 is usually the output itself.
StridedLoop make_strided_loop(const Shape& out, const std::vector<Shape>& operands);

/// Grain (in elements) that keeps per-chunk work above a few microseconds.
inline constexpr int64_t kElementGrain = 1 << 14;

/// Most operands a StridedLoop walked by for_each_run may have.
inline constexpr size_t kMaxOperands = 4;

/// Walks consecutive rows of a StridedLoop, keeping each operand's element offset
/// (Note [Broadcast loops] in elementwise.cpp).
class RowCursor {
 public:
  RowCursor(const StridedLoop& loop, int64_t row) : loop_(loop), idx_(loop.dims.size(), 0) {
    FUSOR_ASSERT(loop.strides.size() <= kMaxOperands);
    loop.row_offsets(row, off_);
    for (size_t i = loop.dims.size() - 1; i-- > 0;) {
      idx_[i] = row % loop.dims[i];
      row /= loop.dims[i];
    }
  }
  /// Each operand's element offset at the start of the current row.
  const int64_t* offsets() const { return off_; }
  /// Moves to the next row.
  void next() {
    const size_t ops = loop_.strides.size();
    for (size_t i = loop_.dims.size() - 1; i-- > 0;) {
      if (++idx_[i] < loop_.dims[i]) {
        for (size_t k = 0; k < ops; ++k) off_[k] += loop_.strides[k][i];
        return;
      }
      idx_[i] = 0;
      for (size_t k = 0; k < ops; ++k) off_[k] -= loop_.strides[k][i] * (loop_.dims[i] - 1);
    }
  }

 private:
  const StridedLoop& loop_;
  std::vector<int64_t> idx_;
  int64_t off_[kMaxOperands] = {};
};

/// Calls fn(offsets, col, n) for every run of n consecutive inner elements starting at
/// column col, over all rows, split over threads in kElementGrain pieces.
template <class Fn>
void for_each_run(const StridedLoop& loop, Parallel& par, const Fn& fn) {
  const int64_t inner = loop.inner(), total = loop.rows() * inner;
  par.parallel_for(total, kElementGrain, [&](int64_t b, int64_t e) {
    RowCursor cur(loop, b / inner);
    int64_t col = b % inner;
    while (b < e) {
      int64_t n = std::min(inner - col, e - b);
      fn(cur.offsets(), col, n);
      b += n;
      col = 0;
      if (b < e) cur.next();
    }
  });
}

}  // namespace fusor::static_kernels
