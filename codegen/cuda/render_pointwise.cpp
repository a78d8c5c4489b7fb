// Pointwise kernels: a grid-stride loop over the index space, each thread taking one
// element, or four consecutive elements of the innermost dim (Note [Pointwise vectors]).
// Layer: codegen/cuda.
#include <algorithm>

#include "codegen/cuda/render_expr.h"
#include "codegen/cuda/render_kinds.h"

namespace fusor::cuda_src {

// Note [Pointwise vectors]
// When the innermost dim is a multiple of 4 and every access steps through it with stride
// 0 or 1, a thread computes 4 consecutive elements: f32, f16 and bf16 accesses of stride 1
// move as one 16- or 8-byte load/store (which needs their element offset at lane 0 to be a
// multiple of 4: the access's offset and outer strides are, and the buffers are 16-byte
// aligned, CudaSource::alignment); stride-0 accesses are loaded once for the 4; other
// dtypes are read element by element. Otherwise a thread computes one element.

namespace {

constexpr int kThreads = 256;

bool vector_access(const StridedAccess& a, const std::vector<int64_t>& shape) {
  if (a.strides.back() != 1) return false;
  if (a.dtype != DType::F32 && a.dtype != DType::F16 && a.dtype != DType::BF16) return false;
  if (a.offset % 4 != 0) return false;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    if (shape[d] != 1 && a.strides[d] % 4 != 0) return false;
  return true;
}

int vector_width(const KernelSpec& spec) {
  const PointwiseSpec& p = spec.pointwise;
  if (p.shape.empty() || p.shape.back() % 4 != 0) return 1;
  bool any = false;
  for (const StridedAccess& a : p.body.accesses) {
    int64_t s = a.strides.back();
    if (s != 0 && s != 1) return 1;
    any = any || vector_access(a, p.shape);
  }
  return any ? 4 : 1;
}

const char* vector_suffix(DType t) { return t == DType::F16 ? "_f16" : t == DType::BF16 ? "_bf16" : ""; }

}  // namespace

bool pointwise_supported(const KernelSpec& spec, std::string* why) {
  const PointwiseSpec& p = spec.pointwise;
  if (p.shape.empty()) {
    if (why) *why = "pointwise: an index space of rank 0";
    return false;
  }
  return check_graph(spec, p.body, p.shape.size(), false, false, true, "pointwise body", why);
}

CudaSource render_pointwise(const KernelSpec& spec, const std::string& symbol) {
  const PointwiseSpec& p = spec.pointwise;
  const ExprGraph& g = p.body;
  const int vw = vector_width(spec);
  const size_t rank = p.shape.size();
  int64_t total = 1;
  for (int64_t d : p.shape) total *= d;
  const int64_t units = total / vw;

  std::vector<int64_t> dims = p.shape;
  dims.back() /= vw;
  std::vector<std::string> idx;
  for (size_t d = 0; d < rank; ++d) idx.push_back(id("i", d));
  if (vw > 1) idx.back() = "(i" + std::to_string(rank - 1) + " * " + std::to_string(vw) + ")";

  std::string s;
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kThreads) + ") " + symbol + "(" +
       kernel_params(spec) + ") {\n";
  s += "  const idx_t units = " + std::to_string(units) + ";\n";
  s += "  for (idx_t u = (idx_t)blockIdx.x * " + std::to_string(kThreads) + " + threadIdx.x; u < units; u += (idx_t)gridDim.x * " +
       std::to_string(kThreads) + ") {\n";
  s += split_index("u", dims, "i", "    ");

  std::vector<bool> stored(g.accesses.size(), false);
  for (const ExprGraph::Store& st : g.stores) stored[size_t(st.access)] = true;
  ExprEnv env;
  env.element.resize(g.accesses.size());
  env.preloaded.resize(g.accesses.size());
  std::vector<bool> vec(g.accesses.size(), false);
  for (size_t k = 0; k < g.accesses.size(); ++k) {
    const StridedAccess& a = g.accesses[k];
    const std::string e = id("e", k);
    const std::string buf = id("b", a.buffer);
    s += "    const idx_t " + e + " = " + element_expr(a, idx) + ";\n";
    env.element[k] = e;
    if (vw == 1) continue;
    if (a.strides.back() == 0) {
      if (!stored[k]) {
        env.preloaded[k] = id("x", k);
        s += "    const float x" + std::to_string(k) + " = " + to_float(a.dtype, buf + "[" + e + "]") + ";\n";
      }
    } else if (vector_access(a, p.shape)) {
      vec[k] = true;
      const std::string arr = id("x", k);
      s += "    float " + arr + "[4];\n";
      if (!stored[k]) s += "    ld4" + std::string(vector_suffix(a.dtype)) + "(" + buf + " + " + e + ", " + arr + ");\n";
      env.preloaded[k] = arr + "[l]";
    } else {
      env.element[k] = e + " + l";
    }
  }
  std::string body;
  std::string indent = vw > 1 ? "      " : "    ";
  std::vector<std::string> values = render_expr(g, env, body, indent);
  if (vw > 1) {
    s += "#pragma unroll\n    for (int l = 0; l < 4; ++l) {\n" + body;
    for (const ExprGraph::Store& st : g.stores) {
      const StridedAccess& a = g.accesses[size_t(st.access)];
      if (vec[size_t(st.access)])
        s += indent + id("x", st.access) + "[l] = " + values[size_t(st.node)] + ";\n";
      else
        s += indent + id("b", a.buffer) + "[" + env.element[size_t(st.access)] +
             "] = " + from_float(a.dtype, values[size_t(st.node)]) + ";\n";
    }
    s += "    }\n";
    for (const ExprGraph::Store& st : g.stores) {
      const StridedAccess& a = g.accesses[size_t(st.access)];
      if (!vec[size_t(st.access)]) continue;
      s += "    st4" + std::string(vector_suffix(a.dtype)) + "(b" + std::to_string(a.buffer) + " + e" +
           std::to_string(st.access) + ", x" + std::to_string(st.access) + ");\n";
    }
  } else {
    s += body;
    render_stores(g, env, values, s, indent);
  }
  s += "  }\n}\n";

  CudaSource out;
  out.code = s;
  out.variant = vw > 1 ? "pointwise vec4" : "pointwise scalar";
  out.launch.block[0] = kThreads;
  out.launch.grid[0] = uint32_t(std::clamp<int64_t>(ceil_div(units, kThreads), 1, int64_t(1) << 20));
  return out;
}

}  // namespace fusor::cuda_src
