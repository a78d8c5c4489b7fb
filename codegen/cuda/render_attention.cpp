// Attention: softmax(score(Q K)) V in one kernel, flash-style (Note [Flash attention]):
// no tq x tk matrix is ever written to memory. Layer: codegen/cuda.
#include <algorithm>

#include "codegen/cuda/render_expr.h"
#include "codegen/cuda/render_kinds.h"

namespace fusor::cuda_src {

// Note [Flash attention]
// A block of 4 warps owns 16 query rows of one batch entry (4 rows per warp) and walks the
// keys in tiles of 32 staged in shared memory with the block's Q rows (all as float, so
// f16/bf16 operands are converted once on the way in). For each of its rows a warp computes
// the 32 dot products (lane j: key j), applies the score expression (scale, mask), and
// updates the online softmax: m' = max(m, tile max), l' = l e^(m - m') + Σ e^(s - m'), and
// the output row (lane c: columns c, c + 32, ...) o' = o e^(m - m') + Σ_j e^(s_j - m') V_j.
// At the end o / l goes through the epilogue. A row whose scores are all -inf yields NaN
// (0 / 0), as the definition does; a tile of -inf scores leaves the state unchanged.

namespace {

constexpr int kRows = 16;    // query rows per block
constexpr int kWarps = 4;
constexpr int kKeys = 32;    // keys per tile (one per lane)
constexpr int64_t kMaxShared = 227 * 1024;

std::string I(int64_t v) { return std::to_string(v); }

int64_t shared_floats(const AttentionSpec& a) {
  const int64_t dvp = ceil_div(a.dv, 32) * 32;
  return kRows * a.d + a.d * kKeys + kKeys * dvp;
}

}  // namespace

bool attention_supported(const KernelSpec& spec, std::string* why) {
  const AttentionSpec& a = spec.attention;
  auto no = [&](const std::string& reason) {
    if (why) *why = "attention: " + reason;
    return false;
  };
  const size_t rank = a.batch.size() + 2;
  if (a.tq < 1 || a.tk < 1 || a.d < 1 || a.dv < 1) return no("an empty dimension");
  for (const StridedAccess* s : {&a.q, &a.k, &a.v}) {
    if (s->strides.size() != rank) return no("operand strides do not match the batch rank");
    if (s->buffer < 0 || size_t(s->buffer) >= spec.buffers.size() || spec.buffers[size_t(s->buffer)].dtype != s->dtype)
      return no("an operand that does not match its buffer");
  }
  if (shared_floats(a) * 4 > kMaxShared) return no("head sizes d " + I(a.d) + ", dv " + I(a.dv) + " need more shared memory than a block has");
  int64_t batches = 1;
  for (int64_t b : a.batch) batches *= b;
  if (batches > 65535) return no("more than 65535 batch entries");
  if (!check_graph(spec, a.score, rank, true, false, false, "attention score", why)) return false;
  return check_graph(spec, a.epilogue, rank, true, false, true, "attention epilogue", why);
}

CudaSource render_attention(const KernelSpec& spec, const std::string& symbol) {
  const AttentionSpec& a = spec.attention;
  const int rows_per_warp = kRows / kWarps;
  const int64_t dvp = ceil_div(a.dv, 32);  // output columns per lane
  const size_t nb = a.batch.size();
  int64_t batches = 1;
  for (int64_t b : a.batch) batches *= b;
  auto bidx = [&](const std::string& i, const std::string& j) {
    std::vector<std::string> idx;
    for (size_t d = 0; d < nb; ++d) idx.push_back(id("bz", int64_t(d)));
    idx.push_back(i);
    idx.push_back(j);
    return idx;
  };
  const std::string Q = id("b", a.q.buffer), K = id("b", a.k.buffer), V = id("b", a.v.buffer);

  std::string s;
  s += "extern \"C\" __global__ void __launch_bounds__(" + I(kWarps * 32) + ") " + symbol + "(" + kernel_params(spec) + ") {\n";
  s += "  extern __shared__ float smem[];\n";
  s += "  float* Qs = smem;                       // [" + I(kRows) + "][" + I(a.d) + "]\n";
  s += "  float* Ks = Qs + " + I(kRows * a.d) + ";  // [" + I(a.d) + "][" + I(kKeys) + "]\n";
  s += "  float* Vs = Ks + " + I(a.d * kKeys) + ";  // [" + I(kKeys) + "][" + I(dvp * 32) + "]\n";
  s += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  s += "  const idx_t q0 = (idx_t)blockIdx.x * " + I(kRows) + ";\n";
  s += "  [[maybe_unused]] const idx_t z = blockIdx.y;\n";
  s += split_index("z", a.batch, "bz", "  ");
  s += "  for (int e = threadIdx.x; e < " + I(kRows * a.d) + "; e += " + I(kWarps * 32) + ") {\n";
  s += "    const int r = e / " + I(a.d) + ", c = e % " + I(a.d) + ";\n";
  s += "    Qs[e] = q0 + r < " + I(a.tq) + " ? " + to_float(a.q.dtype, Q + "[" + element_expr(a.q, bidx("(q0 + r)", "c")) + "]") +
       " : 0.f;\n  }\n";
  s += "  float m[" + I(rows_per_warp) + "], l[" + I(rows_per_warp) + "], o[" + I(rows_per_warp) + "][" + I(dvp) + "];\n";
  s += "#pragma unroll\n  for (int rr = 0; rr < " + I(rows_per_warp) + "; ++rr) {\n    m[rr] = -FUSOR_INF;\n    l[rr] = 0.f;\n";
  s += "#pragma unroll\n    for (int t = 0; t < " + I(dvp) + "; ++t) o[rr][t] = 0.f;\n  }\n";
  s += "  for (idx_t kt = 0; kt < " + I(a.tk) + "; kt += " + I(kKeys) + ") {\n";
  s += "    __syncthreads();  // the previous tile is consumed (and Qs is written)\n";
  s += "    for (int e = threadIdx.x; e < " + I(a.d * kKeys) + "; e += " + I(kWarps * 32) + ") {\n";
  s += "      const int dd = e / " + I(kKeys) + ", j = e % " + I(kKeys) + ";\n";
  s += "      Ks[e] = kt + j < " + I(a.tk) + " ? " + to_float(a.k.dtype, K + "[" + element_expr(a.k, bidx("dd", "(kt + j)")) + "]") +
       " : 0.f;\n    }\n";
  s += "    for (int e = threadIdx.x; e < " + I(kKeys * dvp * 32) + "; e += " + I(kWarps * 32) + ") {\n";
  s += "      const int j = e / " + I(dvp * 32) + ", c = e % " + I(dvp * 32) + ";\n";
  s += "      Vs[e] = kt + j < " + I(a.tk) + " && c < " + I(a.dv) + " ? " +
       to_float(a.v.dtype, V + "[" + element_expr(a.v, bidx("(kt + j)", "c")) + "]") + " : 0.f;\n    }\n";
  s += "    __syncthreads();\n";
  s += "#pragma unroll\n    for (int rr = 0; rr < " + I(rows_per_warp) + "; ++rr) {\n";
  s += "      const int r = warp * " + I(rows_per_warp) + " + rr;\n";
  s += "      const idx_t i = q0 + r, j = kt + lane;\n";
  s += "      if (i >= " + I(a.tq) + ") continue;  // warp-uniform\n";
  s += "      float dot = 0.f;\n";
  s += "      for (int dd = 0; dd < " + I(a.d) + "; ++dd) dot = fmaf(Qs[r * " + I(a.d) + " + dd], Ks[dd * " + I(kKeys) + " + lane], dot);\n";
  s += "      float sc = -FUSOR_INF;\n";
  s += "      if (j < " + I(a.tk) + ") {\n";
  if (a.score.empty()) {
    s += "        sc = dot;\n";
  } else {
    ExprEnv env;
    env.acc = "dot";
    for (const StridedAccess& acc : a.score.accesses) env.element.push_back(element_expr(acc, bidx("i", "j")));
    std::vector<std::string> v = render_expr(a.score, env, s, "        ");
    s += "        sc = " + v.back() + ";\n";
  }
  s += "      }\n";
  s += "      const float mn = fmaxf(m[rr], fusor_warp_max(sc));\n";
  s += "      const float p = mn == -FUSOR_INF ? 0.f : expf(sc - mn);\n";
  s += "      const float alpha = mn == -FUSOR_INF ? 1.f : expf(m[rr] - mn);\n";
  s += "      l[rr] = l[rr] * alpha + fusor_warp_sum(p);\n";
  s += "      m[rr] = mn;\n";
  s += "#pragma unroll\n      for (int t = 0; t < " + I(dvp) + "; ++t) o[rr][t] *= alpha;\n";
  s += "#pragma unroll 8\n      for (int jj = 0; jj < " + I(kKeys) + "; ++jj) {\n";
  s += "        const float pj = __shfl_sync(0xffffffffu, p, jj);\n";
  s += "#pragma unroll\n        for (int t = 0; t < " + I(dvp) + "; ++t) o[rr][t] = fmaf(pj, Vs[jj * " + I(dvp * 32) +
       " + t * 32 + lane], o[rr][t]);\n";
  s += "      }\n    }\n  }\n";
  s += "#pragma unroll\n  for (int rr = 0; rr < " + I(rows_per_warp) + "; ++rr) {\n";
  s += "    const idx_t i = q0 + warp * " + I(rows_per_warp) + " + rr;\n";
  s += "    if (i >= " + I(a.tq) + ") continue;\n";
  s += "#pragma unroll\n    for (int t = 0; t < " + I(dvp) + "; ++t) {\n";
  s += "      const idx_t c = t * 32 + lane;\n";
  s += "      if (c >= " + I(a.dv) + ") continue;\n";
  s += "      const float acc = o[rr][t] / l[rr];\n";
  ExprEnv env;
  for (const StridedAccess& acc : a.epilogue.accesses) env.element.push_back(element_expr(acc, bidx("i", "c")));
  std::vector<std::string> v = render_expr(a.epilogue, env, s, "      ");
  render_stores(a.epilogue, env, v, s, "      ");
  s += "    }\n  }\n}\n";

  CudaSource out;
  out.code = s;
  out.variant = "attention flash f32 " + I(kRows) + id("x", kKeys);
  out.launch.block[0] = kWarps * 32;
  out.launch.grid[0] = uint32_t(ceil_div(a.tq, kRows));
  out.launch.grid[1] = uint32_t(batches);
  out.launch.shared_bytes = uint32_t(shared_floats(a) * 4);
  out.alignment = 4;
  return out;
}

}  // namespace fusor::cuda_src
