#include "cache/kernel_key.h"

#include <cstring>

#include "ir/hash.h"

namespace fusor {

uint64_t KernelKey::hash() const {
  return Hasher().u64(spec.hash()).str(backend).str(target).str(compiler).str(engine_version).digest();
}

namespace {

// Appends fixed-width little-endian words and length-prefixed strings, so that no two
// different field sequences give the same bytes. Follows the fields KernelSpec::hash()
// covers (codegen/kernel_spec.cpp), in the same order.
class KeyWriter {
 public:
  KeyWriter& u64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = char((v >> (8 * i)) & 0xff);
    out_.append(b, 8);
    return *this;
  }
  KeyWriter& i64(int64_t v) { return u64(uint64_t(v)); }
  KeyWriter& f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return u64(b);
  }
  KeyWriter& str(std::string_view s) {
    u64(s.size());
    out_.append(s);
    return *this;
  }
  KeyWriter& ints(const std::vector<int64_t>& v) {
    u64(v.size());
    for (int64_t x : v) i64(x);
    return *this;
  }
  KeyWriter& access(const StridedAccess& a) {
    i64(a.buffer).u64(uint64_t(a.dtype)).i64(a.offset);
    return ints(a.strides);
  }
  KeyWriter& graph(const ExprGraph& g) {
    u64(g.nodes.size());
    for (const ScalarExpr& e : g.nodes)
      u64(uint64_t(e.op)).u64(uint64_t(e.dtype)).i64(e.args[0]).i64(e.args[1]).i64(e.args[2]).i64(e.load).f64(e.value);
    u64(g.accesses.size());
    for (const StridedAccess& a : g.accesses) access(a);
    u64(g.stores.size());
    for (const auto& s : g.stores) i64(s.node).i64(s.access);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string KernelKey::serialize() const {
  KeyWriter w;
  w.str("KernelKey-v1").str(backend).str(target).str(compiler).str(engine_version);
  w.u64(uint64_t(spec.kind)).i64(spec.tasks).u64(spec.buffers.size());
  for (const BufferSpec& b : spec.buffers) w.u64(uint64_t(b.dtype)).i64(b.elements).u64(b.output).u64(b.constant);
  switch (spec.kind) {
    case KernelKind::Pointwise:
      w.ints(spec.pointwise.shape).graph(spec.pointwise.body);
      break;
    case KernelKind::RowReduction:
      w.u64(uint64_t(spec.reduction.kind)).f64(spec.reduction.epsilon).ints(spec.reduction.shape);
      w.graph(spec.reduction.prologue).graph(spec.reduction.epilogue);
      break;
    case KernelKind::Contraction: {
      const ContractionSpec& c = spec.contraction;
      w.u64(uint64_t(c.kind)).i64(c.m).i64(c.n).i64(c.k).ints(c.batch).access(c.a).access(c.b);
      const Conv2dParams& p = c.conv;
      static_assert(sizeof(Conv2dParams) == 18 * sizeof(int64_t), "a new Conv2dParams field must join the key");
      for (int64_t v : {p.n, p.c, p.h, p.w, p.m, p.kh, p.kw, p.group, p.stride_h, p.stride_w, p.dil_h, p.dil_w, p.pad_t,
                        p.pad_l, p.pad_b, p.pad_r, p.oh, p.ow})
        w.i64(v);
      w.graph(c.epilogue);
      break;
    }
    case KernelKind::Attention: {
      const AttentionSpec& a = spec.attention;
      w.ints(a.batch).i64(a.tq).i64(a.tk).i64(a.d).i64(a.dv).access(a.q).access(a.k).access(a.v);
      w.graph(a.score).graph(a.epilogue);
      break;
    }
  }
  return w.take();
}

}  // namespace fusor
