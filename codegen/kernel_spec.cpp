#include "codegen/kernel_spec.h"

#include <cstring>
#include <sstream>

#include "ir/attribute.h"
#include "ir/hash.h"

namespace fusor {

const char* scalar_op_name(ScalarOp op) {
  switch (op) {
#define FUSOR_SCALAR_OP(kind, name, arity) \
  case ScalarOp::kind: return name;
#include "codegen/scalar_ops.def"
#undef FUSOR_SCALAR_OP
  }
  return "?";
}

const char* kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::Pointwise: return "pointwise";
    case KernelKind::RowReduction: return "row_reduction";
    case KernelKind::Contraction: return "contraction";
    case KernelKind::Attention: return "attention";
  }
  return "?";
}

bool ScalarExpr::operator==(const ScalarExpr& o) const {
  return op == o.op && dtype == o.dtype && args[0] == o.args[0] && args[1] == o.args[1] && args[2] == o.args[2] &&
         load == o.load && std::memcmp(&value, &o.value, sizeof(double)) == 0;
}

bool ContractionSpec::operator==(const ContractionSpec& o) const {
  return kind == o.kind && batch == o.batch && m == o.m && n == o.n && k == o.k && a == o.a && b == o.b &&
         std::memcmp(&conv, &o.conv, sizeof(conv)) == 0 && epilogue == o.epilogue && bf16 == o.bf16;
}

namespace {

// Writes the words it is fed, little-endian: the serialized form key_bytes() returns. It
// takes the same calls as Hasher, so one walk over the spec (feed) defines both.
class WordWriter {
 public:
  WordWriter& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(char((v >> (8 * i)) & 0xff));
    return *this;
  }
  WordWriter& i64(int64_t v) { return u64(uint64_t(v)); }
  WordWriter& f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return u64(b);
  }
  WordWriter& str(std::string_view s) {
    u64(s.size());
    out_.append(s);
    return *this;
  }
  WordWriter& bytes(const void* data, size_t n) {
    out_.append(static_cast<const char*>(data), n);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

template <class H>
void hash_ints(H& h, const std::vector<int64_t>& v) {
  h.u64(v.size());
  for (int64_t x : v) h.i64(x);
}

template <class H>
void hash_access(H& h, const StridedAccess& a) {
  h.i64(a.buffer).u64(uint64_t(a.dtype)).i64(a.offset);
  hash_ints(h, a.strides);
}

template <class H>
void hash_graph(H& h, const ExprGraph& g) {
  h.u64(g.nodes.size());
  for (const ScalarExpr& e : g.nodes)
    h.u64(uint64_t(e.op)).u64(uint64_t(e.dtype)).i64(e.args[0]).i64(e.args[1]).i64(e.args[2]).i64(e.load).f64(e.value);
  h.u64(g.accesses.size());
  for (const StridedAccess& a : g.accesses) hash_access(h, a);
  h.u64(g.stores.size());
  for (const auto& s : g.stores) h.i64(s.node).i64(s.access);
}

std::string ints(const std::vector<int64_t>& v) { return Attribute(v).str(); }

std::string access_str(const StridedAccess& a) {
  return "buf" + std::to_string(a.buffer) + " " + std::string(dtype_name(a.dtype)) + " strides " + ints(a.strides) +
         (a.offset ? " +" + std::to_string(a.offset) : "");
}

void print_graph(std::ostringstream& os, const char* title, const ExprGraph& g) {
  if (g.empty()) return;
  os << "  " << title << ":\n";
  for (size_t i = 0; i < g.accesses.size(); ++i) os << "    access " << i << ": " << access_str(g.accesses[i]) << "\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    os << "    %" << i << " = " << scalar_op_name(e.op) << "." << dtype_name(e.dtype);
    if (e.op == ScalarOp::Load) os << " access " << e.load;
    if (e.op == ScalarOp::Const || e.op == ScalarOp::RowStat) os << " " << format_double(e.value);
    for (int a : e.args)
      if (a >= 0) os << " %" << a;
    os << "\n";
  }
  for (const auto& s : g.stores) os << "    store %" << s.node << " -> access " << s.access << "\n";
}

// Feeds every field that affects the generated code (not names) to h.
template <class H>
void feed(H& h, const KernelSpec& spec) {
  const auto& [kind, name, buffers, tasks, symbolic, pointwise, reduction, contraction, attention] = spec;
  (void)name;
  h.str("KernelSpec-v1").u64(uint64_t(kind)).i64(tasks).u64(symbolic).u64(buffers.size());
  for (const BufferSpec& b : buffers) h.u64(uint64_t(b.dtype)).i64(b.elements).u64(b.output).u64(b.constant);
  switch (kind) {
    case KernelKind::Pointwise:
      hash_ints(h, pointwise.shape);
      hash_graph(h, pointwise.body);
      break;
    case KernelKind::RowReduction:
      h.u64(uint64_t(reduction.kind)).f64(reduction.epsilon);
      hash_ints(h, reduction.shape);
      hash_graph(h, reduction.prologue);
      hash_graph(h, reduction.epilogue);
      break;
    case KernelKind::Contraction:
      h.u64(uint64_t(contraction.kind)).i64(contraction.m).i64(contraction.n).i64(contraction.k);
      hash_ints(h, contraction.batch);
      hash_access(h, contraction.a);
      hash_access(h, contraction.b);
      h.bytes(&contraction.conv, sizeof(contraction.conv));
      hash_graph(h, contraction.epilogue);
      h.u64(contraction.bf16);
      break;
    case KernelKind::Attention:
      hash_ints(h, attention.batch);
      h.i64(attention.tq).i64(attention.tk).i64(attention.d).i64(attention.dv);
      hash_access(h, attention.q);
      hash_access(h, attention.k);
      hash_access(h, attention.v);
      hash_graph(h, attention.score);
      hash_graph(h, attention.epilogue);
      h.u64(attention.bf16);
      break;
  }
}

}  // namespace

uint64_t KernelSpec::hash() const {
  Hasher h;
  feed(h, *this);
  return h.digest();
}

std::string KernelSpec::key_bytes() const {
  WordWriter w;
  feed(w, *this);
  return w.take();
}

bool KernelSpec::same_code(const KernelSpec& o) const {
  if (kind != o.kind || tasks != o.tasks || symbolic != o.symbolic || buffers != o.buffers) return false;
  switch (kind) {
    case KernelKind::Pointwise: return pointwise == o.pointwise;
    case KernelKind::RowReduction: return reduction == o.reduction;
    case KernelKind::Contraction: return contraction == o.contraction;
    case KernelKind::Attention: return attention == o.attention;
  }
  return false;
}

std::string KernelSpec::str() const {
  std::ostringstream os;
  os << "kernel " << name << " (" << kernel_kind_name(kind) << ", ";
  if (symbolic)
    os << "symbolic outer extent)\n";
  else
    os << tasks << " tasks)\n";
  for (size_t i = 0; i < buffers.size(); ++i)
    os << "  buf" << i << ": " << (buffers[i].output ? "out " : "in  ") << dtype_name(buffers[i].dtype) << "["
       << buffers[i].elements << "] " << buffers[i].name << (buffers[i].constant ? " (const)" : "") << "\n";
  switch (kind) {
    case KernelKind::Pointwise:
      os << "  space " << ints(pointwise.shape) << "\n";
      print_graph(os, "body", pointwise.body);
      break;
    case KernelKind::RowReduction: {
      static const char* names[] = {"softmax", "layernorm", "sum", "mean", "max"};
      os << "  " << names[int(reduction.kind)] << " over rows of " << ints(reduction.shape);
      if (reduction.kind == RowReductionSpec::Kind::LayerNorm) os << " eps " << format_double(reduction.epsilon);
      os << "\n";
      print_graph(os, "prologue", reduction.prologue);
      print_graph(os, "epilogue", reduction.epilogue);
      break;
    }
    case KernelKind::Contraction:
      if (contraction.kind == ContractionSpec::Kind::Gemm) {
        os << "  gemm batch " << ints(contraction.batch) << " m " << contraction.m << " n " << contraction.n << " k "
           << contraction.k << "\n    A " << access_str(contraction.a) << "\n    B " << access_str(contraction.b) << "\n";
      } else {
        const Conv2dParams& p = contraction.conv;
        os << "  conv2d n " << p.n << " c " << p.c << " " << p.h << "x" << p.w << " -> m " << p.m << " " << p.oh << "x"
           << p.ow << " kernel " << p.kh << "x" << p.kw << " stride " << p.stride_h << "," << p.stride_w << " pad "
           << p.pad_t << "," << p.pad_l << "," << p.pad_b << "," << p.pad_r << " dil " << p.dil_h << "," << p.dil_w
           << " group " << p.group << "\n    X " << access_str(contraction.a) << "\n    W " << access_str(contraction.b)
           << "\n";
      }
      if (contraction.bf16) os << "    operands bf16, accumulated in f32\n";
      print_graph(os, "epilogue", contraction.epilogue);
      break;
    case KernelKind::Attention:
      os << "  attention batch " << ints(attention.batch) << " tq " << attention.tq << " tk " << attention.tk << " d "
         << attention.d << " dv " << attention.dv << "\n    Q " << access_str(attention.q) << "\n    K "
         << access_str(attention.k) << "\n    V " << access_str(attention.v) << "\n";
      if (attention.bf16) os << "    Q·Kᵀ and P·V on bf16 operands, accumulated in f32\n";
      print_graph(os, "score", attention.score);
      print_graph(os, "epilogue", attention.epilogue);
      break;
  }
  return os.str();
}

}  // namespace fusor
