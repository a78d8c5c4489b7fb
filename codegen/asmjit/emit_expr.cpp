// VecEmitter's registers, constants, arithmetic, masks and memory forms, expression
// emission, and the loop and address helpers of the asmjit backend
// (codegen/asmjit/emit_expr.h; the math is emit_math.cpp). Layer: codegen/asmjit.
#include "codegen/asmjit/emit_expr.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "ir/error.h"

namespace fusor::asmjit_emit {

// Note [Vector steps and tails]
// A row segment of `len` columns runs vector steps of 16 lanes (zmm) or 8 (ymm). AVX2 runs
// full steps while a whole vector remains, then one tail step for the rest with a lane mask
// (a vector of all-ones lanes: vmaskmovps neither reads nor writes the masked-off lanes, so
// no access crosses the end of a buffer); the body is emitted twice, unmasked and masked.
// AVX-512 emits the body once: every step is masked by a k register of its
// min(remaining, 16) live lanes (zero-masked loads and merge-masked stores cost nothing
// over unmasked ones), which halves the code and the compile time; a contiguous bool
// condition branches to its in-place load when the step is whole. Accesses that are neither contiguous f32 nor a full step of contiguous
// bools (a strided read, a bool condition in a tail, a strided store) go through a "bounce" slot on the
// stack: a small scalar loop copies the step's live lanes between memory and the slot, and
// the vector reads or writes the slot. Lanes beyond a tail's count hold whatever the slot
// or a masked load gave them; they are computed on and never stored (sums mask them out).
//
// Note [Same floats as the other backends]
// The math follows codegen/static/math.h operation by operation on the tables of
// codegen/math_approx.h: Horner from the first coefficient with one fused multiply-add a
// step, the same selects (x86's min/max put the constant first so that NaN passes, which is
// the llvm backend's `x > c ? c : x`), the same order of products. On an FMA host the
// asmjit, llvm and static kernels therefore agree to the last bit in practice (the tests
// hold them to 2 ulp, for contractions a compiler may choose differently).

namespace {

using asmjit::InstId;
using asmjit::Operand;
namespace Inst = x86::Inst;
using x86::VCmpImm;

asmjit::Imm imm(int64_t v) { return asmjit::Imm(v); }
asmjit::Imm pred_imm(VCmpImm p) { return asmjit::Imm(uint32_t(p)); }

bool is_const(const ExprGraph& g, int32_t n, double v) {
  const ScalarExpr& e = g.nodes[size_t(n)];
  return e.op == ScalarOp::Const && e.value == v;
}

}  // namespace

int64_t element_bytes(DType t) { return t == DType::Bool ? 1 : 4; }

VecEmitter::VecEmitter(x86::Compiler& c, bool is_avx512)
    : cc(c), avx512(is_avx512), lanes(is_avx512 ? 16 : 8), bytes(is_avx512 ? 64 : 32) {}

x86::Vec VecEmitter::vec() {
  if (avx512) return cc.newZmmPs();
  return cc.newYmmPs();
}

x86::Gp VecEmitter::gp() { return cc.newGpq(); }

x86::Mem VecEmitter::cmem_bits(uint32_t bits) {
  auto it = consts_.find(bits);
  if (it != consts_.end()) return it->second;
  uint32_t data[16];
  for (uint32_t& d : data) d = bits;
  x86::Mem m = cc.newConst(asmjit::ConstPoolScope::kLocal, data, bytes);
  m.setSize(bytes);
  consts_.emplace(bits, m);
  return m;
}

x86::Mem VecEmitter::cmem(float f) { return cmem_bits(std::bit_cast<uint32_t>(f)); }

x86::Vec VecEmitter::konst(float f) {
  x86::Vec v = vec();
  if (f == 0.0f && !std::signbit(f)) {
    cc.emit(avx512 ? Inst::kIdVpxord : Inst::kIdVpxor, v, v, v);
    return v;
  }
  cc.vmovups(v, cmem(f));
  return v;
}

x86::Vec VecEmitter::zero() { return konst(0.0f); }

x86::Mem VecEmitter::stack(uint32_t size) { return cc.newStack(size, 64); }

x86::Vec VecEmitter::bin(InstId id, const x86::Vec& a, const Operand& b) {
  x86::Vec d = vec();
  cc.emit(id, d, a, b);
  return d;
}

x86::Vec VecEmitter::fma(const x86::Vec& a, const Operand& b, const Operand& c) {
  x86::Vec d = vec();
  if (b.isReg()) {  // d = b*d + c
    cc.vmovaps(d, a);
    cc.emit(Inst::kIdVfmadd213ps, d, b, c);
  } else if (c.isReg()) {  // d = a*b + d
    cc.emit(Inst::kIdVmovaps, d, c);
    cc.emit(Inst::kIdVfmadd231ps, d, a, b);
  } else {  // d = d*b + t
    x86::Vec t = vec();
    cc.emit(Inst::kIdVmovups, t, c);
    cc.vmovaps(d, a);
    cc.emit(Inst::kIdVfmadd132ps, d, t, b);
  }
  return d;
}

x86::Vec VecEmitter::sqrt(const x86::Vec& a) {
  x86::Vec d = vec();
  cc.vsqrtps(d, a);
  return d;
}

x86::Vec VecEmitter::clamp_above(const x86::Vec& a, float limit) {
  // minps(limit, a) = limit < a ? limit : a, and a when a is NaN.
  return min_x86(konst(limit), a);
}

x86::Vec VecEmitter::bit_and(const x86::Vec& a, const Operand& b) { return bin(avx512 ? Inst::kIdVpandd : Inst::kIdVpand, a, b); }
x86::Vec VecEmitter::bit_or(const x86::Vec& a, const Operand& b) { return bin(avx512 ? Inst::kIdVpord : Inst::kIdVpor, a, b); }
x86::Vec VecEmitter::bit_xor(const x86::Vec& a, const Operand& b) { return bin(avx512 ? Inst::kIdVpxord : Inst::kIdVpxor, a, b); }
x86::Vec VecEmitter::abs(const x86::Vec& a) { return bit_and(a, cmem_bits(0x7fffffffu)); }
x86::Vec VecEmitter::neg(const x86::Vec& a) { return bit_xor(a, cmem_bits(0x80000000u)); }
x86::Vec VecEmitter::copysign(const x86::Vec& mag, const x86::Vec& sign) {
  return bit_or(abs(mag), bit_and(sign, cmem_bits(0x80000000u)));
}

Mask VecEmitter::cmp(const x86::Vec& a, const Operand& b, VCmpImm pred) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.emit(Inst::kIdVcmpps, m.k, a, b, pred_imm(pred));
  } else {
    m.v = vec();
    cc.emit(Inst::kIdVcmpps, m.v, a, b, pred_imm(pred));
  }
  return m;
}

x86::Vec VecEmitter::select(const Mask& m, const x86::Vec& t, const x86::Vec& f) {
  x86::Vec d = vec();
  if (avx512)
    cc.k(m.k).vblendmps(d, f, t);  // k ? src2 : src1
  else
    cc.vblendvps(d, f, t, m.v);  // sign(mask) ? src2 : src1
  return d;
}

Mask VecEmitter::mask_or(const Mask& a, const Mask& b) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.korw(m.k, a.k, b.k);
  } else {
    m.v = bit_or(a.v, b.v);
  }
  return m;
}

Mask VecEmitter::mask_and(const Mask& a, const Mask& b) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.kandw(m.k, a.k, b.k);
  } else {
    m.v = bit_and(a.v, b.v);
  }
  return m;
}

Mask VecEmitter::mask_not(const Mask& a) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.knotw(m.k, a.k);
  } else {
    m.v = bit_xor(a.v, cmem_bits(0xffffffffu));
  }
  return m;
}

x86::Vec VecEmitter::mask_to_ones(const Mask& m) {
  x86::Vec one = vec();
  cc.vmovups(one, cmem_bits(1));
  return select(m, one, zero());
}

Mask VecEmitter::in_range(const x86::Vec& ints, int64_t bound) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.vpcmpud(m.k, ints, cmem_bits(uint32_t(bound)), imm(1));  // unsigned <
  } else {  // unsigned a < b as signed (a ^ 2^31) < (b ^ 2^31)
    x86::Vec flipped = bit_xor(ints, cmem_bits(0x80000000u)), limit = vec();
    cc.vmovups(limit, cmem_bits(uint32_t(bound) ^ 0x80000000u));
    m.v = vec();
    cc.vpcmpgtd(m.v, limit, flipped);  // limit > flipped
  }
  return m;
}

Mask VecEmitter::nonzero(const x86::Vec& ints) {
  Mask m;
  if (avx512) {
    m.k = cc.newKw();
    cc.vptestmd(m.k, ints, ints);
  } else {
    x86::Vec z = zero(), ones = vec();
    cc.vpcmpeqd(ones, ones, ones);
    x86::Vec eq = vec();
    cc.vpcmpeqd(eq, ints, z);
    m.v = bit_xor(eq, ones);
  }
  return m;
}

Mask VecEmitter::first_lanes(const x86::Gp& count) {
  Mask m;
  if (avx512) {
    x86::Gp bits = cc.newGpd(), all = cc.newGpd();
    cc.mov(all, -1);
    cc.bzhi(bits, all, count.r32());  // the low `count` bits
    m.k = cc.newKw();
    cc.kmovw(m.k, bits);
  } else {
    uint32_t iota[8];
    for (uint32_t i = 0; i < 8; ++i) iota[i] = i;
    x86::Mem iota_mem = cc.newConst(asmjit::ConstPoolScope::kLocal, iota, sizeof iota);
    x86::Vec n = vec();
    cc.vmovd(n.xmm(), count.r32());
    cc.vpbroadcastd(n, n.xmm());
    m.v = vec();
    cc.vpcmpgtd(m.v, n, iota_mem);  // count > lane
  }
  return m;
}

x86::Vec VecEmitter::live_or(const Step& step, const x86::Vec& v, float neutral) {
  if (!step.tail) return v;
  return select(step.live, v, konst(neutral));
}

x86::Vec VecEmitter::load(const x86::Mem& m, const Step& step) {
  x86::Vec v = vec();
  if (!step.tail)
    cc.vmovups(v, m);
  else if (avx512)
    cc.k(step.live.k).z().vmovups(v, m);
  else
    cc.vmaskmovps(v, step.live.v, m);
  return v;
}

void VecEmitter::store(const x86::Mem& m, const x86::Vec& v, const Step& step) {
  if (!step.tail)
    cc.vmovups(m, v);
  else if (avx512)
    cc.k(step.live.k).vmovups(m, v);
  else
    cc.vmaskmovps(m, step.live.v, v);
}

x86::Vec VecEmitter::broadcast(const x86::Mem& m) {
  x86::Mem d = m;
  d.setSize(4);
  x86::Vec v = vec();
  cc.vbroadcastss(v, d);
  return v;
}

x86::Vec VecEmitter::broadcast(const x86::Xmm& x) {
  x86::Vec v = vec();
  cc.vbroadcastss(v, x);
  return v;
}

x86::Vec VecEmitter::broadcast_int(const x86::Gp& r) {
  x86::Vec v = vec();
  cc.vmovd(v.xmm(), r.r32());
  cc.vpbroadcastd(v, v.xmm());
  return v;
}

x86::Vec VecEmitter::reduce(InstId id, const x86::Vec& v) {
  x86::Vec r = v;
  auto step = [&](const x86::Vec& t) { r = bin(id, r, t); };
  x86::Vec t = vec();
  if (avx512) {
    cc.vshuff32x4(t, r, r, imm(0x4E));  // swap the 256-bit halves
    step(t);
    t = vec();
    cc.vshuff32x4(t, r, r, imm(0xB1));  // swap 128-bit pairs
    step(t);
  } else {
    cc.vperm2f128(t, r, r, imm(0x01));  // swap the 128-bit halves
    step(t);
  }
  t = vec();
  cc.vpermilps(t, r, imm(0x4E));
  step(t);
  t = vec();
  cc.vpermilps(t, r, imm(0xB1));
  step(t);
  return r;
}

// ---- integer helpers ----------------------------------------------------------------------

void VecEmitter::add_imm(const x86::Gp& r, int64_t v) {
  if (v == 0) return;
  if (v >= INT32_MIN && v <= INT32_MAX) {
    cc.add(r, imm(v));
  } else {
    x86::Gp t = gp();
    cc.mov(t, imm(v));
    cc.add(r, t);
  }
}

void VecEmitter::mul_imm(const x86::Gp& dst, const x86::Gp& src, int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    cc.imul(dst, src, imm(v));
  } else {
    cc.mov(dst, imm(v));
    cc.imul(dst, src);
  }
}

void VecEmitter::min_into(const x86::Gp& dst, const x86::Gp& other) {
  cc.cmp(dst, other);
  cc.cmovg(dst, other);
}

// ---- expressions ----------------------------------------------------------------------------

namespace {

// A strided or bool access through a stack slot (Note [Vector steps and tails]): copies the
// step's lanes (count, or all) from p, `stride` elements apart, into dword lanes.
x86::Vec bounce_load(VecEmitter& e, const AccessPtr& a, const Step& step) {
  x86::Compiler& cc = e.cc;
  x86::Mem slot = e.stack(e.bytes);
  x86::Gp buf = e.gp(), src = e.gp(), j = e.gp();
  x86::Gp t = cc.newGpd();
  cc.lea(buf, slot);
  cc.mov(src, a.ptr);
  cc.xor_(j, j);
  asmjit::Label lane = cc.newLabel();
  cc.bind(lane);
  if (a.dtype == DType::Bool)
    cc.movzx(t, x86::byte_ptr(src));
  else
    cc.mov(t, x86::dword_ptr(src));
  cc.mov(x86::dword_ptr(buf, j, 2), t);
  e.add_imm(src, a.stride * element_bytes(a.dtype));
  cc.inc(j);
  if (step.tail)
    cc.cmp(j, step.count);
  else
    cc.cmp(j, e.lanes);
  cc.jb(lane);
  x86::Vec v = e.vec();
  cc.vmovups(v, x86::ptr(buf));
  return v;
}

void bounce_store(VecEmitter& e, const AccessPtr& a, const x86::Vec& v, const Step& step) {
  x86::Compiler& cc = e.cc;
  x86::Mem slot = e.stack(e.bytes);
  x86::Gp buf = e.gp(), dst = e.gp(), j = e.gp();
  x86::Gp t = cc.newGpd();
  cc.lea(buf, slot);
  cc.vmovups(x86::ptr(buf), v);
  cc.mov(dst, a.ptr);
  cc.xor_(j, j);
  asmjit::Label lane = cc.newLabel();
  cc.bind(lane);
  cc.mov(t, x86::dword_ptr(buf, j, 2));
  if (a.dtype == DType::Bool)
    cc.mov(x86::byte_ptr(dst), t.r8());
  else
    cc.mov(x86::dword_ptr(dst), t);
  e.add_imm(dst, a.stride * element_bytes(a.dtype));
  cc.inc(j);
  if (step.tail)
    cc.cmp(j, step.count);
  else
    cc.cmp(j, e.lanes);
  cc.jb(lane);
}

// The value of access `a` at one element, in every lane.
NodeValue load_one(VecEmitter& e, const AccessPtr& a) {
  NodeValue r;
  if (a.dtype == DType::Bool) {
    x86::Gp t = e.cc.newGpd();
    e.cc.movzx(t, x86::byte_ptr(a.ptr));
    r.m = e.nonzero(e.broadcast_int(t));
    r.is_mask = true;
  } else {
    r.v = e.broadcast(x86::ptr(a.ptr));
  }
  return r;
}

NodeValue load_step(VecEmitter& e, const AccessPtr& a, const Step& step) {
  NodeValue r;
  if (a.dtype == DType::Bool) {
    r.is_mask = true;
    if (a.stride == 1 && !step.tail) {
      x86::Vec v = e.vec();
      e.cc.vpmovzxbd(v, e.avx512 ? x86::xmmword_ptr(a.ptr) : x86::qword_ptr(a.ptr));
      r.m = e.nonzero(v);
    } else if (a.stride == 1 && e.avx512) {  // a masked step of the one-body loop: full ones read in place
      x86::Compiler& cc = e.cc;
      asmjit::Label in_place = cc.newLabel(), loaded = cc.newLabel();
      x86::Vec v = e.vec();
      cc.cmp(step.count, e.lanes);
      cc.je(in_place);
      cc.vmovaps(v, bounce_load(e, a, step));
      cc.jmp(loaded);
      cc.bind(in_place);
      cc.vpmovzxbd(v, x86::xmmword_ptr(a.ptr));
      cc.bind(loaded);
      r.m = e.nonzero(v);
    } else {
      r.m = e.nonzero(bounce_load(e, a, step));
    }
    return r;
  }
  r.v = a.stride == 1 ? e.load(x86::ptr(a.ptr), step) : bounce_load(e, a, step);
  return r;
}

}  // namespace

void hoist_loads(VecEmitter& e, const ExprGraph& g, ExprEnv& env) {
  env.hoisted.assign(g.accesses.size(), NodeValue{});
  env.is_hoisted.assign(g.accesses.size(), false);
  for (const ScalarExpr& n : g.nodes) {
    if (n.op != ScalarOp::Load) continue;
    const size_t k = size_t(n.load);
    if (env.access[k].stride != 0 || env.is_hoisted[k]) continue;
    env.hoisted[k] = load_one(e, env.access[k]);
    env.is_hoisted[k] = true;
  }
}

std::vector<NodeValue> emit_expr(VecEmitter& e, const ExprGraph& g, const ExprEnv& env, const Step& step) {
  FUSOR_ASSERT(env.access.size() == g.accesses.size(), "one pointer per access");
  std::vector<NodeValue> value(g.nodes.size());
  std::vector<NodeValue> loaded(g.accesses.size());
  std::vector<bool> is_loaded(g.accesses.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& n = g.nodes[i];
    auto arg = [&](int k) { return value[size_t(n.args[k])].v; };
    NodeValue& r = value[i];
    switch (n.op) {
      case ScalarOp::Load: {
        const size_t k = size_t(n.load);
        if (k < env.is_hoisted.size() && env.is_hoisted[k]) {
          r = env.hoisted[k];
        } else if (!is_loaded[k]) {
          const AccessPtr& a = env.access[k];
          loaded[k] = env.column0 || a.stride == 0 ? load_one(e, a) : load_step(e, a, step);
          is_loaded[k] = true;
          r = loaded[k];
        } else {
          r = loaded[k];
        }
        break;
      }
      case ScalarOp::Const: r.v = e.konst(float(n.value)); break;
      case ScalarOp::Acc: r.v = env.acc; break;
      case ScalarOp::RowStat: r.v = env.stat[n.value == 0 ? 0 : 1]; break;
      case ScalarOp::Add: r.v = e.add(arg(0), arg(1)); break;
      case ScalarOp::Sub: r.v = e.sub(arg(0), arg(1)); break;
      case ScalarOp::Mul: r.v = e.mul(arg(0), arg(1)); break;
      case ScalarOp::Div: r.v = e.div(arg(0), arg(1)); break;
      case ScalarOp::Pow:
        // Pow(x, 2) is x*x, as on the static and llvm backends; otherwise libm's powf.
        r.v = is_const(g, n.args[1], 2.0) ? e.mul(arg(0), arg(0)) : e.pow_libm(arg(0), arg(1));
        break;
      case ScalarOp::Max: r.v = e.max_nan(arg(0), arg(1), true); break;
      case ScalarOp::Min: r.v = e.max_nan(arg(0), arg(1), false); break;
      case ScalarOp::Neg: r.v = e.neg(arg(0)); break;
      case ScalarOp::Relu: {  // v < 0 ? 0 : v: NaN and -0 pass through, as on the static backend
        x86::Vec z = e.zero();
        r.v = e.select(e.cmp(arg(0), z, VCmpImm::kLT_OQ), z, arg(0));
        break;
      }
      case ScalarOp::Exp: r.v = e.exp(arg(0)); break;
      case ScalarOp::Tanh: r.v = e.tanh(arg(0)); break;
      case ScalarOp::Erf: r.v = e.erf(arg(0)); break;
      case ScalarOp::Sigmoid: r.v = e.sigmoid(arg(0)); break;
      case ScalarOp::Sqrt: r.v = e.sqrt(arg(0)); break;
      case ScalarOp::GeluErf: r.v = e.gelu_erf(arg(0)); break;
      case ScalarOp::GeluTanh: r.v = e.gelu_tanh(arg(0)); break;
      case ScalarOp::Cast: {
        const NodeValue& x = value[size_t(n.args[0])];
        if (n.dtype == DType::Bool && !x.is_mask) {
          r.m = e.cmp(x.v, e.zero(), VCmpImm::kNEQ_UQ);
          r.is_mask = true;
        } else if (n.dtype != DType::Bool && x.is_mask) {
          r.v = e.select(x.m, e.konst(1.0f), e.zero());
        } else {
          r = x;  // f32 -> f32, bool -> bool
        }
        break;
      }
      case ScalarOp::Abs: r.v = e.abs(arg(0)); break;
      case ScalarOp::Log: r.v = e.log_libm(arg(0)); break;
      case ScalarOp::Sin: r.v = e.sin_libm(arg(0)); break;
      case ScalarOp::Cos: r.v = e.cos_libm(arg(0)); break;
      case ScalarOp::Floor: r.v = e.round_to_integer(arg(0), RoundTo::Down); break;
      case ScalarOp::Ceil: r.v = e.round_to_integer(arg(0), RoundTo::Up); break;
      case ScalarOp::Round: r.v = e.round_to_integer(arg(0), RoundTo::NearestEven); break;
      case ScalarOp::Eq:
      case ScalarOp::Lt:
      case ScalarOp::Le: {
        const VCmpImm pred = n.op == ScalarOp::Eq ? VCmpImm::kEQ_OQ : n.op == ScalarOp::Lt ? VCmpImm::kLT_OQ : VCmpImm::kLE_OQ;
        r.m = e.cmp(arg(0), arg(1), pred);
        r.is_mask = true;
        break;
      }
      case ScalarOp::And:
      case ScalarOp::Or: {
        const Mask& a = value[size_t(n.args[0])].m;
        const Mask& b = value[size_t(n.args[1])].m;
        r.m = n.op == ScalarOp::And ? e.mask_and(a, b) : e.mask_or(a, b);
        r.is_mask = true;
        break;
      }
      case ScalarOp::Not:
        r.m = e.mask_not(value[size_t(n.args[0])].m);
        r.is_mask = true;
        break;
      case ScalarOp::Where: {
        const NodeValue& c = value[size_t(n.args[0])];
        Mask m = c.is_mask ? c.m : e.cmp(c.v, e.zero(), VCmpImm::kNEQ_UQ);
        r.v = e.select(m, arg(1), arg(2));
        break;
      }
    }
  }
  return value;
}

void emit_stores(VecEmitter& e, const ExprGraph& g, const ExprEnv& env, const std::vector<NodeValue>& values,
                 const Step& step) {
  for (const ExprGraph::Store& s : g.stores) {
    const AccessPtr& a = env.access[size_t(s.access)];
    if (a.dtype == DType::Bool) {  // bytes 0 / 1: through the bounce slot (no byte-granular vector store on AVX2)
      const x86::Vec ones = e.mask_to_ones(values[size_t(s.node)].m);
      if (env.column0) {
        x86::Gp t = e.cc.newGpd();
        e.cc.vmovd(t, ones.xmm());
        e.cc.mov(x86::byte_ptr(a.ptr), t.r8());
      } else {
        bounce_store(e, a, ones, step);
      }
      continue;
    }
    const x86::Vec& v = values[size_t(s.node)].v;
    if (env.column0)
      e.cc.vmovss(x86::dword_ptr(a.ptr), v.xmm());
    else if (a.stride == 1)
      e.store(x86::ptr(a.ptr), v, step);
    else
      bounce_store(e, a, v, step);
  }
}

void advance(VecEmitter& e, const std::vector<AccessPtr>& access) {
  for (const AccessPtr& a : access) e.add_imm(a.ptr, int64_t(e.lanes) * a.stride * element_bytes(a.dtype));
}

void vector_loop(VecEmitter& e, const x86::Gp& len, const std::function<void(const Step&)>& body,
                 const std::function<void()>& next) {
  x86::Compiler& cc = e.cc;
  x86::Gp rem = e.gp();
  cc.mov(rem, len);
  if (e.avx512) {  // one masked body (Note [Vector steps and tails])
    asmjit::Label step_label = cc.newLabel(), done = cc.newLabel();
    x86::Gp count = e.gp(), cap = e.gp();
    cc.mov(cap, e.lanes);
    cc.bind(step_label);
    cc.test(rem, rem);
    cc.jle(done);
    cc.mov(count, rem);
    e.min_into(count, cap);
    Step step;
    step.tail = true;
    step.count = count;
    step.live = e.first_lanes(count);
    body(step);
    next();
    cc.sub(rem, e.lanes);
    cc.jmp(step_label);
    cc.bind(done);
    return;
  }
  asmjit::Label full = cc.newLabel(), tail = cc.newLabel(), done = cc.newLabel();
  cc.bind(full);
  cc.cmp(rem, e.lanes);
  cc.jl(tail);
  body(Step{});
  next();
  cc.sub(rem, e.lanes);
  cc.jmp(full);
  cc.bind(tail);
  cc.test(rem, rem);
  cc.jz(done);
  Step step;
  step.tail = true;
  step.count = rem;
  step.live = e.first_lanes(rem);
  body(step);
  cc.bind(done);
}

// Note [Interleaved copies]
// asmjit emits instructions in the order the emitters call it; nothing schedules them. A
// costly body (GELU: a division and two polynomials, ~100 cycles of dependent latency per
// vector on a Zen 1) emitted once per vector runs near its latency, one chain after the
// other, since out-of-order execution sees little of the next copy past a long chain.
// emit_interleaved emits the copies one after another, then relinks the compiler's node
// list so that their instructions alternate, one from each copy in turn: the chains are
// independent, so the core overlaps them. Each VecEmitter operation returns a fresh
// virtual register, so the copies share only what existed before them (hoisted loads,
// pointers), which none writes; the register allocator then sees the merged order.
// Copies with anything but plain instructions (labels, jumps, calls: a libm lane loop, a
// bounce slot) stay in order, as emitted. The callers interleave only copies whose memory
// is disjoint (different columns of the same accesses), where the merged order reads and
// writes the same values. The floats are the same either way.

bool emit_interleaved(VecEmitter& e, int copies, const std::function<void(int copy)>& emit) {
  x86::Compiler& cc = e.cc;
  asmjit::BaseNode* const before = cc.cursor();
  std::vector<std::vector<asmjit::BaseNode*>> runs(size_t(std::max(copies, 0)));
  bool plain = true;
  for (int k = 0; k < copies; ++k) {
    asmjit::BaseNode* const start = cc.cursor();
    emit(k);
    for (asmjit::BaseNode* n = start; n != cc.cursor();) {
      n = n->next();
      runs[size_t(k)].push_back(n);
      plain = plain && n->type() == asmjit::NodeType::kInst;
    }
  }
  if (!plain || copies < 2) return false;
  for (const std::vector<asmjit::BaseNode*>& run : runs)
    for (asmjit::BaseNode* n : run) cc.removeNode(n);
  size_t longest = 0;
  for (const std::vector<asmjit::BaseNode*>& run : runs) longest = std::max(longest, run.size());
  cc.setCursor(before);
  for (size_t i = 0; i < longest; ++i)
    for (const std::vector<asmjit::BaseNode*>& run : runs)
      if (i < run.size()) cc.addNode(run[i]);
  return true;
}

std::vector<x86::Gp> load_buffer_bases(VecEmitter& e, const x86::Gp& buffers, const std::vector<bool>& used) {
  std::vector<x86::Gp> base(used.size());
  for (size_t b = 0; b < used.size(); ++b) {
    if (!used[b]) continue;
    base[b] = e.gp();
    e.cc.mov(base[b], x86::qword_ptr(buffers, int32_t(b * 8)));
  }
  return base;
}

std::vector<x86::Gp> split_index(VecEmitter& e, const x86::Gp& flat, const std::vector<int64_t>& dims) {
  x86::Compiler& cc = e.cc;
  std::vector<x86::Gp> idx(dims.size());
  if (dims.empty()) return idx;
  x86::Gp rest = e.gp();
  cc.mov(rest, flat);
  for (size_t d = dims.size(); d-- > 1;) {
    if (dims[d] == 1) continue;  // index 0 (unset)
    x86::Gp hi = e.gp(), divisor = e.gp();
    cc.xor_(hi, hi);
    cc.mov(divisor, imm(dims[d]));
    cc.div(hi, rest, divisor);  // rest = rest / dims[d], hi = remainder
    idx[d] = hi;
  }
  idx[0] = rest;
  return idx;
}

x86::Gp access_pointer(VecEmitter& e, const StridedAccess& a, const x86::Gp& base, const std::vector<x86::Gp>& idx) {
  x86::Compiler& cc = e.cc;
  x86::Gp off;  // elements; unset while 0
  for (size_t d = 0; d < idx.size(); ++d) {
    if (a.strides[d] == 0 || !idx[d].isValid()) continue;
    x86::Gp t = e.gp();
    if (a.strides[d] == 1)
      cc.mov(t, idx[d]);
    else
      e.mul_imm(t, idx[d], a.strides[d]);
    if (off.isValid())
      cc.add(off, t);
    else
      off = t;
  }
  x86::Gp p = e.gp();
  cc.mov(p, base);
  if (off.isValid()) {
    e.add_imm(off, a.offset);
    cc.lea(p, x86::ptr(base, off, a.dtype == DType::Bool ? 0 : 2));
  } else {
    e.add_imm(p, a.offset * element_bytes(a.dtype));
  }
  return p;
}

}  // namespace fusor::asmjit_emit
