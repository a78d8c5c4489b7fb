#include "ir/passes/explain.h"

#include "ir/json.h"

#include <cstdio>
#include <sstream>

namespace fusor {

namespace {

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", double(bytes) / (1 << 20));
  return buf;
}

}  // namespace

std::string explain_text(const FusedGraph& f, const DimBindings& dims) {
  std::ostringstream os;
  const Graph& g = f.graph;
  os << "graph " << g.name();
  for (const auto& [k, v] : dims) os << " " << k << "=" << v;
  os << "\n  kernels: " << f.kernels_before << " unfused -> " << f.kernels_after() << " fused ("
     << f.groups.size() - size_t(f.kernels_after()) << " views, no kernel)";
  if (f.folded_nodes) os << "; " << f.folded_nodes << " shape/constant ops folded at trace";
  os << "\n  intermediates written: " << mib(f.intermediate_bytes_before) << " -> " << mib(f.intermediate_bytes_after())
     << "\n";
  if (!f.log.applied.empty()) {
    os << "passes:\n";
    for (const PassNote& n : f.log.applied) os << "  [" << n.pass << "] " << n.message << "\n";
  }
  os << "groups:\n";
  int i = 0;
  for (const FusionGroup& grp : f.groups) {
    os << "  #" << i++ << " " << group_kind_name(grp.kind) << "  " << grp.pattern << "\n     ops:";
    for (NodeId n : grp.nodes) os << " " << g.node(n).name;
    os << "\n     writes:";
    for (ValueId o : grp.outputs) os << " " << g.value(o).name << " " << f.types[size_t(o)].str();
    os << "\n";
  }
  if (!f.log.declined.empty()) {
    os << "declined:\n";
    for (const DeclinedFusion& d : f.log.declined)
      os << "  " << (d.producer.empty() ? "?" : d.producer) << " -> " << d.consumer << ": " << d.reason
         << (d.detail.empty() ? "" : " (" + d.detail + ")") << "\n";
  }
  return os.str();
}

std::string explain_json(const FusedGraph& f, const DimBindings& dims) {
  std::ostringstream os;
  const Graph& g = f.graph;
  os << "{\"graph\": " << json_string(g.name()) << ", \"dims\": {";
  bool first = true;
  for (const auto& [k, v] : dims) {
    os << (first ? "" : ", ") << json_string(k) << ": " << v;
    first = false;
  }
  os << "}, \"kernels_before\": " << f.kernels_before << ", \"kernels_after\": " << f.kernels_after()
     << ", \"compute_groups\": " << f.kernels_after() << ", \"folded_nodes\": " << f.folded_nodes
     << ", \"intermediate_bytes_before\": " << f.intermediate_bytes_before
     << ", \"intermediate_bytes_after\": " << f.intermediate_bytes_after() << ", \"passes\": [";
  for (size_t i = 0; i < f.log.applied.size(); ++i) {
    const PassNote& n = f.log.applied[i];
    os << (i ? ", " : "") << "{\"pass\": " << json_string(n.pass) << ", \"node\": " << json_string(n.node)
       << ", \"message\": " << json_string(n.message) << "}";
  }
  os << "], \"groups\": [";
  for (size_t i = 0; i < f.groups.size(); ++i) {
    const FusionGroup& grp = f.groups[i];
    os << (i ? ", " : "") << "{\"kind\": " << json_string(std::string(group_kind_name(grp.kind)))
       << ", \"pattern\": " << json_string(grp.pattern) << ", \"ops\": [";
    for (size_t k = 0; k < grp.nodes.size(); ++k) {
      const Node& n = g.node(grp.nodes[k]);
      os << (k ? ", " : "") << "{\"name\": " << json_string(n.name) << ", \"op\": " << json_string(std::string(op_name(n.op)))
         << "}";
    }
    os << "], \"inputs\": [";
    for (size_t k = 0; k < grp.inputs.size(); ++k) os << (k ? ", " : "") << json_string(g.value(grp.inputs[k]).name);
    os << "], \"outputs\": [";
    for (size_t k = 0; k < grp.outputs.size(); ++k)
      os << (k ? ", " : "") << "{\"name\": " << json_string(g.value(grp.outputs[k]).name)
         << ", \"type\": " << json_string(f.types[size_t(grp.outputs[k])].str()) << "}";
    os << "]}";
  }
  os << "], \"declined\": [";
  for (size_t i = 0; i < f.log.declined.size(); ++i) {
    const DeclinedFusion& d = f.log.declined[i];
    os << (i ? ", " : "") << "{\"producer\": " << json_string(d.producer) << ", \"consumer\": " << json_string(d.consumer)
       << ", \"reason\": " << json_string(d.reason) << ", \"detail\": " << json_string(d.detail) << "}";
  }
  os << "]}";
  return os.str();
}

}  // namespace fusor
