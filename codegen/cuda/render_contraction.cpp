// GEMM / batched GEMM and Conv2d with their epilogues, seen alike as Z independent
// (M x K) * (K x N) products (Note [Contraction as GEMM]) and rendered as one of three
// kernels: a tensor-core kernel (mma.sync m16n8k16, f32 accumulation) when both operands
// are f16 or both bf16, a SIMT tiled kernel otherwise, and a direct kernel (one thread per
// output) for convolutions with few output channels per group (depthwise). The epilogue
// runs on the accumulators in registers before the one store. Layer: codegen/cuda.
#include <algorithm>

#include "codegen/cuda/render_expr.h"
#include "codegen/cuda/render_kinds.h"

namespace fusor::cuda_src {

// Note [Contraction as GEMM]
// GEMM: z runs over the batch dims, rows over m, columns over n. Trailing batch dims that
// B does not step through are folded into m first (A and every epilogue access must step
// through them as m's continuation): [B, T, K] x [K, N] becomes one (B*T) x N product, not
// B products of T rows. Conv2d (implicit GEMM): z is the group, rows the group's output
// channels, columns the output pixels n*oh*ow, and k runs over (input channel of the group,
// kernel row, kernel column); the A operand is the weight, B the input gathered on the fly
// with padding read as 0. Each kernel reads the operands through load_a(z, row, k) and
// load_b(z, k, col) and stores through epilogue(z, row, col, acc), rendered per spec.

namespace {

using Kind = ContractionSpec::Kind;

struct View {
  ContractionSpec c;  ///< batch dims folded into m (GEMM)
  bool conv = false;
  int64_t z = 1, m = 1, n = 1, k = 1;
  /// The GEMM's A operand (the weight for conv) and B operand (the input for conv).
  const StridedAccess& A() const { return conv ? c.b : c.a; }
  const StridedAccess& B() const { return conv ? c.a : c.b; }
  int64_t mg = 1, cg = 1;            ///< conv: output / input channels per group
  bool a_k_contiguous = false, b_n_contiguous = false;
};

// Folds trailing batch dims into m where A and the epilogue allow it and B ignores them.
void fold_batch(ContractionSpec& c) {
  while (!c.batch.empty()) {
    const size_t d = c.batch.size() - 1;
    auto continues_m = [&](const StridedAccess& a) { return a.strides[d] == a.strides[d + 1] * c.m; };
    bool ok = c.b.strides[d] == 0 && continues_m(c.a);
    for (const StridedAccess& a : c.epilogue.accesses) ok = ok && continues_m(a);
    ok = ok || c.batch[d] == 1;  // a dim of one index: its strides never matter
    if (!ok) return;
    c.m *= c.batch[d];
    c.batch.pop_back();
    c.a.strides.erase(c.a.strides.begin() + long(d));
    c.b.strides.erase(c.b.strides.begin() + long(d));
    for (StridedAccess& a : c.epilogue.accesses) a.strides.erase(a.strides.begin() + long(d));
  }
}

View view_of(const ContractionSpec& spec) {
  View v;
  v.c = spec;
  if (spec.kind == Kind::Gemm) {
    fold_batch(v.c);
    for (int64_t d : v.c.batch) v.z *= d;
    v.m = v.c.m;
    v.n = v.c.n;
    v.k = v.c.k;
    const size_t nb = v.c.batch.size();
    v.a_k_contiguous = v.c.a.strides[nb + 1] == 1;
    v.b_n_contiguous = v.c.b.strides[nb + 1] == 1;
  } else {
    const Conv2dParams& p = v.c.conv;
    v.conv = true;
    v.z = p.group;
    v.mg = p.m / p.group;
    v.cg = p.c / p.group;
    v.m = v.mg;
    v.n = p.n * p.oh * p.ow;
    v.k = v.cg * p.kh * p.kw;
    v.a_k_contiguous = v.c.b.strides[3] == 1;
    v.b_n_contiguous = v.c.a.strides[3] == 1;
  }
  return v;
}

std::string I(int64_t v) { return std::to_string(v); }

// The dims of GEMM operand A ([batch..., m, k]) or B ([batch..., k, n]).
std::vector<int64_t> operand_dims(const View& v, bool a) {
  std::vector<int64_t> d = v.c.batch;
  d.push_back(a ? v.m : v.k);
  d.push_back(a ? v.k : v.n);
  return d;
}

// Whether a GEMM operand can be read as `w` consecutive elements along dim `d`: stride 1
// there, the dim a multiple of w, and the offset and every other stride (of dims bigger
// than 1) multiples of w, so each vector starts aligned in a 16-byte aligned buffer.
bool vec_along(const StridedAccess& a, const std::vector<int64_t>& dims, size_t d, int w) {
  if (a.strides[d] != 1 || dims[d] % w != 0 || a.offset % w != 0) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (i != d && dims[i] > 1 && a.strides[i] % w != 0) return false;
  return true;
}

// The operand loaders: element values (float, or the raw 16-bit pattern when `raw`). GEMM
// operands also get a_at / b_at, their element index (for vector loads).
std::string render_loaders(const View& v, bool raw) {
  const std::string ta = raw ? "unsigned short" : "float", tb = ta;
  auto value = [&](const StridedAccess& a, const std::string& e) {
    return raw ? "p[" + e + "]" : to_float(a.dtype, "p[" + e + "]");
  };
  const std::string zero = raw ? "(unsigned short)0" : "0.f";
  std::string s;
  s += "__device__ __forceinline__ " + ta + " load_a(const " + storage_type(v.A().dtype) +
       "* __restrict__ p, idx_t z, idx_t row, idx_t k) {\n";
  if (!v.conv) {
    std::vector<std::string> idx;
    for (size_t d = 0; d < v.c.batch.size(); ++d) idx.push_back(id("bz", int64_t(d)));
    idx.push_back("row");
    idx.push_back("k");
    s += "  return " + value(v.A(), "a_at(z, row, k)") + ";\n}\n";
    std::string at = "__device__ __forceinline__ idx_t a_at(idx_t z, idx_t row, idx_t k) {\n" +
                     split_index("z", v.c.batch, "bz", "  ") + "  return " + element_expr(v.A(), idx) + ";\n}\n";
    idx[idx.size() - 2] = "k";
    idx.back() = "col";
    at += "__device__ __forceinline__ idx_t b_at(idx_t z, idx_t k, idx_t col) {\n" +
          split_index("z", v.c.batch, "bz", "  ") + "  return " + element_expr(v.B(), idx) + ";\n}\n";
    s += "__device__ __forceinline__ " + tb + " load_b(const " + storage_type(v.B().dtype) +
         "* __restrict__ p, idx_t z, idx_t k, idx_t col) {\n";
    s += "  return " + value(v.B(), "b_at(z, k, col)") + ";\n}\n";
    return at + s;
  }
  const Conv2dParams& p = v.c.conv;
  const std::string kk = "  [[maybe_unused]] const idx_t ci = k / " + I(p.kh * p.kw) + ", ki = (k / " + I(p.kw) + ") % " + I(p.kh) +
                         ", kj = k % " + I(p.kw) + ";\n";
  s += kk;
  s += "  return " + value(v.A(), element_expr(v.A(), {"(z * " + I(v.mg) + " + row)", "ci", "ki", "kj"})) + ";\n}\n";
  s += "__device__ __forceinline__ " + tb + " load_b(const " + storage_type(v.B().dtype) +
       "* __restrict__ p, idx_t z, idx_t k, idx_t col) {\n" + kk;
  s += "  [[maybe_unused]] const idx_t n = col / " + I(p.oh * p.ow) + ", oh = (col / " + I(p.ow) + ") % " + I(p.oh) + ", ow = col % " +
       I(p.ow) + ";\n";
  s += "  const idx_t h = oh * " + I(p.stride_h) + " - " + I(p.pad_t) + " + ki * " + I(p.dil_h) + ";\n";
  s += "  const idx_t w = ow * " + I(p.stride_w) + " - " + I(p.pad_l) + " + kj * " + I(p.dil_w) + ";\n";
  s += "  if (h < 0 || h >= " + I(p.h) + " || w < 0 || w >= " + I(p.w) + ") return " + zero + ";\n";
  s += "  return " + value(v.B(), element_expr(v.B(), {"n", "(z * " + I(v.cg) + " + ci)", "h", "w"})) + ";\n}\n";
  return s;
}

// epilogue(buffers..., z, row, col, acc): the epilogue graph at one output, and its stores.
std::string render_epilogue_fn(const KernelSpec& spec, const View& v) {
  std::string s = "__device__ __forceinline__ void epilogue(" + kernel_params(spec) +
                  ", idx_t z, idx_t row, idx_t col, float acc) {\n";
  std::vector<std::string> idx;
  if (!v.conv) {
    s += split_index("z", v.c.batch, "bz", "  ");
    for (size_t d = 0; d < v.c.batch.size(); ++d) idx.push_back(id("bz", int64_t(d)));
    idx.push_back("row");
    idx.push_back("col");
  } else {
    const Conv2dParams& p = v.c.conv;
    s += "  [[maybe_unused]] const idx_t n = col / " + I(p.oh * p.ow) + ", oh = (col / " + I(p.ow) + ") % " + I(p.oh) + ", ow = col % " +
         I(p.ow) + ";\n";
    idx = {"n", "(z * " + I(v.mg) + " + row)", "oh", "ow"};
  }
  for (size_t i = 0; i < spec.buffers.size(); ++i) s += "  (void)b" + I(int64_t(i)) + ";\n";
  ExprEnv env;
  for (const StridedAccess& a : v.c.epilogue.accesses) env.element.push_back(element_expr(a, idx));
  std::vector<std::string> values = render_expr(v.c.epilogue, env, s, "  ");
  render_stores(v.c.epilogue, env, values, s, "  ");
  return s + "}\n";
}

std::string buffer_args(const KernelSpec& spec) {
  std::string s;
  for (size_t i = 0; i < spec.buffers.size(); ++i) s += id("b", int64_t(i)) + ", ";
  return s;
}

std::string kernel_head(const KernelSpec& spec, const std::string& symbol, int threads) {
  return "extern \"C\" __global__ void __launch_bounds__(" + I(threads) + ") " + symbol + "(" + kernel_params(spec) + ") {\n";
}

// How a kernel keeps an operand's k-tile in shared memory.
struct TileFormat {
  bool raw16;   ///< raw 16-bit elements (the tensor-core kernel), else floats
  bool k_inner; ///< the array is [outer][k] (k contiguous), else [k][outer]
  int vec;      ///< elements per 16-byte vector load (8 halves, 4 floats)
};

const TileFormat kMmaTile{true, true, 8};
const TileFormat kSimtTile{false, false, 4};

// Whether the operand's tile loads go 16 bytes at a time, and along which dim.
struct VectorPlan {
  bool along_k = false, along_outer = false;
  bool any() const { return along_k || along_outer; }
};

VectorPlan vector_plan(const View& v, bool is_a, const TileFormat& f) {
  VectorPlan p;
  const StridedAccess& acc = is_a ? v.A() : v.B();
  if (v.conv || (!f.raw16 && acc.dtype != DType::F32)) return p;
  const std::vector<int64_t> dims = operand_dims(v, is_a);
  const size_t nb = v.c.batch.size();
  // A is [.., m, k]: k is dim nb + 1; B is [.., k, n]: k is dim nb.
  p.along_k = vec_along(acc, dims, is_a ? nb + 1 : nb, f.vec);
  p.along_outer = !p.along_k && vec_along(acc, dims, is_a ? nb : nb + 1, f.vec);
  return p;
}

bool vector_loads(const View& v, const TileFormat& f) {
  return vector_plan(v, true, f).any() || vector_plan(v, false, f).any();
}

// The global -> shared loads of one operand's k-tile (`outer` rows of A or columns of B,
// `bk` deep) into As / Bs laid out as `f` says: 16 bytes at a time along the operand's
// contiguous dim where vector_plan allows (one vector store when that dim is contiguous in
// shared memory too, else spread element by element), otherwise element by element with
// consecutive threads on the operand's contiguous dim (coalesced reads).
std::string render_operand_tile(const View& v, bool is_a, int outer, int bk, int threads, const TileFormat& f) {
  const StridedAccess& acc = is_a ? v.A() : v.B();
  const VectorPlan plan = vector_plan(v, is_a, f);
  const std::string arr = is_a ? "As" : "Bs", buf = id("b", acc.buffer);
  const std::string limit = I(is_a ? v.m : v.n), origin = is_a ? "row0" : "col0";
  auto slot = [&](const std::string& o, const std::string& kk) {
    return f.k_inner ? arr + "[" + o + "][" + kk + "]" : arr + "[" + kk + "][" + o + "]";
  };
  const std::string zero = f.raw16 ? "(unsigned short)0" : "0.f";
  std::string s;
  if (!plan.any()) {
    const bool k_fast = is_a ? v.a_k_contiguous : !v.b_n_contiguous;
    s += "    for (int e = threadIdx.x; e < " + I(outer * bk) + "; e += " + I(threads) + ") {\n";
    s += k_fast ? "      const int kk = e % " + I(bk) + ", o = e / " + I(bk) + ";\n"
                : "      const int o = e % " + I(outer) + ", kk = e / " + I(outer) + ";\n";
    s += "      const idx_t go = " + origin + " + o, gk = k0 + kk;\n";
    s += "      " + slot("o", "kk") + " = (go < " + limit + " && gk < " + I(v.k) + ") ? " +
         (is_a ? "load_a(" + buf + ", z, go, gk)" : "load_b(" + buf + ", z, gk, go)") + " : " + zero + ";\n";
    s += "    }\n";
    return s;
  }
  const int w = f.vec;
  const std::string vt = f.raw16 ? "uint4" : "float4", et = f.raw16 ? "unsigned short" : "float";
  const std::string at = is_a ? "a_at(z, go, gk)" : "b_at(z, gk, go)";
  s += "    for (int e = threadIdx.x; e < " + I(outer * bk / w) + "; e += " + I(threads) + ") {\n";
  s += plan.along_k ? "      const int o = e / " + I(bk / w) + ", kk = (e % " + I(bk / w) + ") * " + I(w) + ";\n"
                    : "      const int kk = e / " + I(outer / w) + ", o = (e % " + I(outer / w) + ") * " + I(w) + ";\n";
  s += "      const idx_t go = " + origin + " + o, gk = k0 + kk;\n";
  s += "      " + vt + " q = " + (f.raw16 ? "make_uint4(0u, 0u, 0u, 0u)" : "make_float4(0.f, 0.f, 0.f, 0.f)") + ";\n";
  s += "      if (go < " + limit + " && gk < " + I(v.k) + ") q = *reinterpret_cast<const " + vt + "*>(" + buf + " + " + at +
       ");\n";
  if (plan.along_k == f.k_inner) {
    s += "      *reinterpret_cast<" + vt + "*>(&" + slot("o", "kk") + ") = q;\n";
  } else {
    s += "      const " + et + "* h = reinterpret_cast<const " + et + "*>(&q);\n";
    s += "#pragma unroll\n      for (int i = 0; i < " + I(w) + "; ++i) " +
         (plan.along_k ? slot("o", "kk + i") : slot("o + i", "kk")) + " = h[i];\n";
  }
  s += "    }\n";
  return s;
}

struct Tile {
  int bm, bn, bk, tm, tn, threads;
};

bool large(const View& v, int tile) { return ceil_div(v.m, tile) * ceil_div(v.n, tile) * v.z >= 132 && v.m >= tile && v.n >= tile; }

// SIMT: each thread a tm x tn block of the bm x bn tile, k-tiles of bk through shared memory.
CudaSource render_simt(const KernelSpec& spec, const View& v, const std::string& symbol) {
  const Tile t = large(v, 128) ? Tile{128, 128, 8, 8, 8, 256} : Tile{64, 64, 16, 4, 4, 256};
  const int tx_count = t.bn / t.tn;
  std::string s = render_loaders(v, false) + render_epilogue_fn(spec, v) + kernel_head(spec, symbol, t.threads);
  s += "  __shared__ __align__(16) float As[" + I(t.bk) + "][" + I(t.bm + 4) + "];\n";
  s += "  __shared__ __align__(16) float Bs[" + I(t.bk) + "][" + I(t.bn + 4) + "];\n";
  s += "  const idx_t z = blockIdx.z, row0 = (idx_t)blockIdx.y * " + I(t.bm) + ", col0 = (idx_t)blockIdx.x * " + I(t.bn) + ";\n";
  s += "  const int tx = threadIdx.x % " + I(tx_count) + ", ty = threadIdx.x / " + I(tx_count) + ";\n";
  s += "  float acc[" + I(t.tm) + "][" + I(t.tn) + "];\n";
  s += "#pragma unroll\n  for (int i = 0; i < " + I(t.tm) + "; ++i)\n#pragma unroll\n    for (int j = 0; j < " + I(t.tn) +
       "; ++j) acc[i][j] = 0.f;\n";
  s += "  for (idx_t k0 = 0; k0 < " + I(v.k) + "; k0 += " + I(t.bk) + ") {\n";
  s += render_operand_tile(v, true, t.bm, t.bk, t.threads, kSimtTile);
  s += render_operand_tile(v, false, t.bn, t.bk, t.threads, kSimtTile);
  s += "    __syncthreads();\n";
  s += "#pragma unroll\n    for (int kk = 0; kk < " + I(t.bk) + "; ++kk) {\n";
  s += "      float ra[" + I(t.tm) + "], rb[" + I(t.tn) + "];\n";
  s += "#pragma unroll\n      for (int i = 0; i < " + I(t.tm) + "; ++i) ra[i] = As[kk][ty * " + I(t.tm) + " + i];\n";
  s += "#pragma unroll\n      for (int j = 0; j < " + I(t.tn) + "; ++j) rb[j] = Bs[kk][tx * " + I(t.tn) + " + j];\n";
  s += "#pragma unroll\n      for (int i = 0; i < " + I(t.tm) + "; ++i)\n#pragma unroll\n        for (int j = 0; j < " +
       I(t.tn) + "; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);\n";
  s += "    }\n    __syncthreads();\n  }\n";
  s += "#pragma unroll\n  for (int i = 0; i < " + I(t.tm) + "; ++i) {\n";
  s += "    const idx_t row = row0 + ty * " + I(t.tm) + " + i;\n";
  s += "#pragma unroll\n    for (int j = 0; j < " + I(t.tn) + "; ++j) {\n";
  s += "      const idx_t col = col0 + tx * " + I(t.tn) + " + j;\n";
  s += "      if (row < " + I(v.m) + " && col < " + I(v.n) + ") epilogue(" + buffer_args(spec) + "z, row, col, acc[i][j]);\n";
  s += "    }\n  }\n}\n";
  CudaSource out;
  out.code = s;
  const bool vec = vector_loads(v, kSimtTile);
  out.variant = "gemm simt f32 " + I(t.bm) + id("x", t.bn) + id("x", t.bk) + (vec ? " vec4" : "");
  out.launch.block[0] = uint32_t(t.threads);
  out.launch.grid[0] = uint32_t(ceil_div(v.n, t.bn));
  out.launch.grid[1] = uint32_t(ceil_div(v.m, t.bm));
  out.launch.grid[2] = uint32_t(v.z);
  out.alignment = vec ? 16 : 4;
  return out;
}

// Tensor cores: warps of a (wm x wn) grid each own a (bm/wm) x (bn/wn) piece of the tile as
// m16n8 fragments; k-steps of 16 from shared tiles stored k-contiguous for both operands,
// so every fragment register is one 32-bit shared load (layouts of the PTX ISA's
// mma.m16n8k16 .f16/.bf16: groupID = lane / 4 picks rows of A and columns of B,
// lane % 4 picks k pairs).
CudaSource render_mma(const KernelSpec& spec, const View& v, const std::string& symbol) {
  const bool big = large(v, 128);
  const int bm = big ? 128 : 64, bn = big ? 128 : 64, bk = 32;
  const int warps_m = 2, warps_n = big ? 4 : 2;
  const int threads = 32 * warps_m * warps_n;
  const int wm = bm / warps_m, wn = bn / warps_n;  // per warp
  const int fm = wm / 16, fn = wn / 8;             // fragments per warp
  const int ld = bk + 8;                           // shared row length (halves): conflict-free fragment loads
  const std::string type = v.A().dtype == DType::BF16 ? "bf16" : "f16";
  std::string s = render_loaders(v, true) + render_epilogue_fn(spec, v);
  s += "__device__ __forceinline__ void mma_16816(float c[4], const unsigned a[4], const unsigned b[2]) {\n";
  s += "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + type + "." + type +
       ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n";
  s += "               : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n";
  s += "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n}\n";
  s += kernel_head(spec, symbol, threads);
  s += "  __shared__ __align__(16) unsigned short As[" + I(bm) + "][" + I(ld) + "];\n";
  s += "  __shared__ __align__(16) unsigned short Bs[" + I(bn) + "][" + I(ld) + "];\n";
  s += "  const idx_t z = blockIdx.z, row0 = (idx_t)blockIdx.y * " + I(bm) + ", col0 = (idx_t)blockIdx.x * " + I(bn) + ";\n";
  s += "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n";
  s += "  const int wr = (warp / " + I(warps_n) + ") * " + I(wm) + ", wc = (warp % " + I(warps_n) + ") * " + I(wn) + ";\n";
  s += "  const int g = lane >> 2, q = (lane & 3) * 2;\n";
  s += "  float acc[" + I(fm) + "][" + I(fn) + "][4];\n";
  s += "#pragma unroll\n  for (int i = 0; i < " + I(fm) + "; ++i)\n#pragma unroll\n    for (int j = 0; j < " + I(fn) +
       "; ++j)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.f;\n";
  s += "  for (idx_t k0 = 0; k0 < " + I(v.k) + "; k0 += " + I(bk) + ") {\n";
  s += render_operand_tile(v, true, bm, bk, threads, kMmaTile);
  s += render_operand_tile(v, false, bn, bk, threads, kMmaTile);
  s += "    __syncthreads();\n";
  s += "#pragma unroll\n    for (int ks = 0; ks < " + I(bk) + "; ks += 16) {\n";
  s += "      unsigned fa[" + I(fm) + "][4], fb[" + I(fn) + "][2];\n";
  s += "#pragma unroll\n      for (int i = 0; i < " + I(fm) + "; ++i) {\n";
  s += "        const int r = wr + i * 16 + g;\n";
  s += "        fa[i][0] = *reinterpret_cast<const unsigned*>(&As[r][ks + q]);\n";
  s += "        fa[i][1] = *reinterpret_cast<const unsigned*>(&As[r + 8][ks + q]);\n";
  s += "        fa[i][2] = *reinterpret_cast<const unsigned*>(&As[r][ks + q + 8]);\n";
  s += "        fa[i][3] = *reinterpret_cast<const unsigned*>(&As[r + 8][ks + q + 8]);\n";
  s += "      }\n";
  s += "#pragma unroll\n      for (int j = 0; j < " + I(fn) + "; ++j) {\n";
  s += "        const int c = wc + j * 8 + g;\n";
  s += "        fb[j][0] = *reinterpret_cast<const unsigned*>(&Bs[c][ks + q]);\n";
  s += "        fb[j][1] = *reinterpret_cast<const unsigned*>(&Bs[c][ks + q + 8]);\n";
  s += "      }\n";
  s += "#pragma unroll\n      for (int i = 0; i < " + I(fm) + "; ++i)\n#pragma unroll\n        for (int j = 0; j < " + I(fn) +
       "; ++j) mma_16816(acc[i][j], fa[i], fb[j]);\n";
  s += "    }\n    __syncthreads();\n  }\n";
  // Accumulator c[r] of fragment (i, j): row g (+8 for r >= 2), column q + (r & 1).
  s += "#pragma unroll\n  for (int i = 0; i < " + I(fm) + "; ++i)\n#pragma unroll\n    for (int j = 0; j < " + I(fn) +
       "; ++j)\n#pragma unroll\n      for (int r = 0; r < 4; ++r) {\n";
  s += "        const idx_t row = row0 + wr + i * 16 + g + (r >> 1) * 8, col = col0 + wc + j * 8 + q + (r & 1);\n";
  s += "        if (row < " + I(v.m) + " && col < " + I(v.n) + ") epilogue(" + buffer_args(spec) + "z, row, col, acc[i][j][r]);\n";
  s += "      }\n}\n";
  CudaSource out;
  out.code = s;
  const bool vec = vector_loads(v, kMmaTile);
  out.variant = "gemm mma.sync " + type + " " + I(bm) + id("x", bn) + id("x", bk) + (vec ? " vec8" : "");
  out.launch.block[0] = uint32_t(threads);
  out.launch.grid[0] = uint32_t(ceil_div(v.n, bn));
  out.launch.grid[1] = uint32_t(ceil_div(v.m, bm));
  out.launch.grid[2] = uint32_t(v.z);
  out.alignment = vec ? 16 : 4;
  return out;
}

// One thread per output: for convolutions whose groups have few output channels
// (depthwise), where a GEMM tile would be mostly empty.
CudaSource render_direct(const KernelSpec& spec, const View& v, const std::string& symbol) {
  constexpr int kThreads = 256;
  const int64_t total = v.z * v.m * v.n;
  const std::string A = id("b", v.A().buffer), B = id("b", v.B().buffer);
  std::string s = render_loaders(v, false) + render_epilogue_fn(spec, v) + kernel_head(spec, symbol, kThreads);
  s += "  for (idx_t t = (idx_t)blockIdx.x * " + I(kThreads) + " + threadIdx.x; t < " + I(total) + "; t += (idx_t)gridDim.x * " +
       I(kThreads) + ") {\n";
  s += "    const idx_t col = t % " + I(v.n) + ", row = (t / " + I(v.n) + ") % " + I(v.m) + ", z = t / " + I(v.n * v.m) + ";\n";
  s += "    float acc = 0.f;\n";
  s += "    for (idx_t k = 0; k < " + I(v.k) + "; ++k) acc = fmaf(load_a(" + A + ", z, row, k), load_b(" + B +
       ", z, k, col), acc);\n";
  s += "    epilogue(" + buffer_args(spec) + "z, row, col, acc);\n  }\n}\n";
  CudaSource out;
  out.code = s;
  out.variant = "conv direct";
  out.launch.block[0] = kThreads;
  out.launch.grid[0] = uint32_t(std::clamp<int64_t>(ceil_div(total, kThreads), 1, int64_t(1) << 20));
  out.alignment = 4;
  return out;
}

bool tensor_core_operands(const View& v) {
  return (v.A().dtype == DType::F16 || v.A().dtype == DType::BF16) && v.A().dtype == v.B().dtype;
}

}  // namespace

bool contraction_supported(const KernelSpec& spec, std::string* why) {
  const ContractionSpec& c = spec.contraction;
  auto no = [&](const std::string& reason) {
    if (why) *why = "contraction: " + reason;
    return false;
  };
  size_t rank;
  if (c.kind == Kind::Gemm) {
    rank = c.batch.size() + 2;
    if (c.m < 1 || c.n < 1 || c.k < 1) return no("an empty GEMM (m, n or k < 1)");
    if (c.a.strides.size() != rank || c.b.strides.size() != rank) return no("operand strides do not match the batch rank");
  } else {
    rank = 4;
    const Conv2dParams& p = c.conv;
    if (p.group < 1 || p.c % p.group != 0 || p.m % p.group != 0) return no("channels not divisible by the group count");
    if (p.n < 1 || p.m < 1 || p.oh < 1 || p.ow < 1 || p.c < 1 || p.kh < 1 || p.kw < 1) return no("an empty convolution");
    if (c.a.strides.size() != 4 || c.b.strides.size() != 4) return no("conv operands must be 4-d");
  }
  for (const StridedAccess* a : {&c.a, &c.b})
    if (a->buffer < 0 || size_t(a->buffer) >= spec.buffers.size() || spec.buffers[size_t(a->buffer)].dtype != a->dtype)
      return no("an operand that does not match its buffer");
  View v = view_of(c);
  if (v.z > 65535 || ceil_div(v.m, 64) > 65535) return no("more than 65535 batches or row tiles");
  return check_graph(spec, c.epilogue, rank, true, false, true, "contraction epilogue", why);
}

CudaSource render_contraction(const KernelSpec& spec, const std::string& symbol) {
  View v = view_of(spec.contraction);
  if (v.conv && v.m < 16) return render_direct(spec, v, symbol);
  if (tensor_core_operands(v)) return render_mma(spec, v, symbol);
  return render_simt(spec, v, symbol);
}

}  // namespace fusor::cuda_src
