// Row reductions (softmax, layernorm, sum, mean, max with their prologues and epilogues):
// a warp per row for rows up to 1024 columns, a block per row beyond, the row's prologue
// values held in registers between the passes (Note [Row reduction passes]). Layer:
// codegen/cuda.
#include <algorithm>

#include "codegen/cuda/render_expr.h"
#include "codegen/cuda/render_kinds.h"

namespace fusor::cuda_src {

// Note [Row reduction passes]
// A row is owned by T threads (a warp, or a block of 256..1024); thread `lane` takes the
// columns lane, lane + T, ... Up to 32768 columns each thread keeps its (at most 32)
// prologue values in registers, so the row is read once: softmax reduces the max, then the
// sum of exp(x - max) (exact max subtraction, the exps kept), then writes e / sum;
// layernorm reduces the sum for the mean, then the sum of (x - mean)^2 from the registers
// (two-pass variance: no cancellation), then writes (x - mean) / sqrt(var + eps) through
// the epilogue. Longer rows recompute the prologue in each pass (softmax then uses the
// online max/sum in one pass). Sums are float, reduced by shuffles across the warp and
// shared memory across warps; the order differs from the CPU's, a few ulp.

namespace {

using Kind = RowReductionSpec::Kind;

struct Plan {
  int64_t rows = 1, cols = 1;
  int threads_per_row = 32;
  int rows_per_block = 4;
  int per_thread = 1;  ///< register values per thread (0: recompute the prologue each pass)
  bool guard = true;   ///< columns beyond the row need a check
};

Plan plan_for(const RowReductionSpec& r) {
  Plan p;
  for (size_t d = 0; d + 1 < r.shape.size(); ++d) p.rows *= r.shape[d];
  p.cols = r.shape.back();
  if (p.cols <= 1024) {
    p.threads_per_row = 32;
    p.rows_per_block = 4;
  } else {
    p.threads_per_row = p.cols <= 4096 ? 256 : p.cols <= 8192 ? 512 : 1024;
    p.rows_per_block = 1;
  }
  int64_t per = ceil_div(p.cols, p.threads_per_row);
  p.per_thread = per <= 32 ? int(per) : 0;
  p.guard = p.cols % p.threads_per_row != 0;
  return p;
}

// Renders the prologue at column `j` (a name) into out; returns the reduced value's name.
std::string prologue_at(const RowReductionSpec& r, const std::string& j, const std::string& prefix, std::string& out,
                        const std::string& indent) {
  ExprEnv env;
  env.prefix = prefix;
  for (size_t k = 0; k < r.prologue.accesses.size(); ++k) {
    int64_t s = r.prologue.accesses[k].strides.back();
    env.element.push_back(id("p", k) + (s == 0 ? "" : " + " + j + (s == 1 ? "" : " * " + std::to_string(s))));
  }
  return render_expr(r.prologue, env, out, indent).back();
}

// Renders the epilogue at column `j` with Acc = acc, and its stores.
void epilogue_at(const RowReductionSpec& r, const std::string& j, const std::string& acc, std::string& out,
                 const std::string& indent) {
  ExprEnv env;
  env.prefix = "w";
  env.acc = acc;
  env.stat[0] = "stat0";
  env.stat[1] = "stat1";
  for (size_t k = 0; k < r.epilogue.accesses.size(); ++k) {
    int64_t s = r.epilogue.accesses[k].strides.back();
    env.element.push_back(id("q", k) + (s == 0 || j == "0" ? "" : " + " + j + (s == 1 ? "" : " * " + std::to_string(s))));
  }
  std::vector<std::string> v = render_expr(r.epilogue, env, out, indent);
  render_stores(r.epilogue, env, v, out, indent);
}

}  // namespace

bool reduction_supported(const KernelSpec& spec, std::string* why) {
  const RowReductionSpec& r = spec.reduction;
  auto no = [&](const char* reason) {
    if (why) *why = std::string("row reduction: ") + reason;
    return false;
  };
  if (r.shape.empty()) return no("an index space of rank 0");
  if (r.shape.back() < 1) return no("rows of no columns");
  if (r.prologue.empty()) return no("an empty prologue (it must produce the reduced value)");
  if (!check_graph(spec, r.prologue, r.shape.size(), false, false, false, "row reduction prologue", why)) return false;
  return check_graph(spec, r.epilogue, r.shape.size(), true, true, true, "row reduction epilogue", why);
}

CudaSource render_reduction(const KernelSpec& spec, const std::string& symbol) {
  const RowReductionSpec& r = spec.reduction;
  const Plan p = plan_for(r);
  const int block = p.threads_per_row * p.rows_per_block;
  const int warps = p.threads_per_row / 32;
  const std::string T = std::to_string(p.threads_per_row), C = std::to_string(p.cols), W = std::to_string(warps);
  const bool per_element = r.kind == Kind::Softmax || r.kind == Kind::LayerNorm;
  auto block_sum = [&](const std::string& v) { return "fusor_block_sum<" + W + ">(" + v + ", scratch)"; };
  auto block_max = [&](const std::string& v) { return "fusor_block_max<" + W + ">(" + v + ", scratch)"; };

  std::string s;
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + symbol + "(" +
       kernel_params(spec) + ") {\n";
  s += "  __shared__ float scratch[32];\n";
  s += "  const int lane = threadIdx.x % " + T + ";\n";
  s += "  const idx_t row = (idx_t)blockIdx.x * " + std::to_string(p.rows_per_block) + " + threadIdx.x / " + T + ";\n";
  // Threads of a row leave together (a warp, or the whole block), so the reductions below
  // never wait on a thread that left.
  s += "  if (row >= " + std::to_string(p.rows) + ") return;\n";
  std::vector<int64_t> row_dims(r.shape.begin(), r.shape.end() - 1);
  s += split_index("row", row_dims, "r", "  ");
  std::vector<std::string> idx;
  for (size_t d = 0; d < row_dims.size(); ++d) idx.push_back(id("r", d));
  idx.push_back("0");
  for (size_t k = 0; k < r.prologue.accesses.size(); ++k)
    s += "  const idx_t p" + std::to_string(k) + " = " + element_expr(r.prologue.accesses[k], idx) + ";\n";
  for (size_t k = 0; k < r.epilogue.accesses.size(); ++k)
    s += "  const idx_t q" + std::to_string(k) + " = " + element_expr(r.epilogue.accesses[k], idx) + ";\n";
  s += "  (void)scratch;\n  (void)lane;\n";

  const std::string guard_open = p.guard ? "if (j < " + C + ") {" : "{";
  if (p.per_thread > 0) {
    const std::string P = std::to_string(p.per_thread);
    auto loop = [&](const std::string& body) {
      return "#pragma unroll\n  for (int t = 0; t < " + P + "; ++t) {\n    [[maybe_unused]] const idx_t j = lane + (idx_t)t * " + T +
             ";\n    " + guard_open + "\n" + body + "    }\n  }\n";
    };
    // Pass 1: the prologue into registers (and the first statistic).
    const bool want_max = r.kind == Kind::Softmax || r.kind == Kind::Max;
    s += "  float x[" + P + "];\n";
    s += std::string("  float part = ") + (want_max ? "-FUSOR_INF" : "0.f") + ";\n";
    std::string b1;
    std::string v = prologue_at(r, "j", "v", b1, "      ");
    b1 += "      x[t] = " + v + ";\n";
    b1 += want_max ? "      part = fmaxf(part, x[t]);\n" : "      part += x[t];\n";
    s += "#pragma unroll\n  for (int t = 0; t < " + P + "; ++t) x[t] = 0.f;\n";
    s += loop(b1);
    switch (r.kind) {
      case Kind::Softmax:
        s += "  const float stat0 = " + block_max("part") + ";  // the row max\n";
        s += "  part = 0.f;\n";
        s += loop("      x[t] = expf(x[t] - stat0);\n      part += x[t];\n");
        s += "  const float sum = " + block_sum("part") + ";\n";
        s += "  const float stat1 = 1.f / sum;\n";
        s += "  (void)stat0;\n  (void)stat1;\n";
        s += loop([&] {
          std::string e;
          epilogue_at(r, "j", "x[t] / sum", e, "      ");
          return e;
        }());
        break;
      case Kind::LayerNorm: {
        s += "  const float stat0 = " + block_sum("part") + " / " + float_lit(double(p.cols)) + ";  // the mean\n";
        s += "  part = 0.f;\n";
        s += loop("      const float d = x[t] - stat0;\n      part = fmaf(d, d, part);\n");
        s += "  const float var = " + block_sum("part") + " / " + float_lit(double(p.cols)) + ";\n";
        s += "  const float stat1 = 1.f / sqrtf(var + " + float_lit(r.epsilon) + ");  // 1 / stddev\n";
        s += "  (void)stat1;\n";
        s += loop([&] {
          std::string e;
          epilogue_at(r, "j", "(x[t] - stat0) * stat1", e, "      ");
          return e;
        }());
        break;
      }
      default: break;
    }
  } else {
    // Rows too long for registers: the prologue runs again in each pass.
    auto loop = [&](const std::string& body) {
      return "  for (idx_t j = lane; j < " + C + "; j += " + T + ") {\n" + body + "  }\n";
    };
    auto pro = [&](const std::string& prefix, const std::string& use) {
      std::string b;
      std::string v = prologue_at(r, "j", prefix, b, "    ");
      return b + "    const float xj = " + v + ";\n" + use;
    };
    switch (r.kind) {
      case Kind::Softmax:
        // Online max and sum: sum is rescaled whenever the max grows.
        s += "  float m = -FUSOR_INF, part = 0.f;\n";
        s += loop(pro("v", "    const float mn = fmaxf(m, xj);\n"
                           "    part = (mn == -FUSOR_INF ? 0.f : part * expf(m - mn)) + (mn == -FUSOR_INF ? 0.f : expf(xj - mn));\n"
                           "    m = mn;\n"));
        s += "  const float stat0 = " + block_max("m") + ";\n";
        s += "  const float sum = " + block_sum("(m == -FUSOR_INF ? 0.f : part * expf(m - stat0))") + ";\n";
        s += "  const float stat1 = 1.f / sum;\n";
        s += "  (void)stat1;\n";
        s += loop([&] {
          std::string e;
          epilogue_at(r, "j", "expf(xj - stat0) / sum", e, "    ");
          return pro("u", e);
        }());
        break;
      case Kind::LayerNorm:
        s += "  float part = 0.f;\n";
        s += loop(pro("v", "    part += xj;\n"));
        s += "  const float stat0 = " + block_sum("part") + " / " + float_lit(double(p.cols)) + ";\n";
        s += "  part = 0.f;\n";
        s += loop(pro("u", "    const float d = xj - stat0;\n    part = fmaf(d, d, part);\n"));
        s += "  const float var = " + block_sum("part") + " / " + float_lit(double(p.cols)) + ";\n";
        s += "  const float stat1 = 1.f / sqrtf(var + " + float_lit(r.epsilon) + ");\n";
        s += "  (void)stat1;\n";
        s += loop([&] {
          std::string e;
          epilogue_at(r, "j", "(xj - stat0) * stat1", e, "    ");
          return pro("z", e);
        }());
        break;
      case Kind::Max:
        s += "  float part = -FUSOR_INF;\n";
        s += loop(pro("v", "    part = fmaxf(part, xj);\n"));
        break;
      default:
        s += "  float part = 0.f;\n";
        s += loop(pro("v", "    part += xj;\n"));
        break;
    }
  }
  if (!per_element) {
    std::string total = r.kind == Kind::Max ? block_max("part") : block_sum("part");
    if (r.kind == Kind::Mean) total += " / " + float_lit(double(p.cols));
    s += "  const float result = " + total + ";\n";
    s += "  const float stat0 = result, stat1 = 0.f;\n  (void)stat0;\n  (void)stat1;\n";
    s += "  if (lane == 0) {\n";
    epilogue_at(r, "0", "result", s, "    ");
    s += "  }\n";
  }
  s += "}\n";

  CudaSource out;
  out.code = s;
  out.variant = std::string(p.threads_per_row == 32 ? "row reduction warp/row" : "row reduction block/row") +
                (p.per_thread > 0 ? " registers" : " recompute");
  out.launch.block[0] = uint32_t(block);
  out.launch.grid[0] = uint32_t(std::max<int64_t>(1, ceil_div(p.rows, p.rows_per_block)));
  out.alignment = 4;
  return out;
}

}  // namespace fusor::cuda_src
