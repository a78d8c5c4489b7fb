#include "onnx/index_model.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "ir/error.h"
#include "ir/op_kind.h"
#include "onnx/compositions.h"
#include "onnx/load_onnx.h"
#include "onnx/op_forms.h"

namespace fusor::onnx_import {

std::string onnx_node_label(const OnnxNode& n) {
  std::string name = !n.name.empty() ? n.name
                     : "(unnamed, output " + (n.outputs.empty() ? std::string("none") : n.outputs[0]) + ")";
  return "node '" + name + "' (" + (n.domain.empty() ? "" : n.domain + ".") + n.op_type + ")";
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

class Indexer {
 public:
  Indexer(const OnnxModel& model, const std::string& source) : m_(model), source_(source) {}

  ModelIndex run() {
    check_opsets();
    index_names();
    order_nodes();
    mark_live();
    check_operators();
    return std::move(ix_);
  }

 private:
  template <class... Parts>
  [[noreturn]] void node_error(const OnnxNode& n, ErrorCode code, const Parts&... parts) const {
    fail(code, source_, ": ", onnx_node_label(n), ": ", parts...);
  }
  template <class... Parts>
  [[noreturn]] void model_error(ErrorCode code, const Parts&... parts) const {
    fail(code, source_, ": ", parts...);
  }

  // ---- 1. opsets ---------------------------------------------------------------------

  void check_opsets() {
    auto it = m_.opsets.find("");
    ix_.opset = it == m_.opsets.end() ? -1 : it->second;
    if (ix_.opset > kOnnxMaxOpset)
      model_error(ErrorCode::Unsupported, "default-domain opset ", ix_.opset, " is newer than fusor reads (opsets ",
                  kOnnxMinOpset, " to ", kOnnxMaxOpset,
                  "): convert the model with onnx.version_converter");
    if (it != m_.opsets.end() && ix_.opset < 1)
      model_error(ErrorCode::ParseError, "default-domain opset ", ix_.opset, " is not valid");
    if (m_.has_sparse_initializers) model_error(ErrorCode::Unsupported, "sparse initializers are not supported");
  }

  // ---- 2. names ----------------------------------------------------------------------

  void index_names() {
    for (size_t i = 0; i < m_.initializers.size(); ++i) {
      const std::string& name = m_.initializers[i].name;
      if (name.empty()) model_error(ErrorCode::InvalidGraph, "initializer ", i, " has no name");
      if (!ix_.initializer.emplace(name, i).second)
        model_error(ErrorCode::InvalidGraph, "two initializers are named '", name, "'");
    }
    for (const OnnxValueInfo& in : m_.inputs) {
      if (in.name.empty()) model_error(ErrorCode::InvalidGraph, "a graph input has no name");
      if (!ix_.declared_inputs.insert(in.name).second)
        model_error(ErrorCode::InvalidGraph, "graph input '", in.name, "' is declared twice");
    }
    for (size_t i = 0; i < m_.nodes.size(); ++i) {
      const OnnxNode& n = m_.nodes[i];
      std::set<std::string> own;
      for (const std::string& out : n.outputs) {
        if (out.empty()) continue;
        if (!own.insert(out).second) node_error(n, ErrorCode::InvalidGraph, "output '", out, "' is listed twice");
        if (ix_.declared_inputs.count(out) && !ix_.initializer.count(out))
          node_error(n, ErrorCode::InvalidGraph, "output '", out, "' is also a graph input");
        if (ix_.initializer.count(out))
          node_error(n, ErrorCode::InvalidGraph, "output '", out, "' is also an initializer");
        auto [it, inserted] = ix_.producer.emplace(out, i);
        if (!inserted)
          node_error(n, ErrorCode::InvalidGraph, "output '", out, "' is also produced by ",
                     onnx_node_label(m_.nodes[it->second]), " (every value must be defined once)");
      }
    }
    for (const OnnxNode& n : m_.nodes)
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!n.inputs[k].empty() && !defined(n.inputs[k]))
          node_error(n, ErrorCode::InvalidGraph, "input ", k, " '", n.inputs[k],
                     "' is not defined (not a graph input, an initializer or the output of any node)");
    if (m_.outputs.empty()) model_error(ErrorCode::InvalidGraph, "the graph has no outputs");
    std::set<std::string> outs;
    for (const OnnxValueInfo& out : m_.outputs) {
      if (out.name.empty()) model_error(ErrorCode::InvalidGraph, "a graph output has no name");
      if (!outs.insert(out.name).second)
        model_error(ErrorCode::InvalidGraph, "graph output '", out.name, "' is listed twice");
      if (!defined(out.name))
        model_error(ErrorCode::InvalidGraph, "graph output '", out.name,
                    "' is not produced by any node (nor a graph input or an initializer)");
    }
  }

  bool defined(const std::string& name) const {
    return ix_.declared_inputs.count(name) || ix_.initializer.count(name) || ix_.producer.count(name);
  }
  bool is_graph_input(const std::string& name) const { return ix_.is_graph_input(name); }

  // Kahn's algorithm, taking the lowest-numbered ready node first so that a file already in
  // topological order keeps its order.
  void order_nodes() {
    const size_t n = m_.nodes.size();
    std::vector<int> waiting(n, 0);
    std::vector<std::vector<size_t>> users(n);
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> preds;
      for (const std::string& in : m_.nodes[i].inputs)
        if (auto it = ix_.producer.find(in); it != ix_.producer.end()) preds.insert(it->second);
      waiting[i] = int(preds.size());
      for (size_t p : preds) users[p].push_back(i);
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
      if (waiting[i] == 0) ready.push(i);
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      ix_.order.push_back(i);
      for (size_t u : users[i])
        if (--waiting[u] == 0) ready.push(u);
    }
    if (ix_.order.size() == n) return;
    // A node left waits on a cycle (or on a node that does): walk producers among the
    // waiting nodes until one repeats, and name that cycle.
    size_t start = 0;
    while (waiting[start] == 0) ++start;
    std::vector<size_t> path;
    std::map<size_t, size_t> seen;
    size_t cur = start;
    while (!seen.count(cur)) {
      seen[cur] = path.size();
      path.push_back(cur);
      for (const std::string& in : m_.nodes[cur].inputs)
        if (auto it = ix_.producer.find(in); it != ix_.producer.end() && waiting[it->second] > 0) {
          cur = it->second;
          break;
        }
    }
    std::string cycle;
    for (size_t k = seen[cur]; k < path.size(); ++k) cycle += onnx_node_label(m_.nodes[path[k]]) + " → ";
    cycle += onnx_node_label(m_.nodes[cur]);
    node_error(m_.nodes[cur], ErrorCode::InvalidGraph, "is on a cycle: ", cycle);
  }

  // ---- 3. liveness -------------------------------------------------------------------

  void mark_live() {
    ix_.live.assign(m_.nodes.size(), false);
    std::vector<std::string> stack;
    for (const OnnxValueInfo& out : m_.outputs) {
      stack.push_back(out.name);
      ++ix_.uses[out.name];
    }
    std::set<std::string> visited;
    while (!stack.empty()) {
      std::string v = stack.back();
      stack.pop_back();
      if (!visited.insert(v).second) continue;
      auto it = ix_.producer.find(v);
      if (it == ix_.producer.end() || ix_.live[it->second]) continue;
      ix_.live[it->second] = true;
      for (const std::string& in : m_.nodes[it->second].inputs)
        if (!in.empty()) stack.push_back(in);
    }
    for (size_t i = 0; i < m_.nodes.size(); ++i)
      if (ix_.live[i])
        for (const std::string& in : m_.nodes[i].inputs)
          if (!in.empty()) ++ix_.uses[in];
  }

  // ---- 4. operators ------------------------------------------------------------------

  static bool resolved_by_loader(const std::string& op) {
    return op == "Constant" || op == "Identity" || op == "Dropout";
  }

  void check_operators() {
    struct Offender {
      std::string what, first;
      int count = 0;
    };
    std::vector<std::string> order;
    std::map<std::string, Offender> offenders;
    auto add = [&](const std::string& key, const std::string& what, const OnnxNode& n) {
      auto [it, inserted] = offenders.emplace(key, Offender{what, n.name.empty() ? "(unnamed)" : n.name, 0});
      if (inserted) order.push_back(key);
      ++it->second.count;
    };
    for (size_t i : ix_.order) {
      if (!ix_.live[i]) continue;
      const OnnxNode& n = m_.nodes[i];
      const bool local_function =
          std::find(m_.functions.begin(), m_.functions.end(), std::make_pair(n.domain, n.op_type)) != m_.functions.end();
      if (local_function) {
        add(n.domain + "." + n.op_type,
            n.op_type + " (a function the model defines in domain " + (n.domain.empty() ? "ai.onnx" : n.domain) +
                ": fusor does not expand model-local functions; inline them first, e.g. with "
                "onnx.inliner.inline_local_functions)",
            n);
        continue;
      }
      if (!n.domain.empty()) {
        auto it = m_.opsets.find(n.domain);
        add(n.domain + "." + n.op_type,
            n.op_type + " (domain " + n.domain + " " +
                (it == m_.opsets.end() ? std::string("(not imported)") : "version " + std::to_string(it->second)) +
                ": fusor reads only the default domain)",
            n);
        continue;
      }
      if (ix_.opset < 0)
        model_error(ErrorCode::ParseError, "the model imports no default-domain opset, yet ", onnx_node_label(n),
                    " uses it");
      OpKind kind;
      const Composition* composed = composed_operator(n.op_type);
      const bool known = resolved_by_loader(n.op_type) || composed || parse_op_kind(n.op_type, &kind);
      if (!known) {
        add(n.op_type, n.op_type + " (opset " + std::to_string(ix_.opset) + ": not a fusor operator)", n);
        continue;
      }
      const int64_t since = composed ? composed->since_opset : op_since_opset(n.op_type);
      if (ix_.opset < since)
        add(n.op_type,
            n.op_type + " (opset " + std::to_string(ix_.opset) + ": fusor implements it as defined from opset " +
                std::to_string(since) + ")",
            n);
    }
    if (offenders.empty()) return;
    std::vector<std::string> parts;
    for (const std::string& key : order) {
      const Offender& o = offenders[key];
      parts.push_back(o.what + " at " + (o.count == 1 ? "node '" + o.first + "'"
                                                      : std::to_string(o.count) + " nodes, first '" + o.first + "'"));
    }
    model_error(ErrorCode::Unsupported, parts.size(), parts.size() == 1 ? " operator is" : " operators are",
                " not supported: ", joined(parts));
  }

  const OnnxModel& m_;
  const std::string& source_;
  ModelIndex ix_;
};

}  // namespace

ModelIndex index_model(const OnnxModel& model, const std::string& source) { return Indexer(model, source).run(); }

}  // namespace fusor::onnx_import
