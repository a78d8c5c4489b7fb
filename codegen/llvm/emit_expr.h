// The pieces every LLVM IR emitter of the llvm backend shares, as text (LLVM 16, opaque
// pointers): SSA-numbered IR lines (IrText), float literals, the approximations of
// codegen/math_approx.h, the checks and the emission of an ExprGraph at one inner index,
// and the address arithmetic of strided accesses. emit_pointwise.cpp and
// emit_reduction.cpp are built from these, so one piece of code holds each piece of logic.
// Internal to codegen/llvm (no LLVM headers: the IR is built as a string).
// Layer: codegen/llvm.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/expr_check.h"
#include "codegen/kernel_spec.h"

namespace fusor::llvm_ir {

/// A float as an LLVM IR literal: the hex of the double it converts to exactly.
std::string lit(float f);

/// Straight-line IR text with fresh SSA names `%<prefix><n>`; values are strings (a name or
/// a literal). Two IrText writing into one function need different prefixes.
class IrText {
 public:
  explicit IrText(std::string prefix) : prefix_(std::move(prefix)) {}
  /// Emits `%new = rhs` and returns %new.
  std::string op(const std::string& rhs);
  /// Emits an instruction without a result.
  void line(const std::string& s) { os_ << "  " << s << "\n"; }
  /// Emits a basic block label.
  void label(const std::string& s) { os_ << s << ":\n"; }
  /// Everything emitted so far.
  std::string text() const { return os_.str(); }

  /// IEEE float arithmetic (no fast-math flags).
  std::string bin(const char* inst, const std::string& a, const std::string& b);
  std::string fadd(const std::string& a, const std::string& b) { return bin("fadd", a, b); }
  std::string fsub(const std::string& a, const std::string& b) { return bin("fsub", a, b); }
  std::string fmul(const std::string& a, const std::string& b) { return bin("fmul", a, b); }
  std::string fdiv(const std::string& a, const std::string& b) { return bin("fdiv", a, b); }
  std::string fneg(const std::string& a) { return op("fneg float " + a); }
  std::string fcmp(const char* pred, const std::string& a, const std::string& b);
  std::string select(const std::string& c, const std::string& t, const std::string& f);
  /// a*b + c, fused where the target has FMA (math.h's fmadd).
  std::string fma(const std::string& a, const std::string& b, const std::string& c);
  std::string call1(const char* fn, const std::string& a);
  std::string call2(const char* fn, const std::string& a, const std::string& b);
  std::string fabs(const std::string& a) { return call1("llvm.fabs.f32", a); }
  std::string copysign(const std::string& mag, const std::string& sign) { return call2("llvm.copysign.f32", mag, sign); }

 private:
  std::string prefix_;
  int next_ = 0;
  std::ostringstream os_;
};

/// The declarations of the intrinsics the emitted math calls (one copy per module).
extern const char* const kDeclarations;

/// e^x with codegen/static/math.h's scheme and tables (branch-free, vectorizable).
std::string exp_f32(IrText& ir, const std::string& x);
/// exp_f32 of an x known to lie where e^x is a normal float with an exponent n = round(x /
/// ln2) in [-126, 127] (tanh's clamped 2|x|, erfc's exponent; Note [Exponentials in range]):
/// the same floats without exp_f32's clamps, and 2^n applied as one factor (exact there, as
/// exp_f32's two are).
std::string exp_f32_in_range(IrText& ir, const std::string& x);

/// What emit_expr reads besides the graph: one pointer per access (already at the index
/// space position whose inner index is 0), the inner index, and the values of Acc and
/// RowStat nodes.
struct ExprEnv {
  std::vector<std::string> access_ptr;  ///< per access of the graph
  std::string index = "%i";             ///< the inner index (an i64 value; "0" for none)
  std::string acc;                      ///< Acc's value
  std::string stat[2];                  ///< RowStat 0 and 1
};

/// Emits the nodes of `g` at inner index env.index: loads of accesses with inner stride 0
/// go to `hoisted` once per access (the loop preheader), everything else to `body`.
/// Returns every node's value. The math is IEEE (no fast-math flags), branch-free.
std::vector<std::string> emit_expr(const ExprGraph& g, const ExprEnv& env, IrText& hoisted, IrText& body);

/// Emits the stores of `g` (values from emit_expr) into `body`.
void emit_stores(const ExprGraph& g, const ExprEnv& env, const std::vector<std::string>& values, IrText& body);

/// Loads buffers[0 .. count) of the kernel ABI's `%buffers` argument.
std::vector<std::string> load_buffer_bases(IrText& ir, size_t count);

/// A symbolic kernel's outer extent (Note [Symbolic kernels]): the i64 that
/// buffers[count] points to, count = spec.buffers.size().
std::string load_symbolic_extent(IrText& ir, size_t count);

/// The row-major indices of `flat` over `dims` (the first index needs no remainder).
std::vector<std::string> split_index(IrText& ir, const std::string& flat, const std::vector<int64_t>& dims);

/// The address of access `a` at the index `idx` (one value per dim of a.strides, "0" for a
/// zero index): base + a.offset + Σ idx[d] * a.strides[d] elements.
std::string access_pointer(IrText& ir, const StridedAccess& a, const std::string& base, const std::vector<std::string>& idx);

/// The IR type of an access's elements ("float", or "i8" for bool).
std::string access_type(const StridedAccess& a);

/// The spec as a comment block atop a module, so a dump reads on its own.
std::string spec_comment(const KernelSpec& spec);

}  // namespace fusor::llvm_ir
