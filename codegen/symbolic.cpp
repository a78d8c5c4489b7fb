#include "codegen/symbolic.h"

#include <vector>

namespace fusor {

namespace {

// Removes the positions in `drop` (sorted) from v.
void erase_positions(std::vector<int64_t>& v, const std::vector<size_t>& drop) {
  for (size_t i = drop.size(); i-- > 0;)
    if (drop[i] < v.size()) v.erase(v.begin() + std::ptrdiff_t(drop[i]));
}

void erase_positions(ExprGraph& g, const std::vector<size_t>& drop) {
  for (StridedAccess& a : g.accesses) erase_positions(a.strides, drop);
}

// The positions of `space` (from `first` to before `end`) whose extent is 1, keeping at
// least `keep` dims.
std::vector<size_t> unit_dims(const std::vector<int64_t>& space, size_t first, size_t end, size_t keep) {
  std::vector<size_t> drop;
  for (size_t d = first; d < end; ++d)
    if (space[d] == 1 && space.size() - drop.size() > keep) drop.push_back(d);
  return drop;
}

// The outer extent of a kind that has a symbolic form; nullptr for the others.
int64_t* outer_extent(KernelSpec& s) {
  switch (s.kind) {
    case KernelKind::Pointwise: return s.pointwise.shape.empty() ? nullptr : &s.pointwise.shape[0];
    case KernelKind::RowReduction: return s.reduction.shape.size() < 2 ? nullptr : &s.reduction.shape[0];
    case KernelKind::Contraction:
      return s.contraction.kind == ContractionSpec::Kind::Gemm ? &s.contraction.m : nullptr;
    case KernelKind::Attention: return &s.attention.tq;  // self-attention: tk too (symbolize checks)
  }
  return nullptr;
}

// Merges adjacent dims d, d+1 of `shape` (both below `end`) wherever every access of
// `graphs` walks them as one run (strides[d] == shape[d+1] * strides[d+1]), innermost first.
void merge_runs(std::vector<int64_t>& shape, size_t end, const std::vector<ExprGraph*>& graphs) {
  for (const ExprGraph* g : graphs)
    for (const StridedAccess& a : g->accesses)
      if (a.strides.size() != shape.size()) return;  // malformed: left as it is (symbolize then declines)
  for (size_t d = end < 1 ? 0 : end - 1; d-- > 0;) {  // the pair (d, d+1)
    bool run = true;
    for (const ExprGraph* g : graphs)
      for (const StridedAccess& a : g->accesses) run &= a.strides[d] == shape[d + 1] * a.strides[d + 1];
    if (!run) continue;
    shape[d + 1] *= shape[d];
    shape.erase(shape.begin() + std::ptrdiff_t(d));
    for (ExprGraph* g : graphs)
      for (StridedAccess& a : g->accesses) a.strides.erase(a.strides.begin() + std::ptrdiff_t(d));
  }
}

// Folds a GEMM's batch dims into its rows while A's rows and every epilogue operand run on
// across the batch and B is the same matrix for each (a [B, T, K] x [K, N] product is one
// [B*T, K] x [K, N] GEMM).
void fold_batch_into_rows(ContractionSpec& c) {
  const size_t rank = c.batch.size() + 2;
  bool well_formed = c.a.strides.size() == rank && c.b.strides.size() == rank;
  for (const StridedAccess& a : c.epilogue.accesses) well_formed &= a.strides.size() == rank;
  if (!well_formed) return;  // left as it is (symbolize then declines)
  while (!c.batch.empty()) {
    const size_t d = c.batch.size() - 1, r = c.batch.size();
    if (c.m == 1) {  // one row: its stride addresses nothing, so it may be the batch's
      c.a.strides[r] = c.a.strides[d];
      for (StridedAccess& a : c.epilogue.accesses) a.strides[r] = a.strides[d];
    }
    bool run = c.a.strides[d] == c.m * c.a.strides[r] && c.b.strides[d] == 0;
    for (const StridedAccess& a : c.epilogue.accesses) run &= a.strides[d] == c.m * a.strides[r];
    if (!run) return;
    c.m *= c.batch[d];
    c.batch.pop_back();
    c.a.strides.erase(c.a.strides.begin() + std::ptrdiff_t(d));
    c.b.strides.erase(c.b.strides.begin() + std::ptrdiff_t(d));
    for (StridedAccess& a : c.epilogue.accesses) a.strides.erase(a.strides.begin() + std::ptrdiff_t(d));
  }
}

// Every access stride of the outer dim (the one outer_extent names), for adopt_outer_strides.
std::vector<int64_t*> outer_strides(KernelSpec& s) {
  std::vector<int64_t*> out;
  auto graph = [&](ExprGraph& g, size_t d) {
    for (StridedAccess& a : g.accesses)
      if (d < a.strides.size()) out.push_back(&a.strides[d]);
  };
  switch (s.kind) {
    case KernelKind::Pointwise: graph(s.pointwise.body, 0); break;
    case KernelKind::RowReduction:
      graph(s.reduction.prologue, 0);
      graph(s.reduction.epilogue, 0);
      break;
    case KernelKind::Contraction: {
      const size_t r = s.contraction.batch.size();
      if (r < s.contraction.a.strides.size()) out.push_back(&s.contraction.a.strides[r]);
      graph(s.contraction.epilogue, r);
      break;
    }
    case KernelKind::Attention: {
      // The query and key dims (both the extent) of every operand.
      AttentionSpec& a = s.attention;
      const size_t r = a.batch.size();
      if (r + 1 < a.q.strides.size()) out.push_back(&a.q.strides[r]);
      if (r + 1 < a.k.strides.size()) out.push_back(&a.k.strides[r + 1]);
      if (r + 1 < a.v.strides.size()) out.push_back(&a.v.strides[r]);
      for (StridedAccess& x : a.score.accesses)
        if (r + 1 < x.strides.size()) {
          out.push_back(&x.strides[r]);
          out.push_back(&x.strides[r + 1]);
        }
      graph(a.epilogue, r);
      break;
    }
  }
  return out;
}

// An outer extent of 1 never multiplies its strides, so lowering may leave any value there
// (0 for inputs); x takes y's, which hold for every extent.
void adopt_outer_strides(KernelSpec& x, KernelSpec& y) {
  std::vector<int64_t*> sx = outer_strides(x), sy = outer_strides(y);
  if (sx.size() != sy.size()) return;  // unequal structure: same_code says so
  for (size_t i = 0; i < sx.size(); ++i) *sx[i] = *sy[i];
}

}  // namespace

KernelSpec normalize_dims(const KernelSpec& spec) {
  KernelSpec s = spec;
  switch (s.kind) {
    case KernelKind::Pointwise: {
      std::vector<int64_t>& shape = s.pointwise.shape;
      const std::vector<size_t> drop = unit_dims(shape, 0, shape.size(), 1);
      erase_positions(shape, drop);
      erase_positions(s.pointwise.body, drop);
      merge_runs(shape, shape.size(), {&s.pointwise.body});
      break;
    }
    case KernelKind::RowReduction: {
      std::vector<int64_t>& shape = s.reduction.shape;
      if (shape.size() < 2) break;
      const std::vector<size_t> drop = unit_dims(shape, 0, shape.size() - 1, 2);
      erase_positions(shape, drop);
      erase_positions(s.reduction.prologue, drop);
      erase_positions(s.reduction.epilogue, drop);
      merge_runs(shape, shape.size() - 1, {&s.reduction.prologue, &s.reduction.epilogue});
      break;
    }
    case KernelKind::Contraction: {
      ContractionSpec& c = s.contraction;
      if (c.kind != ContractionSpec::Kind::Gemm) break;
      const std::vector<size_t> drop = unit_dims(c.batch, 0, c.batch.size(), 0);
      erase_positions(c.batch, drop);
      erase_positions(c.a.strides, drop);
      erase_positions(c.b.strides, drop);
      erase_positions(c.epilogue, drop);
      fold_batch_into_rows(c);
      break;
    }
    case KernelKind::Attention: {
      // Batch dims of extent 1 (B = 1: a batch stride of T x 2304 that addresses nothing).
      AttentionSpec& a = s.attention;
      const std::vector<size_t> drop = unit_dims(a.batch, 0, a.batch.size(), 0);
      erase_positions(a.batch, drop);
      for (StridedAccess* x : {&a.q, &a.k, &a.v}) erase_positions(x->strides, drop);
      erase_positions(a.score, drop);
      erase_positions(a.epilogue, drop);
      break;
    }
  }
  return s;
}

std::optional<SymbolicSpec> symbolize(const KernelSpec& exact, const KernelSpec& other, std::string* why) {
  auto no = [&](const std::string& reason) -> std::optional<SymbolicSpec> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (exact.symbolic || other.symbolic) return no("a spec that is already symbolic");
  if (exact.kind != other.kind) return no("the group lowers to another kernel kind at the other size");
  KernelSpec x = normalize_dims(exact), y = normalize_dims(other);
  int64_t* ex = outer_extent(x);
  int64_t* ey = outer_extent(y);
  if (!ex || !ey) return no(std::string(kernel_kind_name(exact.kind)) + " kernels of this form have no symbolic form");
  if (*ex < 1 || *ey < 1) return no("an empty outer extent");
  if (exact.kind == KernelKind::Attention && (x.attention.tk != *ex || y.attention.tk != *ey))
    return no("attention whose keys are not its queries (only self-attention has a symbolic form)");
  if (x.buffers.size() != y.buffers.size()) return no("the group reads other buffers at the other size");
  const int64_t extent = *ex, other_extent = *ey;
  if (*ex == 1) adopt_outer_strides(x, y);
  if (*ey == 1) adopt_outer_strides(y, x);
  for (KernelSpec* s : {&x, &y}) {
    if (s->kind == KernelKind::Attention) s->attention.tk = 0;
    *outer_extent(*s) = 0;
    s->tasks = 0;
    s->symbolic = true;
  }
  for (size_t i = 0; i < x.buffers.size(); ++i)
    if (x.buffers[i].elements != y.buffers[i].elements) x.buffers[i].elements = y.buffers[i].elements = 0;
  if (!x.same_code(y))
    return no("the group's strides, constants or other sizes change with the varying dimension, not only its outer extent");
  if (extent == other_extent) return no("the kernel does not depend on the varying dimension");
  return SymbolicSpec{std::move(x), extent};
}

}  // namespace fusor
