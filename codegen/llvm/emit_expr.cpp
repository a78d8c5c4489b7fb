#include "codegen/llvm/emit_expr.h"

#include <array>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <utility>

#include "codegen/expr_check.h"
#include "codegen/math_approx.h"
#include "ir/error.h"

namespace fusor::llvm_ir {

// Note [Expression emission]
// An ExprGraph becomes straight-line IR at one inner index. Inner strides are constants: 1
// is a contiguous load, 0 a load hoisted out of the loop (one per access), anything else a
// strided (gathered) load. The math is branch-free (select, not br) and IEEE: no fast-math
// flags; the approximations use llvm.fmuladd, which LLVM fuses where the target has FMA,
// exactly as codegen/static/math.h uses fmadd, so both backends compute the same floats on
// an FMA host. Bool values (Note [Expression types] in codegen/expr_check.cpp) are i1:
// loaded from i8 as != 0, made by fcmp (ordered: false with NaN) and and/or/xor, selected
// on, stored zero-extended to i8.

namespace {

bool node_is_bool(const ExprGraph& g, int32_t n) { return g.nodes[size_t(n)].dtype == DType::Bool; }

// ---- The approximations of codegen/static/math.h, in the same order on the same tables ----

template <size_t N>
std::string horner(IrText& ir, const std::string& x, const std::array<float, N>& c) {
  std::string p = lit(c[0]);
  for (size_t i = 1; i < N; ++i) p = ir.fma(p, x, lit(c[i]));
  return p;
}

std::string tanh_f32(IrText& ir, const std::string& x) {
  using namespace approx;
  std::string a = ir.fabs(x);
  std::string a2 = ir.fmul(a, a);
  std::string p = horner(ir, a2, kTanhP);
  std::string small = ir.fma(ir.fmul(a, a2), p, a);
  std::string ac = ir.select(ir.fcmp("ogt", a, lit(kTanhClamp)), lit(kTanhClamp), a);
  std::string e = exp_f32_in_range(ir, ir.fmul(lit(2.0f), ac));  // (2|x| <= 2 * kTanhClamp)
  std::string large = ir.fsub(lit(1.0f), ir.fdiv(lit(2.0f), ir.fadd(e, lit(1.0f))));
  std::string r = ir.select(ir.fcmp("olt", a, lit(kTanhSmall)), small, large);
  return ir.copysign(r, x);
}

std::string sigmoid_f32(IrText& ir, const std::string& x) {
  std::string e = exp_f32(ir, ir.fneg(ir.fabs(x)));
  std::string num = ir.select(ir.fcmp("oge", x, lit(0.0f)), lit(1.0f), e);
  return ir.fdiv(num, ir.fadd(lit(1.0f), e));
}

std::string erf_small(IrText& ir, const std::string& a) {
  std::string a2 = ir.fmul(a, a);
  std::string p = horner(ir, a2, approx::kErfSmallP);
  return ir.fma(a, lit(approx::kErfSmallLead), ir.fmul(ir.fmul(a, a2), p));
}

template <size_t N>
std::string erfc_fit(IrText& ir, const std::string& a, const approx::ErfcFit<N>& f) {
  std::string ac = ir.select(ir.fcmp("ogt", a, lit(f.clamp)), lit(f.clamp), a);
  std::string t = ir.fmul(ir.fsub(ac, lit(f.center)), lit(f.scale));
  std::string g = horner(ir, t, f.g);
  return exp_f32_in_range(ir, ir.fma(ir.fneg(a), a, g));  // (a <= f.clamp)
}

std::string erf_f32(IrText& ir, const std::string& x) {
  using namespace approx;
  std::string a = ir.fabs(x);
  std::string small = erf_small(ir, a);
  std::string clamped = ir.select(ir.fcmp("ogt", a, lit(kErfcLarge.clamp)), lit(kErfcLarge.clamp), a);
  std::string large = ir.fsub(lit(1.0f), erfc_fit(ir, clamped, kErfcLarge));
  std::string r = ir.select(ir.fcmp("olt", a, lit(kErfSmall)), small, large);
  return ir.copysign(r, x);
}

std::string gelu_erf_f32(IrText& ir, const std::string& x) {
  using namespace approx;
  std::string w = ir.fabs(x);
  std::string t = ir.fdiv(lit(1.0f), ir.fma(w, lit(kGeluErfcP), lit(1.0f)));
  std::string q = horner(ir, t, kGeluErfcQ);
  std::string a = ir.fma(ir.fmul(x, x), lit(kGeluNegHalfLog2e), q);
  a = ir.select(ir.fcmp("olt", a, lit(kGeluExp2Min)), lit(kGeluExp2Min), a);
  std::string y = ir.fadd(a, lit(kGeluExp2Shift));
  std::string n = ir.fsub(y, lit(kGeluExp2Shift));
  std::string f = ir.fsub(a, n);
  std::string p = horner(ir, f, kGeluExp2P);
  std::string yi = ir.op("bitcast float " + y + " to i32");
  std::string si = ir.op("shl i32 " + yi + ", " + std::to_string(kFloatMantissaBits));
  std::string s = ir.op("bitcast i32 " + si + " to float");
  std::string phi_neg = ir.fmul(ir.fmul(t, p), s);
  std::string phi = ir.select(ir.fcmp("oge", x, lit(0.0f)), ir.fsub(lit(1.0f), phi_neg), phi_neg);
  return ir.fmul(x, phi);
}

std::string gelu_tanh_f32(IrText& ir, const std::string& x) {
  using namespace approx;
  std::string inner = ir.fma(ir.fmul(lit(kGeluTanhCubic), x), ir.fmul(x, x), x);
  std::string u = ir.fmul(lit(kGeluTanhScale), inner);
  return ir.fmul(x, sigmoid_f32(ir, ir.fmul(lit(2.0f), u)));
}

// Max/Min propagate NaN like the static kernels (numpy's maximum/minimum):
//   max: a != a ? a : (a < b || b != b) ? b : a      min: the same with b < a.
std::string max_min(IrText& ir, const std::string& a, const std::string& b, bool is_max) {
  std::string a_nan = ir.fcmp("uno", a, a);
  std::string b_nan = ir.fcmp("uno", b, b);
  std::string better = is_max ? ir.fcmp("olt", a, b) : ir.fcmp("olt", b, a);
  std::string take_b = ir.op("or i1 " + better + ", " + b_nan);
  return ir.select(a_nan, a, ir.select(take_b, b, a));
}

bool is_const(const ExprGraph& g, int32_t n, double v) {
  const ScalarExpr& e = g.nodes[size_t(n)];
  return e.op == ScalarOp::Const && e.value == v;
}

int access_align(const StridedAccess& a) { return a.dtype == DType::Bool ? 1 : 4; }

// The address of element `index` (inner dim) through pointer p.
std::string element_ptr(IrText& ir, const StridedAccess& a, const std::string& p, const std::string& index) {
  const int64_t s = a.strides.back();
  if (s == 0 || index == "0") return p;
  std::string idx = s == 1 ? index : ir.op("mul nsw i64 " + index + ", " + std::to_string(s));
  return ir.op("getelementptr inbounds " + access_type(a) + ", ptr " + p + ", i64 " + idx);
}

std::string emit_load(IrText& ir, const StridedAccess& a, const std::string& p, const std::string& index) {
  const std::string ty = access_type(a);
  std::string v = ir.op("load " + ty + ", ptr " + element_ptr(ir, a, p, index) + ", align " + std::to_string(access_align(a)));
  if (a.dtype == DType::Bool) v = ir.op("icmp ne i8 " + v + ", 0");
  return v;
}

}  // namespace

std::string lit(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, std::bit_cast<uint64_t>(double(f)));
  return buf;
}

std::string IrText::op(const std::string& rhs) {
  std::string n = "%" + prefix_ + std::to_string(next_++);
  os_ << "  " << n << " = " << rhs << "\n";
  return n;
}

std::string IrText::bin(const char* inst, const std::string& a, const std::string& b) {
  return op(std::string(inst) + " float " + a + ", " + b);
}

std::string IrText::fcmp(const char* pred, const std::string& a, const std::string& b) {
  return op(std::string("fcmp ") + pred + " float " + a + ", " + b);
}

std::string IrText::select(const std::string& c, const std::string& t, const std::string& f) {
  return op("select i1 " + c + ", float " + t + ", float " + f);
}

std::string IrText::fma(const std::string& a, const std::string& b, const std::string& c) {
  return op("call float @llvm.fmuladd.f32(float " + a + ", float " + b + ", float " + c + ")");
}

std::string IrText::call1(const char* fn, const std::string& a) { return op(std::string("call float @") + fn + "(float " + a + ")"); }

std::string IrText::call2(const char* fn, const std::string& a, const std::string& b) {
  return op(std::string("call float @") + fn + "(float " + a + ", float " + b + ")");
}

const char* const kDeclarations = R"(declare float @llvm.fmuladd.f32(float, float, float)
declare float @llvm.fabs.f32(float)
declare float @llvm.copysign.f32(float, float)
declare float @llvm.sqrt.f32(float)
declare float @llvm.pow.f32(float, float)
declare float @llvm.log.f32(float)
declare float @llvm.sin.f32(float)
declare float @llvm.cos.f32(float)
declare float @llvm.floor.f32(float)
declare float @llvm.ceil.f32(float)
declare float @llvm.roundeven.f32(float)
declare double @llvm.sqrt.f64(double)
)";

namespace {

// e^r's polynomial part p and the integer n of Cody-Waite's reduction (e^x = p * 2^n) of an
// x already within [kExpMin, kExpMax].
std::pair<std::string, std::string> exp_reduced(IrText& ir, const std::string& xc) {
  using namespace approx;
  std::string t = ir.fma(xc, lit(kLog2e), lit(kExpShift));
  std::string n = ir.fsub(t, lit(kExpShift));
  std::string ti = ir.op("bitcast float " + t + " to i32");
  std::string ni = ir.op("sub i32 " + ti + ", " + std::to_string(std::bit_cast<int32_t>(kExpShift)));
  std::string r = ir.fma(n, lit(kExpNegLn2Hi), xc);
  r = ir.fma(n, lit(kExpNegLn2Lo), r);
  std::string q = horner(ir, r, kExpQ);
  return {ir.fadd(ir.fma(q, ir.fmul(r, r), r), lit(1.0f)), ni};
}

// The float 2^k of an i32 k within the normal exponents.
std::string pow2_i32(IrText& ir, const std::string& k) {
  std::string biased = ir.op("add i32 " + k + ", " + std::to_string(approx::kFloatExponentBias));
  std::string bits = ir.op("shl i32 " + biased + ", " + std::to_string(approx::kFloatMantissaBits));
  return ir.op("bitcast i32 " + bits + " to float");
}

}  // namespace

std::string exp_f32(IrText& ir, const std::string& x) {
  using namespace approx;
  std::string xc = ir.select(ir.fcmp("ogt", x, lit(kExpMax)), lit(kExpMax), x);
  xc = ir.select(ir.fcmp("olt", xc, lit(kExpMin)), lit(kExpMin), xc);
  auto [p, ni] = exp_reduced(ir, xc);
  std::string n1 = ir.op("ashr i32 " + ni + ", 1");
  std::string n2 = ir.op("sub i32 " + ni + ", " + n1);
  return ir.fmul(ir.fmul(p, pow2_i32(ir, n1)), pow2_i32(ir, n2));
}

// Note [Exponentials in range]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// exp_f32 serves every x: it clamps x to [kExpMin, kExpMax] and applies 2^n as two factors
// 2^(n/2) * 2^(n-n/2), so that a result overflows to inf and underflows through the
// denormals with one rounding. Inside tanh (e^(2 min(|x|, 10)): n in [0, 29]) and erf's
// large branch (e^(g - a^2) for a <= 4: n in [-26, 0]) neither can happen: the clamps
// change nothing (NaN passes both ways) and, with 2^n a normal float, p * 2^n is exact
// whether applied as one factor or as two. So exp_f32_in_range drops the clamps and takes
// one factor: the same floats (codegen/static/math.h, which keeps the general form, and
// the asmjit backend's VecEmitter::exp_in_range compute them too), 7 fewer vector
// operations of the ~45 a tanh takes. tests/codegen/conformance/pointwise_test.cpp checks
// the floats bit for bit against the static kernels over a dense sweep, on every host JIT. Measured on the 2-vCPU Xeon (model 207),
// `fusor run --repeat 2000` medians, one thread, old / new binaries over three rounds: the
// mul/add/tanh/mul/add chain over 256K floats (L2) 0.153-0.188 -> 0.135-0.149 ms; over 16M
// floats (memory) 12.3-14.3 -> 12.1-12.4 ms (--repeat 40).
std::string exp_f32_in_range(IrText& ir, const std::string& x) {
  auto [p, ni] = exp_reduced(ir, x);
  return ir.fmul(p, pow2_i32(ir, ni));
}

std::vector<std::string> emit_expr(const ExprGraph& g, const ExprEnv& env, IrText& hoisted, IrText& body) {
  FUSOR_ASSERT(env.access_ptr.size() == g.accesses.size(), "one pointer per access");
  std::vector<std::string> value(g.nodes.size());
  std::vector<std::string> hoisted_load(g.accesses.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    auto arg = [&](int k) { return value[size_t(e.args[k])]; };
    std::string& r = value[i];
    switch (e.op) {
      case ScalarOp::Load: {
        const StridedAccess& a = g.accesses[size_t(e.load)];
        const std::string& p = env.access_ptr[size_t(e.load)];
        if (a.strides.back() == 0) {
          std::string& h = hoisted_load[size_t(e.load)];
          if (h.empty()) h = emit_load(hoisted, a, p, "0");
          r = h;
        } else {
          r = emit_load(body, a, p, env.index);
        }
        break;
      }
      case ScalarOp::Const: r = lit(float(e.value)); break;
      case ScalarOp::Acc: r = env.acc; break;
      case ScalarOp::RowStat: r = env.stat[e.value == 0 ? 0 : 1]; break;
      case ScalarOp::Add: r = body.fadd(arg(0), arg(1)); break;
      case ScalarOp::Sub: r = body.fsub(arg(0), arg(1)); break;
      case ScalarOp::Mul: r = body.fmul(arg(0), arg(1)); break;
      case ScalarOp::Div: r = body.fdiv(arg(0), arg(1)); break;
      case ScalarOp::Pow:
        // Pow(x, 2) is x*x, as on the static backend; otherwise libm's powf (documented
        // exception: no vectorizable form keeps pow's special cases).
        r = is_const(g, e.args[1], 2.0) ? body.fmul(arg(0), arg(0)) : body.call2("llvm.pow.f32", arg(0), arg(1));
        break;
      case ScalarOp::Max: r = max_min(body, arg(0), arg(1), true); break;
      case ScalarOp::Min: r = max_min(body, arg(0), arg(1), false); break;
      case ScalarOp::Neg: r = body.fneg(arg(0)); break;
      case ScalarOp::Relu:  // v < 0 ? 0 : v: NaN and -0 pass through, as on the static backend
        r = body.select(body.fcmp("olt", arg(0), lit(0.0f)), lit(0.0f), arg(0));
        break;
      case ScalarOp::Exp: r = exp_f32(body, arg(0)); break;
      case ScalarOp::Tanh: r = tanh_f32(body, arg(0)); break;
      case ScalarOp::Erf: r = erf_f32(body, arg(0)); break;
      case ScalarOp::Sigmoid: r = sigmoid_f32(body, arg(0)); break;
      case ScalarOp::Sqrt: r = body.call1("llvm.sqrt.f32", arg(0)); break;
      case ScalarOp::GeluErf: r = gelu_erf_f32(body, arg(0)); break;
      case ScalarOp::GeluTanh: r = gelu_tanh_f32(body, arg(0)); break;
      case ScalarOp::Cast:
        if (e.dtype == DType::Bool && !node_is_bool(g, e.args[0])) r = body.fcmp("une", arg(0), lit(0.0f));
        else if (e.dtype != DType::Bool && node_is_bool(g, e.args[0])) r = body.select(arg(0), lit(1.0f), lit(0.0f));
        else r = arg(0);  // f32 -> f32, bool -> bool
        break;
      case ScalarOp::Abs: r = body.fabs(arg(0)); break;
      case ScalarOp::Log: r = body.call1("llvm.log.f32", arg(0)); break;  // logf, as the static kernel
      case ScalarOp::Sin: r = body.call1("llvm.sin.f32", arg(0)); break;  // sinf
      case ScalarOp::Cos: r = body.call1("llvm.cos.f32", arg(0)); break;  // cosf
      case ScalarOp::Floor: r = body.call1("llvm.floor.f32", arg(0)); break;
      case ScalarOp::Ceil: r = body.call1("llvm.ceil.f32", arg(0)); break;
      case ScalarOp::Round: r = body.call1("llvm.roundeven.f32", arg(0)); break;
      case ScalarOp::Eq: r = body.fcmp("oeq", arg(0), arg(1)); break;
      case ScalarOp::Lt: r = body.fcmp("olt", arg(0), arg(1)); break;
      case ScalarOp::Le: r = body.fcmp("ole", arg(0), arg(1)); break;
      case ScalarOp::And: r = body.op("and i1 " + arg(0) + ", " + arg(1)); break;
      case ScalarOp::Or: r = body.op("or i1 " + arg(0) + ", " + arg(1)); break;
      case ScalarOp::Not: r = body.op("xor i1 " + arg(0) + ", true"); break;
      case ScalarOp::Where: {
        std::string c = node_is_bool(g, e.args[0]) ? arg(0) : body.fcmp("une", arg(0), lit(0.0f));
        r = body.select(c, arg(1), arg(2));
        break;
      }
    }
  }
  return value;
}

void emit_stores(const ExprGraph& g, const ExprEnv& env, const std::vector<std::string>& values, IrText& body) {
  for (const ExprGraph::Store& s : g.stores) {
    const StridedAccess& a = g.accesses[size_t(s.access)];
    std::string ptr = element_ptr(body, a, env.access_ptr[size_t(s.access)], env.index);
    if (a.dtype == DType::Bool)
      body.line("store i8 " + body.op("zext i1 " + values[size_t(s.node)] + " to i8") + ", ptr " + ptr + ", align 1");
    else
      body.line("store float " + values[size_t(s.node)] + ", ptr " + ptr + ", align 4");
  }
}

std::vector<std::string> load_buffer_bases(IrText& ir, size_t count) {
  std::vector<std::string> base(count);
  for (size_t b = 0; b < count; ++b) {
    std::string slot = ir.op("getelementptr inbounds ptr, ptr %buffers, i64 " + std::to_string(b));
    base[b] = ir.op("load ptr, ptr " + slot + ", align 8");
  }
  return base;
}

std::string load_symbolic_extent(IrText& ir, size_t count) {
  std::string slot = ir.op("getelementptr inbounds ptr, ptr %buffers, i64 " + std::to_string(count));
  std::string at = ir.op("load ptr, ptr " + slot + ", align 8");
  return ir.op("load i64, ptr " + at + ", align 8");
}

std::vector<std::string> split_index(IrText& ir, const std::string& flat, const std::vector<int64_t>& dims) {
  std::vector<std::string> idx(dims.size(), "0");
  std::string rest = flat;
  for (size_t d = dims.size(); d-- > 0;) {
    if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = ir.op("urem i64 " + rest + ", " + std::to_string(dims[d]));
      rest = ir.op("udiv i64 " + rest + ", " + std::to_string(dims[d]));
    }
  }
  return idx;
}

std::string access_pointer(IrText& ir, const StridedAccess& a, const std::string& base, const std::vector<std::string>& idx) {
  std::string off = std::to_string(a.offset);
  for (size_t d = 0; d < idx.size(); ++d) {
    if (a.strides[d] == 0 || idx[d] == "0") continue;
    std::string term = ir.op("mul nsw i64 " + idx[d] + ", " + std::to_string(a.strides[d]));
    off = ir.op("add nsw i64 " + off + ", " + term);
  }
  return ir.op("getelementptr inbounds " + access_type(a) + ", ptr " + base + ", i64 " + off);
}

std::string access_type(const StridedAccess& a) { return a.dtype == DType::Bool ? "i8" : "float"; }

std::string spec_comment(const KernelSpec& spec) {
  std::ostringstream os;
  std::istringstream lines(spec.str());
  for (std::string l; std::getline(lines, l);) os << "; " << l << "\n";
  return os.str();
}

}  // namespace fusor::llvm_ir
