// The pieces every x86 emitter of the asmjit backend shares: VecEmitter (one vector ISA on
// one x86::Compiler: AVX-512 zmm with k-mask tails, or AVX2 ymm with vector-mask tails;
// constants; float, integer and mask operations; horizontal reductions; the approximations
// of codegen/math_approx.h, defined in emit_math.cpp), the emission of an ExprGraph at one
// vector step, the vector loop over a row segment, the address arithmetic of strided
// accesses, and the entry of each kernel kind's emitter (emit_pointwise.cpp,
// emit_reduction.cpp, emit_gemm.cpp), which are built from these.
// Internal to codegen/asmjit: it includes asmjit's headers, so only this folder's .cpp files
// include it (public headers never do). Layer: codegen/asmjit.
#pragma once

#include <asmjit/x86.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel_spec.h"

namespace fusor::asmjit_emit {

namespace x86 = asmjit::x86;

/// A lane predicate: a k register (AVX-512) or a vector of all-ones / zero dword lanes (AVX2).
struct Mask {
  x86::KReg k;
  x86::Vec v;
};

/// One vector step of a loop: all lanes, or (masked) the first `count` lanes: AVX2's tail,
/// every step of AVX-512's one-body loop (Note [Vector steps and tails]).
struct Step {
  bool tail = false;  ///< masked
  x86::Gp count;      ///< masked only: the live lanes, 1 .. lanes
  Mask live;          ///< masked only: those lanes as a mask
};

/// Vector code for one ISA on one x86::Compiler. Every operation returns a fresh virtual
/// register and never changes its operands, so values of expression nodes stay valid.
/// Operands named `b` may be registers or memory (constants from cmem()).
/// The rounding of round_to_integer (the immediate's rounding-control bits).
enum class RoundTo : uint8_t { NearestEven = 0, Down = 1, Up = 2 };

class VecEmitter {
 public:
  VecEmitter(x86::Compiler& cc, bool avx512);

  x86::Compiler& cc;
  const bool avx512;     ///< zmm + k masks, else ymm + vector masks
  const int lanes;       ///< f32 lanes per vector: 16 or 8
  const uint32_t bytes;  ///< bytes per vector: 64 or 32

  // ---- registers and constants ----
  x86::Vec vec();                            ///< a fresh vector register
  x86::Gp gp();                              ///< a fresh 64-bit register
  x86::Mem cmem(float f);                    ///< f in every lane, in the constant pool
  x86::Mem cmem_bits(uint32_t bits);         ///< a dword pattern in every lane
  x86::Vec konst(float f);                   ///< f in every lane, in a register
  x86::Vec zero();
  x86::Mem stack(uint32_t size);             ///< a 64-byte aligned stack slot

  // ---- float arithmetic (IEEE, as the llvm backend emits it) ----
  x86::Vec bin(asmjit::InstId id, const x86::Vec& a, const asmjit::Operand& b);
  x86::Vec add(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVaddps, a, b); }
  x86::Vec sub(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVsubps, a, b); }
  x86::Vec mul(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVmulps, a, b); }
  x86::Vec div(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVdivps, a, b); }
  /// a*b + c with one rounding (the hosts this backend takes all have FMA).
  x86::Vec fma(const x86::Vec& a, const asmjit::Operand& b, const asmjit::Operand& c);
  x86::Vec sqrt(const x86::Vec& a);
  /// x86's minps / maxps: a < b ? a : b (resp. >), b when either is NaN.
  x86::Vec min_x86(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVminps, a, b); }
  x86::Vec max_x86(const x86::Vec& a, const asmjit::Operand& b) { return bin(x86::Inst::kIdVmaxps, a, b); }
  /// a > limit ? limit : a (NaN passes).
  x86::Vec clamp_above(const x86::Vec& a, float limit);

  // ---- bits ----
  x86::Vec bit_and(const x86::Vec& a, const asmjit::Operand& b);
  x86::Vec bit_or(const x86::Vec& a, const asmjit::Operand& b);
  x86::Vec bit_xor(const x86::Vec& a, const asmjit::Operand& b);
  x86::Vec abs(const x86::Vec& a);
  x86::Vec neg(const x86::Vec& a);
  x86::Vec copysign(const x86::Vec& mag, const x86::Vec& sign);

  // ---- masks ----
  Mask cmp(const x86::Vec& a, const asmjit::Operand& b, x86::VCmpImm pred);
  /// m ? t : f per lane.
  x86::Vec select(const Mask& m, const x86::Vec& t, const x86::Vec& f);
  Mask mask_or(const Mask& a, const Mask& b);
  Mask mask_and(const Mask& a, const Mask& b);
  Mask mask_not(const Mask& a);
  /// 1 in the dword lanes of m, 0 elsewhere.
  x86::Vec mask_to_ones(const Mask& m);
  /// Lanes whose int32 is in [0, bound).
  Mask in_range(const x86::Vec& ints, int64_t bound);
  /// Lanes whose dword is not zero.
  Mask nonzero(const x86::Vec& ints);
  /// The first `count` lanes (count in 0 .. lanes).
  Mask first_lanes(const x86::Gp& count);
  /// step.tail ? (live lanes of v, `neutral` elsewhere) : v.
  x86::Vec live_or(const Step& step, const x86::Vec& v, float neutral);

  // ---- memory ----
  /// Contiguous f32 lanes at m (the live lanes of a tail; others read as 0).
  x86::Vec load(const x86::Mem& m, const Step& step);
  /// Stores v's lanes (the live lanes of a tail) contiguously at m.
  void store(const x86::Mem& m, const x86::Vec& v, const Step& step);
  /// The f32 at m in every lane.
  x86::Vec broadcast(const x86::Mem& m);
  /// A scalar (lane 0 of an xmm) in every lane.
  x86::Vec broadcast(const x86::Xmm& x);
  /// The low 32 bits of a register in every lane.
  x86::Vec broadcast_int(const x86::Gp& r);

  // ---- horizontal ----
  /// `id` (vaddps, vmaxps, an or) over all lanes, the result in every lane.
  x86::Vec reduce(asmjit::InstId id, const x86::Vec& v);

  // ---- math: the schemes of codegen/static/math.h on the tables of math_approx.h ----
  x86::Vec exp(const x86::Vec& x);
  /// exp of an x whose e^x is normal (Note [Exponentials in range], codegen/llvm/emit_expr.cpp).
  x86::Vec exp_in_range(const x86::Vec& x);
  x86::Vec tanh(const x86::Vec& x);
  x86::Vec sigmoid(const x86::Vec& x);
  x86::Vec erf(const x86::Vec& x);
  x86::Vec gelu_erf(const x86::Vec& x);
  x86::Vec gelu_tanh(const x86::Vec& x);
  /// NaN-propagating max / min (numpy's maximum / minimum, as the static kernels).
  x86::Vec max_nan(const x86::Vec& a, const x86::Vec& b, bool is_max);
  /// libm's powf per lane (the documented exception: no vector form keeps pow's special cases).
  x86::Vec pow_libm(const x86::Vec& a, const x86::Vec& b);
  /// libm's logf, sinf, cosf per lane (as the static kernel and the llvm backend call them).
  x86::Vec log_libm(const x86::Vec& a);
  x86::Vec sin_libm(const x86::Vec& a);
  x86::Vec cos_libm(const x86::Vec& a);
  /// Each lane rounded to an integer (vrndscaleps / vroundps: exact, no exception raised).
  x86::Vec round_to_integer(const x86::Vec& a, RoundTo mode);
  /// libm function `fn` (float(float), or float(float, float) when b is given) lane by lane.
  x86::Vec libm_per_lane(const x86::Vec& a, const x86::Vec* b, uint64_t fn);

  // ---- integer helpers on 64-bit registers ----
  void add_imm(const x86::Gp& r, int64_t v);
  void mul_imm(const x86::Gp& dst, const x86::Gp& src, int64_t v);
  /// dst = min(a, b), signed.
  void min_into(const x86::Gp& dst, const x86::Gp& other);

 private:
  template <size_t N>
  x86::Vec horner(const x86::Vec& x, const std::array<float, N>& c);
  x86::Vec erf_small(const x86::Vec& a);
  /// exp's polynomial part p (e^x = p * 2^n) of an x within exp's clamps; *ni gets n.
  x86::Vec exp_reduced(const x86::Vec& xc, x86::Vec* ni);
  /// The float 2^k of each lane's i32 k (a normal exponent).
  x86::Vec pow2_i32(const x86::Vec& k);
  template <size_t N>
  x86::Vec erfc_fit(const x86::Vec& a, float clamp, float center, float scale, const std::array<float, N>& g);

  std::unordered_map<uint32_t, x86::Mem> consts_;
};

/// An access of a graph while it is emitted: a pointer to its element at the current
/// position (advanced by the loop) and its inner stride.
struct AccessPtr {
  x86::Gp ptr;
  int64_t stride = 0;  ///< elements per column step
  DType dtype = DType::F32;
};

/// The value of one expression node: a vector, or a mask (bool values: loads, comparisons,
/// logic).
struct NodeValue {
  x86::Vec v;
  Mask m;
  bool is_mask = false;
};

/// What emit_expr reads besides the graph.
struct ExprEnv {
  std::vector<AccessPtr> access;  ///< per access of the graph
  /// Per access: its value when loaded before the loop (stride 0); from hoist_loads.
  std::vector<NodeValue> hoisted;
  std::vector<bool> is_hoisted;
  /// Every access is read at the pointer as one element in every lane, and stores write
  /// lane 0 only (a reduction's per-row epilogue).
  bool column0 = false;
  x86::Vec acc;      ///< Acc's value
  x86::Vec stat[2];  ///< RowStat 0 and 1
};

/// Loads the accesses of `g` whose inner stride is 0 once, into env.hoisted (call before
/// the loop whose steps read them).
void hoist_loads(VecEmitter& e, const ExprGraph& g, ExprEnv& env);

/// Emits the nodes of `g` for one vector step; returns every node's value.
std::vector<NodeValue> emit_expr(VecEmitter& e, const ExprGraph& g, const ExprEnv& env, const Step& step);

/// Emits the stores of `g` (values from emit_expr) for one vector step.
void emit_stores(VecEmitter& e, const ExprGraph& g, const ExprEnv& env, const std::vector<NodeValue>& values,
                 const Step& step);

/// Moves every pointer of `access` one vector step on (lanes * stride elements).
void advance(VecEmitter& e, const std::vector<AccessPtr>& access);

/// A loop over `len` columns (len >= 0) calling `next` after each step: AVX2 emits
/// body(full step) while a full vector remains, then body(tail step) once for the rest;
/// AVX-512 emits one body(masked step) for all (Note [Vector steps and tails]).
void vector_loop(VecEmitter& e, const x86::Gp& len, const std::function<void(const Step&)>& body,
                 const std::function<void()>& next);

/// Calls emit(0) .. emit(copies - 1), each emitting one copy of some code, then merges the
/// copies' instructions one from each in turn (Note [Interleaved copies]); returns whether
/// they were merged (copies with labels, jumps or calls stay in order). The copies must
/// only share registers set before them and touch disjoint memory.
bool emit_interleaved(VecEmitter& e, int copies, const std::function<void(int copy)>& emit);

/// Loads buffers[b] of the kernel ABI's first argument for every b in `used` (others stay
/// unset).
std::vector<x86::Gp> load_buffer_bases(VecEmitter& e, const x86::Gp& buffers, const std::vector<bool>& used);

/// The row-major indices of `flat` over `dims` (unsigned division by the constant dims).
std::vector<x86::Gp> split_index(VecEmitter& e, const x86::Gp& flat, const std::vector<int64_t>& dims);

/// The address of access `a` at index `idx` (one register per dim; an unset register is a
/// zero index): base + (a.offset + Σ idx[d] * a.strides[d]) elements.
x86::Gp access_pointer(VecEmitter& e, const StridedAccess& a, const x86::Gp& base, const std::vector<x86::Gp>& idx);

/// The bytes of one element of an access.
int64_t element_bytes(DType t);

// ---- the kernels, one per kind; each emits into the open function whose arguments are the
// kernel ABI's (buffers, task_begin, task_end) and returns before its `ret` ----

/// A Pointwise kernel (codegen/asmjit/emit_pointwise.cpp).
void emit_pointwise(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
                    const x86::Gp& task_end);

/// A Contraction kernel, GEMM or Conv2d (codegen/asmjit/emit_gemm.cpp).
void emit_gemm(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
               const x86::Gp& task_end);

/// A RowReduction kernel (codegen/asmjit/emit_reduction.cpp).
void emit_reduction(VecEmitter& e, const KernelSpec& spec, const x86::Gp& buffers, const x86::Gp& task_begin,
                    const x86::Gp& task_end);

}  // namespace fusor::asmjit_emit
