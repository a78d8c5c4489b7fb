// VecEmitter's math: the approximations of exp, tanh, sigmoid, erf and the two GELU forms
// (codegen/static/math.h's schemes on codegen/math_approx.h's tables, operation by
// operation: Note [Same floats as the other backends] in emit_expr.cpp), NaN-propagating
// max / min, and libm's powf per lane. Layer: codegen/asmjit.
#include <math.h>

#include <bit>

#include "codegen/asmjit/emit_expr.h"
#include "codegen/math_approx.h"

namespace fusor::asmjit_emit {

namespace {

namespace Inst = x86::Inst;
using x86::VCmpImm;

asmjit::Imm imm(int64_t v) { return asmjit::Imm(v); }

}  // namespace

template <size_t N>
x86::Vec VecEmitter::horner(const x86::Vec& x, const std::array<float, N>& c) {
  x86::Vec p = fma(x, cmem(c[0]), cmem(c[1]));  // c0*x + c1 (the product is exact either way round)
  for (size_t i = 2; i < N; ++i) p = fma(p, x, cmem(c[i]));
  return p;
}

x86::Vec VecEmitter::exp_reduced(const x86::Vec& xc, x86::Vec* ni) {
  using namespace approx;
  x86::Vec t = fma(xc, cmem(kLog2e), cmem(kExpShift));
  x86::Vec n = sub(t, cmem(kExpShift));
  *ni = bin(Inst::kIdVpsubd, t, cmem_bits(std::bit_cast<uint32_t>(kExpShift)));
  x86::Vec r = fma(n, cmem(kExpNegLn2Hi), xc);
  r = fma(n, cmem(kExpNegLn2Lo), r);
  x86::Vec q = horner(r, kExpQ);
  return add(fma(q, mul(r, r), r), cmem(1.0f));
}

x86::Vec VecEmitter::pow2_i32(const x86::Vec& k) {
  x86::Vec biased = bin(Inst::kIdVpaddd, k, cmem_bits(uint32_t(approx::kFloatExponentBias)));
  x86::Vec bits = vec();
  cc.vpslld(bits, biased, imm(approx::kFloatMantissaBits));
  return bits;
}

x86::Vec VecEmitter::exp(const x86::Vec& x) {
  using namespace approx;
  x86::Vec xc = clamp_above(x, kExpMax);
  xc = max_x86(konst(kExpMin), xc);  // kExpMin > xc ? kExpMin : xc; NaN passes
  x86::Vec ni;
  x86::Vec p = exp_reduced(xc, &ni);
  x86::Vec n1 = vec();
  cc.vpsrad(n1, ni, imm(1));
  x86::Vec n2 = bin(Inst::kIdVpsubd, ni, n1);
  return mul(mul(p, pow2_i32(n1)), pow2_i32(n2));
}

x86::Vec VecEmitter::exp_in_range(const x86::Vec& x) {
  x86::Vec ni;
  x86::Vec p = exp_reduced(x, &ni);
  return mul(p, pow2_i32(ni));
}

x86::Vec VecEmitter::tanh(const x86::Vec& x) {
  using namespace approx;
  x86::Vec a = abs(x);
  x86::Vec a2 = mul(a, a);
  x86::Vec p = horner(a2, kTanhP);
  x86::Vec small = fma(mul(a, a2), p, a);
  x86::Vec e = exp_in_range(mul(clamp_above(a, kTanhClamp), cmem(2.0f)));  // (Note [Exponentials in range])
  x86::Vec large = sub(konst(1.0f), div(konst(2.0f), add(e, cmem(1.0f))));
  x86::Vec r = select(cmp(a, cmem(kTanhSmall), VCmpImm::kLT_OQ), small, large);
  return copysign(r, x);
}

x86::Vec VecEmitter::sigmoid(const x86::Vec& x) {
  x86::Vec e = exp(neg(abs(x)));
  x86::Vec num = select(cmp(x, zero(), VCmpImm::kGE_OQ), konst(1.0f), e);
  return div(num, add(e, cmem(1.0f)));
}

x86::Vec VecEmitter::erf_small(const x86::Vec& a) {
  x86::Vec a2 = mul(a, a);
  x86::Vec p = horner(a2, approx::kErfSmallP);
  return fma(a, cmem(approx::kErfSmallLead), mul(mul(a, a2), p));
}

template <size_t N>
x86::Vec VecEmitter::erfc_fit(const x86::Vec& a, float clamp, float center, float scale, const std::array<float, N>& g) {
  x86::Vec ac = clamp_above(a, clamp);
  x86::Vec t = mul(sub(ac, cmem(center)), cmem(scale));
  x86::Vec gv = horner(t, g);
  return exp_in_range(fma(neg(a), a, gv));  // (a <= the fit's clamp: Note [Exponentials in range])
}

x86::Vec VecEmitter::erf(const x86::Vec& x) {
  using namespace approx;
  x86::Vec a = abs(x);
  x86::Vec small = erf_small(a);
  x86::Vec clamped = clamp_above(a, kErfcLarge.clamp);
  x86::Vec large =
      sub(konst(1.0f), erfc_fit(clamped, kErfcLarge.clamp, kErfcLarge.center, kErfcLarge.scale, kErfcLarge.g));
  x86::Vec r = select(cmp(a, cmem(kErfSmall), VCmpImm::kLT_OQ), small, large);
  return copysign(r, x);
}

x86::Vec VecEmitter::gelu_erf(const x86::Vec& x) {
  using namespace approx;
  x86::Vec w = abs(x);
  x86::Vec t = div(konst(1.0f), fma(w, cmem(kGeluErfcP), cmem(1.0f)));
  x86::Vec q = horner(t, kGeluErfcQ);
  x86::Vec a = fma(mul(x, x), cmem(kGeluNegHalfLog2e), q);
  a = max_x86(konst(kGeluExp2Min), a);  // kGeluExp2Min > a ? kGeluExp2Min : a; NaN passes
  x86::Vec y = add(a, cmem(kGeluExp2Shift));
  x86::Vec n = sub(y, cmem(kGeluExp2Shift));
  x86::Vec f = sub(a, n);
  x86::Vec p = horner(f, kGeluExp2P);
  x86::Vec s = vec();
  cc.vpslld(s, y, imm(kFloatMantissaBits));
  x86::Vec phi_neg = mul(mul(t, p), s);
  x86::Vec phi = select(cmp(x, zero(), VCmpImm::kGE_OQ), sub(konst(1.0f), phi_neg), phi_neg);
  return mul(x, phi);
}

x86::Vec VecEmitter::gelu_tanh(const x86::Vec& x) {
  using namespace approx;
  x86::Vec inner = fma(mul(x, cmem(kGeluTanhCubic)), mul(x, x), x);
  x86::Vec u = mul(inner, cmem(kGeluTanhScale));
  return mul(x, sigmoid(mul(u, cmem(2.0f))));
}

x86::Vec VecEmitter::max_nan(const x86::Vec& a, const x86::Vec& b, bool is_max) {
  // a != a ? a : (better || b != b) ? b : a, better = a < b (max) or b < a (min).
  Mask a_nan = cmp(a, a, VCmpImm::kUNORD_Q);
  Mask b_nan = cmp(b, b, VCmpImm::kUNORD_Q);
  Mask better = is_max ? cmp(a, b, VCmpImm::kLT_OQ) : cmp(b, a, VCmpImm::kLT_OQ);
  return select(a_nan, a, select(mask_or(better, b_nan), b, a));
}

// Calls a libm float function (one or two arguments) on each lane of the vectors in turn:
// the vectors go through the stack, the scalar call through the host calling convention.
x86::Vec VecEmitter::libm_per_lane(const x86::Vec& a, const x86::Vec* b, uint64_t fn) {
  x86::Mem sa = stack(bytes), sb = stack(bytes), sr = stack(bytes);
  cc.vmovups(sa, a);
  if (b) cc.vmovups(sb, *b);
  x86::Gp pa = gp(), pb = gp(), pr = gp(), j = gp();
  cc.lea(pa, sa);
  cc.lea(pb, sb);
  cc.lea(pr, sr);
  cc.xor_(j, j);
  asmjit::Label lane = cc.newLabel();
  cc.bind(lane);
  x86::Xmm xa = cc.newXmmSs(), xb = cc.newXmmSs(), xr = cc.newXmmSs();
  cc.vmovss(xa, x86::dword_ptr(pa, j, 2));
  if (b) cc.vmovss(xb, x86::dword_ptr(pb, j, 2));
  asmjit::InvokeNode* call = nullptr;
  if (b)
    cc.invoke(&call, asmjit::Imm(fn), asmjit::FuncSignatureT<float, float, float>(asmjit::CallConvId::kHost));
  else
    cc.invoke(&call, asmjit::Imm(fn), asmjit::FuncSignatureT<float, float>(asmjit::CallConvId::kHost));
  call->setArg(0, xa);
  if (b) call->setArg(1, xb);
  call->setRet(0, xr);
  cc.vmovss(x86::dword_ptr(pr, j, 2), xr);
  cc.inc(j);
  cc.cmp(j, lanes);
  cc.jb(lane);
  x86::Vec r = vec();
  cc.vmovups(r, sr);
  return r;
}

x86::Vec VecEmitter::pow_libm(const x86::Vec& a, const x86::Vec& b) {
  float (*powf_fn)(float, float) = ::powf;
  return libm_per_lane(a, &b, reinterpret_cast<uint64_t>(powf_fn));
}

x86::Vec VecEmitter::log_libm(const x86::Vec& a) {
  float (*logf_fn)(float) = ::logf;
  return libm_per_lane(a, nullptr, reinterpret_cast<uint64_t>(logf_fn));
}

x86::Vec VecEmitter::sin_libm(const x86::Vec& a) {
  float (*sinf_fn)(float) = ::sinf;
  return libm_per_lane(a, nullptr, reinterpret_cast<uint64_t>(sinf_fn));
}

x86::Vec VecEmitter::cos_libm(const x86::Vec& a) {
  float (*cosf_fn)(float) = ::cosf;
  return libm_per_lane(a, nullptr, reinterpret_cast<uint64_t>(cosf_fn));
}

x86::Vec VecEmitter::round_to_integer(const x86::Vec& a, RoundTo mode) {
  // imm8: bits 1:0 the rounding, bit 2 clear (not MXCSR's), bit 3 suppresses the inexact
  // exception; NaN and infinities pass through.
  const uint32_t imm = 0x08 | uint32_t(mode);
  x86::Vec d = vec();
  if (avx512)
    cc.vrndscaleps(d, a, imm);
  else
    cc.vroundps(d, a, imm);
  return d;
}

}  // namespace fusor::asmjit_emit
