#include "codegen/llvm/emit_pointwise.h"

#include <array>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <vector>

#include "codegen/math_approx.h"
#include "ir/error.h"

namespace fusor {

// Note [Pointwise tasks]
// The index space [outer..., inner] is walked in row-major order as one flat range of
// `total` elements; task t covers the flat elements [t*chunk, (t+1)*chunk) clipped to
// total, with chunk = ceil(total / KernelSpec::tasks) rounded up to a multiple of
// kChunkAlign (so chunks start on cache lines of a contiguous output). Flat chunks split
// a 1-D space of 16M elements over cores as well as a [100000, 3] one, whichever tasks
// count lowering chose; a task that crosses rows is cut into row segments, each segment
// getting its accesses' base offsets from its row's outer indices (division by the
// compile-time dims) and running the inner loop over its columns.
//
// Note [Pointwise inner loop]
// A segment runs an internal function `<symbol>.body(ptr noalias %a0, ..., i64 %n)`, one
// pointer per access (already at the segment's first element) and alwaysinline: inlining
// turns the noalias parameters into alias scopes, so the loop vectorizer needs no runtime
// overlap checks. That is sound because a kernel's output buffers never alias its inputs
// (fusor's arena gives values that are live at once disjoint memory) and llvm_supports
// declines a spec that reads a buffer it writes. Inner strides are constants: 1 is a
// contiguous load, 0 a load hoisted out of the loop, anything else a strided (gathered)
// load. The math is branch-free (select, not br) and IEEE: no fast-math flags; the
// approximations use llvm.fmuladd, which LLVM fuses where the target has FMA, exactly as
// codegen/static/math.h uses fmadd, so both backends compute the same floats on an FMA host.

namespace {

constexpr int64_t kChunkAlign = 64;

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool node_is_bool(const ExprGraph& g, int32_t n) { return g.nodes[size_t(n)].dtype == DType::Bool; }

int arity(ScalarOp op) {
  switch (op) {
    case ScalarOp::Load:
    case ScalarOp::Const:
    case ScalarOp::Acc:
    case ScalarOp::RowStat: return 0;
    case ScalarOp::Add:
    case ScalarOp::Sub:
    case ScalarOp::Mul:
    case ScalarOp::Div:
    case ScalarOp::Pow:
    case ScalarOp::Max:
    case ScalarOp::Min: return 2;
    case ScalarOp::Where: return 3;
    default: return 1;
  }
}

bool check(const KernelSpec& spec, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (spec.kind != KernelKind::Pointwise) return no(std::string(kernel_kind_name(spec.kind)) + " kernels are not emitted yet");
  const PointwiseSpec& p = spec.pointwise;
  const ExprGraph& g = p.body;
  if (p.shape.empty()) return no("an empty index space (rank 0)");
  for (int64_t d : p.shape)
    if (d < 0) return no("a negative dim in the index space");
  if (spec.tasks < 1) return no("tasks < 1");
  std::vector<int> reads(spec.buffers.size(), 0), writes(spec.buffers.size(), 0);
  for (const StridedAccess& a : g.accesses) {
    if (a.buffer < 0 || size_t(a.buffer) >= spec.buffers.size()) return no("an access to a buffer out of range");
    if (a.strides.size() != p.shape.size()) return no("an access whose strides do not match the index space");
    if (a.dtype != spec.buffers[size_t(a.buffer)].dtype) return no("an access whose dtype differs from its buffer's");
    if (a.dtype != DType::F32 && a.dtype != DType::Bool)
      return no("a " + std::string(dtype_name(a.dtype)) + " access (only f32, and bool Where conditions)");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    const std::string at = std::string(scalar_op_name(e.op)) + " node %" + std::to_string(i);
    for (int k = 0; k < arity(e.op); ++k)
      if (e.args[k] < 0 || size_t(e.args[k]) >= i) return no(at + ": an argument that is not an earlier node");
    switch (e.op) {
      case ScalarOp::Acc:
      case ScalarOp::RowStat: return no(at + ": not part of a pointwise body");
      case ScalarOp::Load: {
        if (e.load < 0 || size_t(e.load) >= g.accesses.size()) return no(at + ": load of an access out of range");
        const StridedAccess& a = g.accesses[size_t(e.load)];
        if (e.dtype != a.dtype) return no(at + ": loads a different dtype than its access");
        reads[size_t(a.buffer)]++;
        break;
      }
      case ScalarOp::Cast:
        if (node_is_bool(g, e.args[0])) return no(at + ": a cast from bool");
        break;
      default: break;
    }
    if (e.dtype == DType::Bool && e.op != ScalarOp::Load) return no(at + ": a bool result");
    if (e.dtype != DType::F32 && e.dtype != DType::Bool)
      return no(at + ": a " + std::string(dtype_name(e.dtype)) + " result (only f32)");
    // Bool values are only Where conditions (there is no comparison op to make others).
    for (int k = 0; k < arity(e.op); ++k)
      if (node_is_bool(g, e.args[k]) && !(e.op == ScalarOp::Where && k == 0))
        return no(at + ": uses a bool value other than as a Where condition");
  }
  for (const ExprGraph::Store& s : g.stores) {
    if (s.node < 0 || size_t(s.node) >= g.nodes.size()) return no("a store of a node out of range");
    if (s.access < 0 || size_t(s.access) >= g.accesses.size()) return no("a store to an access out of range");
    const StridedAccess& a = g.accesses[size_t(s.access)];
    if (a.dtype != DType::F32 || node_is_bool(g, s.node)) return no("a store that is not f32");
    if (!spec.buffers[size_t(a.buffer)].output) return no("a store to a buffer that is not an output");
    writes[size_t(a.buffer)]++;
  }
  for (size_t b = 0; b < spec.buffers.size(); ++b) {
    // Note [Pointwise inner loop]: the noalias parameters need this.
    if (writes[b] && reads[b]) return no("buffer " + std::to_string(b) + " is both read and written");
    if (writes[b] > 1) return no("buffer " + std::to_string(b) + " is written through two accesses");
  }
  return true;
}

// A float as an LLVM IR literal: the hex of the double it converts to exactly.
std::string lit(float f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIX64, std::bit_cast<uint64_t>(double(f)));
  return buf;
}

// Straight-line IR text with fresh SSA names; values are strings (a name or a literal).
class Ir {
 public:
  explicit Ir(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string op(const std::string& rhs) {
    std::string n = "%" + prefix_ + std::to_string(next_++);
    os_ << "  " << n << " = " << rhs << "\n";
    return n;
  }
  void line(const std::string& s) { os_ << "  " << s << "\n"; }
  void label(const std::string& s) { os_ << s << ":\n"; }
  std::string text() const { return os_.str(); }

  std::string bin(const char* inst, const std::string& a, const std::string& b) {
    return op(std::string(inst) + " float " + a + ", " + b);
  }
  std::string fadd(const std::string& a, const std::string& b) { return bin("fadd", a, b); }
  std::string fsub(const std::string& a, const std::string& b) { return bin("fsub", a, b); }
  std::string fmul(const std::string& a, const std::string& b) { return bin("fmul", a, b); }
  std::string fdiv(const std::string& a, const std::string& b) { return bin("fdiv", a, b); }
  std::string fneg(const std::string& a) { return op("fneg float " + a); }
  std::string fcmp(const char* pred, const std::string& a, const std::string& b) {
    return op(std::string("fcmp ") + pred + " float " + a + ", " + b);
  }
  std::string select(const std::string& c, const std::string& t, const std::string& f) {
    return op("select i1 " + c + ", float " + t + ", float " + f);
  }
  // a*b + c, fused where the target has FMA (math.h's fmadd).
  std::string fma(const std::string& a, const std::string& b, const std::string& c) {
    return op("call float @llvm.fmuladd.f32(float " + a + ", float " + b + ", float " + c + ")");
  }
  std::string call1(const char* fn, const std::string& a) { return op(std::string("call float @") + fn + "(float " + a + ")"); }
  std::string call2(const char* fn, const std::string& a, const std::string& b) {
    return op(std::string("call float @") + fn + "(float " + a + ", float " + b + ")");
  }
  std::string fabs(const std::string& a) { return call1("llvm.fabs.f32", a); }
  std::string copysign(const std::string& mag, const std::string& sign) { return call2("llvm.copysign.f32", mag, sign); }

 private:
  std::string prefix_;
  int next_ = 0;
  std::ostringstream os_;
};

constexpr const char* kDeclarations = R"(declare float @llvm.fmuladd.f32(float, float, float)
declare float @llvm.fabs.f32(float)
declare float @llvm.copysign.f32(float, float)
declare float @llvm.sqrt.f32(float)
declare float @llvm.pow.f32(float, float)
)";

// ---- The approximations of codegen/static/math.h, in the same order on the same tables ----

template <size_t N>
std::string horner(Ir& ir, const std::string& x, const std::array<float, N>& c) {
  std::string p = lit(c[0]);
  for (size_t i = 1; i < N; ++i) p = ir.fma(p, x, lit(c[i]));
  return p;
}

std::string exp_f32(Ir& ir, const std::string& x) {
  using namespace approx;
  std::string xc = ir.select(ir.fcmp("ogt", x, lit(kExpMax)), lit(kExpMax), x);
  xc = ir.select(ir.fcmp("olt", xc, lit(kExpMin)), lit(kExpMin), xc);
  std::string t = ir.fma(xc, lit(kLog2e), lit(kExpShift));
  std::string n = ir.fsub(t, lit(kExpShift));
  std::string ti = ir.op("bitcast float " + t + " to i32");
  std::string ni = ir.op("sub i32 " + ti + ", " + std::to_string(std::bit_cast<int32_t>(kExpShift)));
  std::string r = ir.fma(n, lit(kExpNegLn2Hi), xc);
  r = ir.fma(n, lit(kExpNegLn2Lo), r);
  std::string q = horner(ir, r, kExpQ);
  std::string p = ir.fadd(ir.fma(q, ir.fmul(r, r), r), lit(1.0f));
  std::string n1 = ir.op("ashr i32 " + ni + ", 1");
  std::string n2 = ir.op("sub i32 " + ni + ", " + n1);
  auto pow2 = [&](const std::string& k) {
    std::string biased = ir.op("add i32 " + k + ", " + std::to_string(kFloatExponentBias));
    std::string bits = ir.op("shl i32 " + biased + ", " + std::to_string(kFloatMantissaBits));
    return ir.op("bitcast i32 " + bits + " to float");
  };
  return ir.fmul(ir.fmul(p, pow2(n1)), pow2(n2));
}

std::string tanh_f32(Ir& ir, const std::string& x) {
  using namespace approx;
  std::string a = ir.fabs(x);
  std::string a2 = ir.fmul(a, a);
  std::string p = horner(ir, a2, kTanhP);
  std::string small = ir.fma(ir.fmul(a, a2), p, a);
  std::string ac = ir.select(ir.fcmp("ogt", a, lit(kTanhClamp)), lit(kTanhClamp), a);
  std::string e = exp_f32(ir, ir.fmul(lit(2.0f), ac));
  std::string large = ir.fsub(lit(1.0f), ir.fdiv(lit(2.0f), ir.fadd(e, lit(1.0f))));
  std::string r = ir.select(ir.fcmp("olt", a, lit(kTanhSmall)), small, large);
  return ir.copysign(r, x);
}

std::string sigmoid_f32(Ir& ir, const std::string& x) {
  std::string e = exp_f32(ir, ir.fneg(ir.fabs(x)));
  std::string num = ir.select(ir.fcmp("oge", x, lit(0.0f)), lit(1.0f), e);
  return ir.fdiv(num, ir.fadd(lit(1.0f), e));
}

std::string erf_small(Ir& ir, const std::string& a) {
  std::string a2 = ir.fmul(a, a);
  std::string p = horner(ir, a2, approx::kErfSmallP);
  return ir.fma(a, lit(approx::kErfSmallLead), ir.fmul(ir.fmul(a, a2), p));
}

template <size_t N>
std::string erfc_fit(Ir& ir, const std::string& a, const approx::ErfcFit<N>& f) {
  std::string ac = ir.select(ir.fcmp("ogt", a, lit(f.clamp)), lit(f.clamp), a);
  std::string t = ir.fmul(ir.fsub(ac, lit(f.center)), lit(f.scale));
  std::string g = horner(ir, t, f.g);
  return exp_f32(ir, ir.fma(ir.fneg(a), a, g));
}

std::string erf_f32(Ir& ir, const std::string& x) {
  using namespace approx;
  std::string a = ir.fabs(x);
  std::string small = erf_small(ir, a);
  std::string clamped = ir.select(ir.fcmp("ogt", a, lit(kErfcLarge.clamp)), lit(kErfcLarge.clamp), a);
  std::string large = ir.fsub(lit(1.0f), erfc_fit(ir, clamped, kErfcLarge));
  std::string r = ir.select(ir.fcmp("olt", a, lit(kErfSmall)), small, large);
  return ir.copysign(r, x);
}

std::string gelu_erf_f32(Ir& ir, const std::string& x) {
  using namespace approx;
  std::string z = ir.fmul(x, lit(kGeluInvSqrt2));
  std::string a = ir.fabs(z);
  std::string es = ir.copysign(erf_small(ir, a), z);
  std::string ec = erfc_fit(ir, a, kErfcWide);
  std::string tail = ir.select(ir.fcmp("oge", x, lit(0.0f)), ir.fsub(lit(2.0f), ec), ec);
  std::string one_plus_erf = ir.select(ir.fcmp("olt", a, lit(kErfSmall)), ir.fadd(lit(1.0f), es), tail);
  return ir.fmul(ir.fmul(lit(0.5f), x), one_plus_erf);
}

std::string gelu_tanh_f32(Ir& ir, const std::string& x) {
  using namespace approx;
  std::string inner = ir.fma(ir.fmul(lit(kGeluTanhCubic), x), ir.fmul(x, x), x);
  std::string u = ir.fmul(lit(kGeluTanhScale), inner);
  return ir.fmul(x, sigmoid_f32(ir, ir.fmul(lit(2.0f), u)));
}

// Max/Min propagate NaN like the static kernels (numpy's maximum/minimum):
//   max: a != a ? a : (a < b || b != b) ? b : a      min: the same with b < a.
std::string max_min(Ir& ir, const std::string& a, const std::string& b, bool is_max) {
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

std::string access_type(const StridedAccess& a) { return a.dtype == DType::Bool ? "i8" : "float"; }
int access_align(const StridedAccess& a) { return a.dtype == DType::Bool ? 1 : 4; }

// The value of access `k` at inner index %i (or hoisted: stride 0) as IR, in `ir`.
std::string emit_load(Ir& ir, const StridedAccess& a, size_t k, const std::string& index) {
  const std::string ty = access_type(a);
  const std::string p = "%a" + std::to_string(k);
  std::string ptr = p;
  const int64_t s = a.strides.back();
  if (s != 0) {
    std::string idx = s == 1 ? index : ir.op("mul nsw i64 " + index + ", " + std::to_string(s));
    ptr = ir.op("getelementptr inbounds " + ty + ", ptr " + p + ", i64 " + idx);
  }
  std::string v = ir.op("load " + ty + ", ptr " + ptr + ", align " + std::to_string(access_align(a)));
  if (a.dtype == DType::Bool) v = ir.op("icmp ne i8 " + v + ", 0");
  return v;
}

// The internal body function of Note [Pointwise inner loop].
std::string emit_body(const KernelSpec& spec, const std::string& symbol) {
  const ExprGraph& g = spec.pointwise.body;
  Ir pre("h"), loop("v");
  std::vector<std::string> value(g.nodes.size());
  // Loads of stride-0 accesses: hoisted, one per access.
  std::vector<std::string> hoisted(g.accesses.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    auto arg = [&](int k) { return value[size_t(e.args[k])]; };
    std::string& r = value[i];
    switch (e.op) {
      case ScalarOp::Load: {
        const StridedAccess& a = g.accesses[size_t(e.load)];
        if (a.strides.back() == 0) {
          std::string& h = hoisted[size_t(e.load)];
          if (h.empty()) h = emit_load(pre, a, size_t(e.load), "0");
          r = h;
        } else {
          r = emit_load(loop, a, size_t(e.load), "%i");
        }
        break;
      }
      case ScalarOp::Const: r = lit(float(e.value)); break;
      case ScalarOp::Add: r = loop.fadd(arg(0), arg(1)); break;
      case ScalarOp::Sub: r = loop.fsub(arg(0), arg(1)); break;
      case ScalarOp::Mul: r = loop.fmul(arg(0), arg(1)); break;
      case ScalarOp::Div: r = loop.fdiv(arg(0), arg(1)); break;
      case ScalarOp::Pow:
        // Pow(x, 2) is x*x, as on the static backend; otherwise libm's powf (documented
        // exception: no vectorizable form keeps pow's special cases).
        r = is_const(g, e.args[1], 2.0) ? loop.fmul(arg(0), arg(0)) : loop.call2("llvm.pow.f32", arg(0), arg(1));
        break;
      case ScalarOp::Max: r = max_min(loop, arg(0), arg(1), true); break;
      case ScalarOp::Min: r = max_min(loop, arg(0), arg(1), false); break;
      case ScalarOp::Neg: r = loop.fneg(arg(0)); break;
      case ScalarOp::Relu:  // v < 0 ? 0 : v: NaN and -0 pass through, as on the static backend
        r = loop.select(loop.fcmp("olt", arg(0), lit(0.0f)), lit(0.0f), arg(0));
        break;
      case ScalarOp::Exp: r = exp_f32(loop, arg(0)); break;
      case ScalarOp::Tanh: r = tanh_f32(loop, arg(0)); break;
      case ScalarOp::Erf: r = erf_f32(loop, arg(0)); break;
      case ScalarOp::Sigmoid: r = sigmoid_f32(loop, arg(0)); break;
      case ScalarOp::Sqrt: r = loop.call1("llvm.sqrt.f32", arg(0)); break;
      case ScalarOp::GeluErf: r = gelu_erf_f32(loop, arg(0)); break;
      case ScalarOp::GeluTanh: r = gelu_tanh_f32(loop, arg(0)); break;
      case ScalarOp::Cast: r = arg(0); break;  // f32 -> f32 (llvm_supports)
      case ScalarOp::Where: {
        std::string c = node_is_bool(g, e.args[0]) ? arg(0) : loop.fcmp("une", arg(0), lit(0.0f));
        r = loop.select(c, arg(1), arg(2));
        break;
      }
      case ScalarOp::Acc:
      case ScalarOp::RowStat: FUSOR_ASSERT(false, "declined by llvm_supports"); break;
    }
  }
  for (const ExprGraph::Store& s : g.stores) {
    const StridedAccess& a = g.accesses[size_t(s.access)];
    const std::string p = "%a" + std::to_string(s.access);
    std::string ptr = p;
    const int64_t st = a.strides.back();
    if (st != 0) {
      std::string idx = st == 1 ? "%i" : loop.op("mul nsw i64 %i, " + std::to_string(st));
      ptr = loop.op("getelementptr inbounds float, ptr " + p + ", i64 " + idx);
    }
    loop.line("store float " + value[size_t(s.node)] + ", ptr " + ptr + ", align 4");
  }

  std::ostringstream os;
  os << "define internal void @" << symbol << ".body(";
  for (size_t k = 0; k < g.accesses.size(); ++k) os << "ptr noalias nocapture %a" << k << ", ";
  os << "i64 %n) #1 {\nentry:\n" << pre.text() << "  br label %loop\nloop:\n"
     << "  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]\n"
     << loop.text() << "  %i.next = add nuw nsw i64 %i, 1\n"
     << "  %done = icmp eq i64 %i.next, %n\n"
     << "  br i1 %done, label %exit, label %loop\nexit:\n  ret void\n}\n";
  return os.str();
}

// The ABI wrapper of Note [Pointwise tasks].
std::string emit_wrapper(const KernelSpec& spec, const std::string& symbol) {
  const PointwiseSpec& p = spec.pointwise;
  const ExprGraph& g = p.body;
  const int64_t total = numel(p.shape), inner = p.shape.back(), chunk = pointwise_task_elements(spec);
  const size_t rank = p.shape.size();
  Ir ir("w");
  std::ostringstream os;
  os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\nentry:\n";
  if (total == 0 || g.stores.empty()) {
    os << "  ret void\n}\n";
    return os.str();
  }
  std::vector<std::string> base(spec.buffers.size());
  for (size_t b = 0; b < spec.buffers.size(); ++b) {
    std::string slot = ir.op("getelementptr inbounds ptr, ptr %buffers, i64 " + std::to_string(b));
    base[b] = ir.op("load ptr, ptr " + slot + ", align 8");
  }
  auto clip = [&](const std::string& task) {
    std::string e = ir.op("mul i64 " + task + ", " + std::to_string(chunk));
    std::string c = ir.op("icmp slt i64 " + e + ", " + std::to_string(total));
    return ir.op("select i1 " + c + ", i64 " + e + ", i64 " + std::to_string(total));
  };
  std::string begin = clip("%task_begin"), end = clip("%task_end");
  std::string any = ir.op("icmp slt i64 " + begin + ", " + end);
  ir.line("br i1 " + any + ", label %seg, label %done");
  os << ir.text();

  // One row segment per iteration.
  Ir seg("s");
  std::string row = "0", col = "%pos";
  if (rank > 1) {
    row = seg.op("udiv i64 %pos, " + std::to_string(inner));
    col = seg.op("urem i64 %pos, " + std::to_string(inner));
  }
  std::string left = seg.op("sub i64 " + std::to_string(inner) + ", " + col);
  std::string avail = seg.op("sub i64 " + end + ", %pos");
  std::string shorter = seg.op("icmp slt i64 " + left + ", " + avail);
  std::string len = seg.op("select i1 " + shorter + ", i64 " + left + ", i64 " + avail);
  // The row's outer indices, last outer dim first (the first needs no remainder).
  std::vector<std::string> idx(rank, "0");
  idx[rank - 1] = col;
  std::string rest = row;
  for (size_t d = rank - 1; d-- > 0;) {
    if (d == 0) {
      idx[d] = rest;
    } else {
      idx[d] = seg.op("urem i64 " + rest + ", " + std::to_string(p.shape[d]));
      rest = seg.op("udiv i64 " + rest + ", " + std::to_string(p.shape[d]));
    }
  }
  std::vector<std::string> ptrs;
  for (const StridedAccess& a : g.accesses) {
    std::string off = std::to_string(a.offset);
    for (size_t d = 0; d < rank; ++d) {
      if (a.strides[d] == 0) continue;
      std::string term = seg.op("mul nsw i64 " + idx[d] + ", " + std::to_string(a.strides[d]));
      off = seg.op("add nsw i64 " + off + ", " + term);
    }
    ptrs.push_back(seg.op("getelementptr inbounds " + access_type(a) + ", ptr " + base[size_t(a.buffer)] + ", i64 " + off));
  }
  std::string call = "call void @" + symbol + ".body(";
  for (const std::string& q : ptrs) call += "ptr " + q + ", ";
  seg.line(call + "i64 " + len + ")");
  os << "seg:\n  %pos = phi i64 [ " << begin << ", %entry ], [ %pos.next, %seg ]\n"
     << seg.text() << "  %pos.next = add nsw i64 %pos, " << len << "\n"
     << "  %more = icmp slt i64 %pos.next, " << end << "\n"
     << "  br i1 %more, label %seg, label %done\ndone:\n  ret void\n}\n";
  return os.str();
}

}  // namespace

bool llvm_supports(const KernelSpec& spec, std::string* why) { return check(spec, why); }

int64_t pointwise_task_elements(const KernelSpec& spec) {
  const int64_t total = numel(spec.pointwise.shape);
  const int64_t tasks = spec.tasks < 1 ? 1 : spec.tasks;
  const int64_t per = (total + tasks - 1) / tasks;
  const int64_t aligned = (per + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  return aligned < 1 ? 1 : aligned;
}

std::string emit_pointwise_ir(const KernelSpec& spec, const std::string& symbol) {
  std::string why;
  if (!check(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  std::ostringstream os;
  // The spec as the module's leading comment, so a dump reads on its own.
  std::istringstream lines(spec.str());
  for (std::string l; std::getline(lines, l);) os << "; " << l << "\n";
  os << "\n" << emit_body(spec, symbol) << "\n" << emit_wrapper(spec, symbol) << "\n" << kDeclarations
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
