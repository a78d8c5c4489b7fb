#include "codegen/cuda/render_expr.h"

#include "codegen/expr_check.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "ir/error.h"

namespace fusor::cuda_src {

// Note [CUDA scalar math]
// Every value of an expression graph is a float in registers, whatever its node dtype:
// loads convert to float, stores convert from float, and only Cast rounds in between (as
// the spec interpreter does, which rounds only at Cast). The math is CUDA's own IEEE-mode
// library (NVRTC without -use_fast_math: -prec-div, -prec-sqrt, denormals kept):
//   + - * / sqrt   correctly rounded
//   expf, tanhf    2 ulp;  erff, erfcf 2 ulp / 4 ulp (CUDA Programming Guide, Mathematical
//                  Functions appendix)
//   sigmoid        e = expf(-|x|), (x >= 0 ? 1 : e) / (1 + e): no overflow, a few ulp
//   GELU (erf)     0.5 x erfc(-x/sqrt2): erfc keeps relative accuracy in the negative
//                  tail where 1 + erf(z) would cancel (the CPU backends use erfc there too)
//   GELU (tanh)    x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the same identity
//                  as the CPU backends
//   max / min      NaN-propagating (numpy's maximum/minimum), like the static kernels
//   pow            x*x for a constant exponent 2, else powf (2 ulp)
//   log            logf (1 ulp)
//   bool values    1.f / 0.f (comparisons are IEEE: false with NaN), as loads of bool
//                  buffers give them; a Cast to bool makes x != 0 into 1 / 0
// So results differ from the CPU backends' table approximations (codegen/math_approx.h)
// by a few ulp, and from the double interpreter by the same bounds.

const char* const kPreamble = R"(// ---- fusor device preamble: conversions, scalar math, reductions ----
#define FUSOR_INF __int_as_float(0x7f800000)
__device__ __forceinline__ float f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {  // round to nearest even, NaN kept quiet
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ float round_f16(float x) { return f16_to_f32(f32_to_f16(x)); }
__device__ __forceinline__ float round_bf16(float x) { return bf16_to_f32(f32_to_bf16(x)); }
__device__ __forceinline__ float fusor_max(float a, float b) { return a != a ? a : (a < b || b != b) ? b : a; }
__device__ __forceinline__ float fusor_min(float a, float b) { return a != a ? a : (b < a || b != b) ? b : a; }
__device__ __forceinline__ float fusor_relu(float a) { return a < 0.f ? 0.f : a; }
__device__ __forceinline__ float fusor_sigmoid(float x) {
  const float e = expf(-fabsf(x));
  return (x >= 0.f ? 1.f : e) / (1.f + e);
}
__device__ __forceinline__ float fusor_gelu_erf(float x) { return 0.5f * x * erfcf(x * -0.707106781f); }
__device__ __forceinline__ float fusor_gelu_tanh(float x) {
  const float u = 0.797884583f * fmaf(0.044715f * x, x * x, x);
  return x * fusor_sigmoid(2.f * u);
}
// Four consecutive elements (16- or 8-byte aligned) to and from floats.
__device__ __forceinline__ void ld4(const float* p, float v[4]) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
__device__ __forceinline__ void ld4_f16(const unsigned short* p, float v[4]) {
  const uint2 q = *reinterpret_cast<const uint2*>(p);
  v[0] = f16_to_f32(q.x & 0xffffu); v[1] = f16_to_f32(q.x >> 16); v[2] = f16_to_f32(q.y & 0xffffu); v[3] = f16_to_f32(q.y >> 16);
}
__device__ __forceinline__ void ld4_bf16(const unsigned short* p, float v[4]) {
  const uint2 q = *reinterpret_cast<const uint2*>(p);
  v[0] = __uint_as_float(q.x << 16); v[1] = __uint_as_float(q.x & 0xffff0000u);
  v[2] = __uint_as_float(q.y << 16); v[3] = __uint_as_float(q.y & 0xffff0000u);
}
__device__ __forceinline__ void st4(float* p, const float v[4]) { *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]); }
__device__ __forceinline__ void st4_f16(unsigned short* p, const float v[4]) {
  *reinterpret_cast<uint2*>(p) = make_uint2(f32_to_f16(v[0]) | ((unsigned)f32_to_f16(v[1]) << 16),
                                            f32_to_f16(v[2]) | ((unsigned)f32_to_f16(v[3]) << 16));
}
__device__ __forceinline__ void st4_bf16(unsigned short* p, const float v[4]) {
  *reinterpret_cast<uint2*>(p) = make_uint2(f32_to_bf16(v[0]) | ((unsigned)f32_to_bf16(v[1]) << 16),
                                            f32_to_bf16(v[2]) | ((unsigned)f32_to_bf16(v[3]) << 16));
}
// Warp and block reductions; every thread gets the result. `scratch` holds 32 floats.
__device__ __forceinline__ float fusor_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float fusor_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <int kWarps>
__device__ __forceinline__ float fusor_block_sum(float v, float* scratch) {
  v = fusor_warp_sum(v);
  if (kWarps == 1) return v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // the previous reduction's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return fusor_warp_sum(lane < kWarps ? scratch[lane] : 0.f);
}
template <int kWarps>
__device__ __forceinline__ float fusor_block_max(float v, float* scratch) {
  v = fusor_warp_max(v);
  if (kWarps == 1) return v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return fusor_warp_max(lane < kWarps ? scratch[lane] : -FUSOR_INF);
}
// ---- end of preamble ----
)";

namespace {

bool is_const(const ExprGraph& g, int32_t n, double v) {
  const ScalarExpr& e = g.nodes[size_t(n)];
  return e.op == ScalarOp::Const && e.value == v;
}

std::string cast_expr(DType to, const std::string& x) {
  switch (to) {
    case DType::F32: return x;
    case DType::F16: return "round_f16(" + x + ")";
    case DType::BF16: return "round_bf16(" + x + ")";
    case DType::I32:
    case DType::I64: return "truncf(" + x + ")";
    case DType::Bool: return "(" + x + " != 0.f ? 1.f : 0.f)";
  }
  return x;
}

}  // namespace

std::string float_lit(double v) {
  float f = float(v);
  if (std::isnan(f)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(f)) return f > 0 ? "FUSOR_INF" : "(-FUSOR_INF)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", double(f));
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

const char* storage_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16:
    case DType::BF16: return "unsigned short";
    case DType::I64: return "long long";
    case DType::I32: return "int";
    case DType::Bool: return "unsigned char";
  }
  return "float";
}

std::string to_float(DType t, const std::string& expr) {
  switch (t) {
    case DType::F32: return expr;
    case DType::F16: return "f16_to_f32(" + expr + ")";
    case DType::BF16: return "bf16_to_f32(" + expr + ")";
    case DType::I64:
    case DType::I32: return "(float)(" + expr + ")";
    case DType::Bool: return "(" + expr + " != 0 ? 1.f : 0.f)";
  }
  return expr;
}

std::string from_float(DType t, const std::string& value) {
  switch (t) {
    case DType::F32: return value;
    case DType::F16: return "f32_to_f16(" + value + ")";
    case DType::BF16: return "f32_to_bf16(" + value + ")";
    case DType::I64: return "(long long)(" + value + ")";
    case DType::I32: return "(int)(" + value + ")";
    case DType::Bool: return "(unsigned char)(" + value + " != 0.f)";
  }
  return value;
}

std::string kernel_params(const KernelSpec& spec) {
  std::string s;
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    const BufferSpec& b = spec.buffers[i];
    if (i) s += ", ";
    s += std::string(b.output ? "" : "const ") + storage_type(b.dtype) + "* __restrict__ b" + std::to_string(i);
  }
  return s;
}

bool narrow_index(const KernelSpec& spec) {
  // A margin of 4x: partial sums of an element offset stay within a few buffer lengths.
  constexpr int64_t kLimit = int64_t(std::numeric_limits<int32_t>::max()) / 4;
  for (const BufferSpec& b : spec.buffers)
    if (b.elements > kLimit) return false;
  const std::vector<int64_t>* space = nullptr;
  if (spec.kind == KernelKind::Pointwise) space = &spec.pointwise.shape;
  if (spec.kind == KernelKind::RowReduction) space = &spec.reduction.shape;
  if (space) {
    int64_t n = 1;
    for (int64_t d : *space) n *= d;
    if (n > kLimit) return false;
  }
  return true;
}

std::string split_index(const std::string& flat, const std::vector<int64_t>& dims, const std::string& prefix,
                        const std::string& indent) {
  std::string s;
  // Find the first dim bigger than 1: it takes what is left without a remainder.
  size_t first = dims.size();
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != 1) {
      first = d;
      break;
    }
  std::string rest = flat;
  for (size_t d = dims.size(); d-- > 0;) {
    std::string name = prefix + std::to_string(d);
    if (dims[d] == 1) {
      s += indent + "[[maybe_unused]] const idx_t " + name + " = 0;\n";
    } else if (d == first) {
      s += indent + "[[maybe_unused]] const idx_t " + name + " = " + rest + ";\n";
    } else {
      s += indent + "[[maybe_unused]] const idx_t " + name + " = " + rest + " % " + std::to_string(dims[d]) + ";\n";
      std::string next = prefix + id("r", d);
      s += indent + "const idx_t " + next + " = " + rest + " / " + std::to_string(dims[d]) + ";\n";
      rest = next;
    }
  }
  return s;
}

std::string element_expr(const StridedAccess& a, const std::vector<std::string>& idx) {
  FUSOR_ASSERT(idx.size() == a.strides.size(), "one index per stride");
  std::string s;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (a.strides[d] == 0 || idx[d].empty() || idx[d] == "0") continue;
    if (!s.empty()) s += " + ";
    s += a.strides[d] == 1 ? idx[d] : idx[d] + " * " + std::to_string(a.strides[d]);
  }
  if (a.offset != 0 || s.empty()) s = s.empty() ? std::to_string(a.offset) : std::to_string(a.offset) + " + " + s;
  return s;
}

std::vector<std::string> render_expr(const ExprGraph& g, const ExprEnv& env, std::string& out, const std::string& indent) {
  FUSOR_ASSERT(env.element.size() == g.accesses.size(), "one element index per access");
  std::vector<std::string> value(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    auto arg = [&](int k) { return value[size_t(e.args[k])]; };
    std::string r;
    switch (e.op) {
      case ScalarOp::Load: {
        const StridedAccess& a = g.accesses[size_t(e.load)];
        if (size_t(e.load) < env.preloaded.size() && !env.preloaded[size_t(e.load)].empty())
          r = env.preloaded[size_t(e.load)];
        else
          r = to_float(a.dtype, id("b", a.buffer) + "[" + env.element[size_t(e.load)] + "]");
        break;
      }
      case ScalarOp::Const: r = float_lit(e.value); break;
      case ScalarOp::Acc: r = env.acc; break;
      case ScalarOp::RowStat: r = env.stat[e.value == 0 ? 0 : 1]; break;
      case ScalarOp::Add: r = arg(0) + " + " + arg(1); break;
      case ScalarOp::Sub: r = arg(0) + " - " + arg(1); break;
      case ScalarOp::Mul: r = arg(0) + " * " + arg(1); break;
      case ScalarOp::Div: r = arg(0) + " / " + arg(1); break;
      case ScalarOp::Pow:
        r = is_const(g, e.args[1], 2.0) ? arg(0) + " * " + arg(0) : "powf(" + arg(0) + ", " + arg(1) + ")";
        break;
      case ScalarOp::Max: r = "fusor_max(" + arg(0) + ", " + arg(1) + ")"; break;
      case ScalarOp::Min: r = "fusor_min(" + arg(0) + ", " + arg(1) + ")"; break;
      case ScalarOp::Neg: r = "-" + arg(0); break;
      case ScalarOp::Relu: r = "fusor_relu(" + arg(0) + ")"; break;
      case ScalarOp::Exp: r = "expf(" + arg(0) + ")"; break;
      case ScalarOp::Tanh: r = "tanhf(" + arg(0) + ")"; break;
      case ScalarOp::Erf: r = "erff(" + arg(0) + ")"; break;
      case ScalarOp::Sigmoid: r = "fusor_sigmoid(" + arg(0) + ")"; break;
      case ScalarOp::Sqrt: r = "sqrtf(" + arg(0) + ")"; break;
      case ScalarOp::GeluErf: r = "fusor_gelu_erf(" + arg(0) + ")"; break;
      case ScalarOp::GeluTanh: r = "fusor_gelu_tanh(" + arg(0) + ")"; break;
      case ScalarOp::Cast: r = cast_expr(e.dtype, arg(0)); break;
      case ScalarOp::Where: r = "(" + arg(0) + " != 0.f) ? " + arg(1) + " : " + arg(2); break;
      case ScalarOp::Abs: r = "fabsf(" + arg(0) + ")"; break;
      case ScalarOp::Log: r = "logf(" + arg(0) + ")"; break;
      case ScalarOp::Sin: r = "sinf(" + arg(0) + ")"; break;
      case ScalarOp::Cos: r = "cosf(" + arg(0) + ")"; break;
      case ScalarOp::Floor: r = "floorf(" + arg(0) + ")"; break;
      case ScalarOp::Ceil: r = "ceilf(" + arg(0) + ")"; break;
      case ScalarOp::Round: r = "rintf(" + arg(0) + ")"; break;
      case ScalarOp::Eq: r = "(" + arg(0) + " == " + arg(1) + ") ? 1.f : 0.f"; break;
      case ScalarOp::Lt: r = "(" + arg(0) + " < " + arg(1) + ") ? 1.f : 0.f"; break;
      case ScalarOp::Le: r = "(" + arg(0) + " <= " + arg(1) + ") ? 1.f : 0.f"; break;
      case ScalarOp::And: r = "(" + arg(0) + " != 0.f && " + arg(1) + " != 0.f) ? 1.f : 0.f"; break;
      case ScalarOp::Or: r = "(" + arg(0) + " != 0.f || " + arg(1) + " != 0.f) ? 1.f : 0.f"; break;
      case ScalarOp::Not: r = "(" + arg(0) + " == 0.f) ? 1.f : 0.f"; break;
    }
    value[i] = env.prefix + std::to_string(i);
    out += indent + "const float " + value[i] + " = " + r + ";  // " + scalar_op_name(e.op) + "\n";
  }
  return value;
}

void render_stores(const ExprGraph& g, const ExprEnv& env, const std::vector<std::string>& values, std::string& out,
                   const std::string& indent) {
  for (const ExprGraph::Store& s : g.stores) {
    const StridedAccess& a = g.accesses[size_t(s.access)];
    out += indent + id("b", a.buffer) + "[" + env.element[size_t(s.access)] +
           "] = " + from_float(a.dtype, values[size_t(s.node)]) + ";\n";
  }
}

bool check_graph(const KernelSpec& spec, const ExprGraph& g, size_t rank, bool allow_acc, bool allow_row_stat,
                 bool allow_stores, const std::string& what, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = what + ": " + reason;
    return false;
  };
  for (const StridedAccess& a : g.accesses) {
    if (a.buffer < 0 || size_t(a.buffer) >= spec.buffers.size()) return no("an access to a buffer out of range");
    if (a.strides.size() != rank) return no("an access whose strides do not match the index space");
    if (a.dtype != spec.buffers[size_t(a.buffer)].dtype) return no("an access whose dtype differs from its buffer's");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    const std::string at = std::string(scalar_op_name(e.op)) + " node %" + std::to_string(i);
    for (int k = 0; k < scalar_op_arity(e.op); ++k)
      if (e.args[k] < 0 || size_t(e.args[k]) >= i) return no(at + ": an argument that is not an earlier node");
    if (e.op == ScalarOp::Acc && !allow_acc) return no(at + ": not allowed here");
    if (e.op == ScalarOp::RowStat && (!allow_row_stat || (e.value != 0 && e.value != 1)))
      return no(at + ": not allowed here (or a statistic other than 0 or 1)");
    if (e.op == ScalarOp::Load && (e.load < 0 || size_t(e.load) >= g.accesses.size()))
      return no(at + ": load of an access out of range");
  }
  if (!allow_stores && !g.stores.empty()) return no("stores where none are allowed");
  for (const ExprGraph::Store& s : g.stores) {
    if (s.node < 0 || size_t(s.node) >= g.nodes.size()) return no("a store of a node out of range");
    if (s.access < 0 || size_t(s.access) >= g.accesses.size()) return no("a store to an access out of range");
    if (!spec.buffers[size_t(g.accesses[size_t(s.access)].buffer)].output)
      return no("a store to a buffer that is not an output");
  }
  return true;
}

std::string spec_comment(const KernelSpec& spec) {
  std::string s = "/*\n";
  std::istringstream lines(spec.str());
  for (std::string l; std::getline(lines, l);) {
    // "*/" inside a name would end the comment early.
    for (size_t p; (p = l.find("*/")) != std::string::npos;) l.replace(p, 2, "* /");
    s += " * " + l + "\n";
  }
  return s + " */\n";
}

}  // namespace fusor::cuda_src
