#include "ir/verifier.h"

#include <vector>

#include "ir/op_schema.h"

namespace fusor {

namespace {

void verify_attributes(const Node& n, const OpSchema& schema) {
  for (const auto& [name, attr] : n.attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : schema.attrs)
      if (s.name == name) spec = &s;
    if (!spec) {
      std::string known;
      for (const AttrSpec& s : schema.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      node_fail(n, ErrorCode::InvalidGraph, "unknown attribute '", name, "' (", schema.name,
                " accepts: ", known.empty() ? "none" : known, ")");
    }
    if (attr.type() != spec->type)
      node_fail(n, ErrorCode::InvalidGraph, "attribute '", name, "' must be ", attr_type_name(spec->type),
                " but is ", attr_type_name(attr.type()), " ", attr.str());
  }
  for (const AttrSpec& s : schema.attrs)
    if (s.required && !n.attrs.count(s.name))
      node_fail(n, ErrorCode::InvalidGraph, "required attribute '", s.name, "' is missing");
  if (schema.check) schema.check(n);
}

}  // namespace

void verify(const Graph& g) {
  std::vector<char> defined(g.values().size(), 0);
  for (ValueId v : g.inputs()) defined[size_t(v)] = 1;
  for (size_t v = 0; v < g.values().size(); ++v)
    if (g.values()[v].kind == ValueKind::Constant) defined[v] = 1;

  for (size_t ni = 0; ni < g.nodes().size(); ++ni) {
    const Node& n = g.nodes()[ni];
    const OpSchema& schema = op_schema(n.op);
    int nin = int(n.inputs.size());
    if (nin < schema.min_inputs || nin > schema.max_inputs) {
      if (schema.max_inputs == kVariadic)
        node_fail(n, ErrorCode::InvalidGraph, "has ", nin, " inputs; ", schema.name, " takes at least ",
                  schema.min_inputs);
      node_fail(n, ErrorCode::InvalidGraph, "has ", nin, " inputs; ", schema.name, " takes ",
                schema.min_inputs == schema.max_inputs ? "" : "from ", schema.min_inputs,
                schema.min_inputs == schema.max_inputs ? "" : " to ",
                schema.min_inputs == schema.max_inputs ? std::string() : std::to_string(schema.max_inputs));
    }
    if (!schema.takes_outputs(n.outputs.size())) {
      if (schema.max_outputs == kVariadic)
        node_fail(n, ErrorCode::InvalidGraph, "has ", n.outputs.size(), " outputs; ", schema.name, " has at least ",
                  schema.num_outputs);
      node_fail(n, ErrorCode::InvalidGraph, "has ", n.outputs.size(), " outputs; ", schema.name, " has ",
                schema.num_outputs);
    }
    for (int i = 0; i < nin; ++i) {
      ValueId v = n.inputs[size_t(i)];
      if (v == kNoValue) {
        if (i < schema.min_inputs)
          node_fail(n, ErrorCode::InvalidGraph, "required input ", i, " is missing");
        continue;
      }
      if (v < 0 || size_t(v) >= g.values().size())
        node_fail(n, ErrorCode::InvalidGraph, "input ", i, " refers to value id ", v, " which does not exist");
      if (!defined[size_t(v)]) {
        const Value& val = g.value(v);
        node_fail(n, ErrorCode::InvalidGraph, "input ", i, " '", val.name,
                  "' is not defined before this node (the graph has a cycle or uses a value before "
                  "its producer '",
                  val.producer >= 0 ? g.node(val.producer).name : std::string("?"), "')");
      }
    }
    for (ValueId o : n.outputs) {
      FUSOR_CHECK(o >= 0 && size_t(o) < g.values().size(), InvalidGraph, node_label(n),
                  ": output refers to value id ", o, " which does not exist");
      const Value& val = g.value(o);
      FUSOR_CHECK(val.kind == ValueKind::NodeOutput && val.producer == NodeId(ni), InvalidGraph,
                  node_label(n), ": output '", val.name, "' is also produced elsewhere");
      defined[size_t(o)] = 1;
    }
    verify_attributes(n, schema);
  }
  FUSOR_CHECK(!g.outputs().empty(), InvalidGraph, "graph '", g.name(), "' has no outputs");
  for (ValueId o : g.outputs()) {
    FUSOR_CHECK(o >= 0 && size_t(o) < g.values().size(), InvalidGraph, "graph output refers to value id ",
                o, " which does not exist");
    FUSOR_CHECK(defined[size_t(o)], InvalidGraph, "graph output '", g.value(o).name, "' is never defined");
  }
}

}  // namespace fusor
