#include "ir/fingerprint.h"

#include "ir/hash.h"

namespace fusor {

namespace {
void hash_attr(Hasher& h, const Attribute& a) {
  h.u64(uint64_t(a.type()));
  switch (a.type()) {
    case AttrType::Int: h.i64(a.i()); break;
    case AttrType::Float: h.f64(a.f()); break;
    case AttrType::Ints:
      h.u64(a.ints().size());
      for (int64_t v : a.ints()) h.i64(v);
      break;
    case AttrType::Floats:
      h.u64(a.floats().size());
      for (double v : a.floats()) h.f64(v);
      break;
    case AttrType::String: h.str(a.s()); break;
  }
}
}  // namespace

uint64_t fingerprint(const Graph& g) {
  Hasher h;
  h.str("fusor-graph-v1");
  // Values are referred to by the order in which they are defined, so renaming internal
  // values does not change the fingerprint.
  std::vector<int64_t> order(g.values().size(), -1);
  int64_t next = 0;
  auto define = [&](ValueId v) { order[size_t(v)] = next++; };
  h.u64(g.inputs().size());
  for (ValueId in : g.inputs()) {
    const Value& v = g.value(in);
    define(in);
    h.str(v.name).u64(uint64_t(v.dtype)).u64(v.dims.size());
    for (const Dim& d : v.dims) d.is_symbolic() ? h.str(d.symbol) : h.i64(d.size);
  }
  h.u64(g.constants().size());
  for (size_t i = 0; i < g.values().size(); ++i) {
    if (g.values()[i].kind != ValueKind::Constant) continue;
    define(ValueId(i));
    const Tensor& t = *g.constant_data(ValueId(i));
    h.u64(uint64_t(t.dtype())).u64(uint64_t(t.rank()));
    for (int64_t d : t.shape().dims()) h.i64(d);
    h.bytes(t.raw(), t.nbytes());
  }
  h.u64(g.nodes().size());
  for (const Node& n : g.nodes()) {
    h.u64(uint64_t(n.op)).u64(n.inputs.size());
    // Malformed references (a cycle, a dangling id) hash as markers no valid graph has;
    // the verifier reports them when the graph is used.
    for (ValueId v : n.inputs)
      h.i64(v == kNoValue ? -1 : (v >= 0 && size_t(v) < order.size() ? (order[size_t(v)] >= 0 ? order[size_t(v)] : -2) : -3));
    h.u64(n.attrs.size());
    for (const auto& [name, a] : n.attrs) {
      h.str(name);
      hash_attr(h, a);
    }
    for (ValueId o : n.outputs)
      if (o >= 0 && size_t(o) < order.size()) define(o);
  }
  h.u64(g.outputs().size());
  for (ValueId o : g.outputs()) {
    bool ok = o >= 0 && size_t(o) < order.size();
    h.str(ok ? g.value(o).name : "").i64(ok ? order[size_t(o)] : -3);
  }
  return h.digest();
}

}  // namespace fusor
