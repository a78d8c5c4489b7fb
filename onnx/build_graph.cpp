#include "onnx/build_graph.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ir/op_schema.h"
#include "ir/verifier.h"
#include "onnx/compositions.h"
#include "onnx/convert_attribute.h"
#include "onnx/index_model.h"
#include "onnx/load_onnx.h"
#include "onnx/onnx_dtype.h"
#include "onnx/op_forms.h"

namespace fusor::onnx_import {

// Note [ONNX import]
// The model is converted in steps, each on the whole graph before the next, so that a
// broken model is refused before any weight is read (steps 1-4 are index_model.cpp's):
// 1. opsets: the default domain's must be at most kOnnxMaxOpset; below kOnnxMinOpset each
//    operator must mean there what fusor implements (op_forms.h, op_since_opset);
// 2. names: every value is defined once (a graph input, an initializer or one node's
//    output; an initializer listed as a graph input, as old exporters write, is a constant),
//    every node input and graph output is defined, and the nodes have no cycle; the nodes
//    are then taken in a topological order (the one of the file when it is one);
// 3. liveness: only the nodes graph outputs depend on are converted (dead code neither
//    costs run time nor fails the load);
// 4. operators: every live node's operator must be one of fusor's (ir/ops.def), one the
//    loader resolves itself (Constant, Identity, Dropout) or one it writes as fusor's
//    (onnx/compositions.h: LogSoftmax, Elu, PRelu, ...), in the default domain, at an
//    opset op_forms.h (or the composition) accepts. All the offenders are named in one
//    Unsupported error;
// 5. conversion: graph inputs (dim_param → named dims, unnamed dynamic dims →
//    "<input>_d<axis>", reported), initializers (decoded when first used), Constant nodes
//    → constants, Identity/Dropout → their input, every other node → a fusor node whose
//    attributes are converted by fusor's schema (ONNX INT where fusor takes a float,
//    Cast's dtype enum → fusor's dtype name) and whose input-or-attribute operands take the
//    form that schema has (input_attribute_forms: an input fusor takes as an attribute must
//    be a constant; an attribute fusor takes as an input becomes a constant). Outputs fusor
//    does not produce (MaxPool's Indices, BatchNormalization's running statistics) must be
//    unused; LayerNormalization's Mean and InvStdDev are computed beside it when used, and
//    Pow's exponent takes the base's dtype when the loader knows both (track_dtype); a
//    composed operator, or a form of one that fusor's kernels lack (a 1-D Conv), becomes
//    the nodes of its body, converted in turn (Note [Compositions]);
// 6. graph outputs keep their ONNX names: when an output is an Identity of another value,
//    that value takes the output's name, or, where it cannot (a graph input, or a value two
//    outputs share), a same-dtype Cast copies it under that name;
// 7. the graph is verified (ir/verifier.h).
// fusor names are [A-Za-z0-9_./:-] (Graph's rule); other characters become '_', and a
// renamed graph input or output is reported through `warn`.

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == ':' || c == '-';
}

std::string sanitize_name(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!is_name_char(c)) c = '_';
  if (out.empty() || out == "_") out = "v" + out;
  return out;
}

// A dim symbol must read as one in the text format and on the command line (--dim NAME=N).
std::string sanitize_symbol(const std::string& s) {
  std::string out;
  for (char c : s) out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
  if (out.empty() || (out[0] >= '0' && out[0] <= '9')) out = "d_" + out;
  return out;
}

// The most outputs a node of `schema` may have. OpSchema::max_outputs (Split's variadic
// outputs) comes with the operators of issue 12's other half; until ir/op_schema.h has it,
// every operator has exactly num_outputs. (Once both halves are in, this is
// `s.max_outputs ? s.max_outputs : s.num_outputs`.)
template <class Schema>
int max_outputs(const Schema& s) {
  if constexpr (requires { s.max_outputs; }) return s.max_outputs ? s.max_outputs : s.num_outputs;
  else return s.num_outputs;
}

class Builder {
 public:
  Builder(const OnnxModel& model, const TensorSource& tensors, const BuildOptions& options)
      : m_(model), tensors_(tensors), o_(options),
        g_(sanitize_name(model.graph_name.empty() ? options.fallback_name : model.graph_name)) {}

  Graph build() {
    ix_ = index_model(m_, o_.source);
    plan_output_names();
    add_inputs();
    for (size_t i : ix_.order)
      if (ix_.live[i]) convert_node(m_.nodes[i]);
    add_outputs();
    try {
      verify(g_);
    } catch (const Error& e) {
      fail(e.code(), o_.source, ": ", e.message());
    }
    return std::move(g_);
  }

 private:
  // ---- messages ----------------------------------------------------------------------

  static std::string label(const OnnxNode& n) { return onnx_node_label(n); }
  template <class... Parts>
  [[noreturn]] void node_error(const OnnxNode& n, ErrorCode code, const Parts&... parts) const {
    fail(code, o_.source, ": ", label(n), ": ", parts...);
  }
  template <class... Parts>
  [[noreturn]] void model_error(ErrorCode code, const Parts&... parts) const {
    fail(code, o_.source, ": ", parts...);
  }
  void warn(const std::string& message) const { o_.warn(o_.source + ": " + message); }

  // ---- 6 (planned before the conversion). output names -------------------------------

  // The value an ONNX name stands for once Identity and Dropout are removed.
  std::string root(std::string name) const {
    for (;;) {
      auto it = ix_.producer.find(name);
      if (it == ix_.producer.end()) return name;
      const OnnxNode& n = m_.nodes[it->second];
      bool passes = n.domain.empty() && (n.op_type == "Identity" || n.op_type == "Dropout") && !n.inputs.empty() &&
                    !n.inputs[0].empty() && !n.outputs.empty() && n.outputs[0] == name;
      if (!passes) return name;
      name = n.inputs[0];
    }
  }

  void plan_output_names() {
    std::set<std::string>& output_names = output_names_;
    for (const OnnxValueInfo& out : m_.outputs) output_names.insert(out.name);
    for (const OnnxValueInfo& out : m_.outputs) reserved_.insert(sanitize_name(out.name));
    for (const OnnxValueInfo& in : m_.inputs)
      if (ix_.is_graph_input(in.name)) reserved_.insert(sanitize_name(in.name));
    for (const OnnxValueInfo& out : m_.outputs) {
      std::string r = root(out.name);
      if (r == out.name) continue;
      const bool renamable = ix_.producer.count(r) && !output_names.count(r) && !preferred_name_.count(r);
      if (renamable) preferred_name_[r] = out.name;
      else copies_.insert(out.name);
    }
  }

  // The fusor name of a new value for ONNX name `onnx_name`. A graph input or output (or
  // the value standing for one, or the copy made for one) owns its sanitized name; other
  // values never take a graph input's or output's name.
  std::string new_value_name(const std::string& onnx_name, bool is_copy = false) {
    std::string want = onnx_name;
    if (auto it = preferred_name_.find(onnx_name); it != preferred_name_.end()) want = it->second;
    const std::string s = sanitize_name(want);
    const bool owner = ix_.is_graph_input(want) || (output_names_.count(want) && (is_copy || !copies_.count(want)));
    if (g_.find_value(s) == kNoValue && (owner || !reserved_.count(s))) return s;
    return fresh_name(s);
  }

  // base_N for the first N (counting on from the last one given for base) whose name is
  // free, so that naming stays linear however many values share a base.
  std::string fresh_name(const std::string& base) {
    for (size_t& i = next_suffix_[base];;) {
      std::string s = base + "_" + std::to_string(++i);
      if (g_.find_value(s) == kNoValue && !reserved_.count(s) && !node_names_.count(s)) return s;
    }
  }

  std::string new_node_name(const OnnxNode& n) {
    std::string base = !n.name.empty() ? sanitize_name(n.name)
                       : (!n.outputs.empty() && !n.outputs[0].empty()) ? sanitize_name(n.outputs[0])
                                                                         : n.op_type;
    std::string s = node_names_.count(base) ? fresh_name(base) : base;
    node_names_.insert(s);
    return s;
  }

  // ---- 5. conversion -----------------------------------------------------------------

  void add_inputs() {
    std::set<std::string> params;
    for (const OnnxValueInfo& in : m_.inputs)
      for (const OnnxDim& d : in.dims)
        if (!d.has_value && !d.param.empty()) params.insert(sanitize_symbol(d.param));
    if (o_.constant_inputs)
      for (const auto& [name, t] : *o_.constant_inputs)
        if (!ix_.is_graph_input(name))
          model_error(ErrorCode::InvalidArgument, "no graph input is named '", name, "' (constant_inputs)");
    for (const OnnxValueInfo& in : m_.inputs) {
      if (!ix_.is_graph_input(in.name)) continue;  // an initializer listed as an input: a constant
      const std::string what = "graph input '" + in.name + "'";
      if (!in.has_type) model_error(ErrorCode::InvalidGraph, what, " has no type");
      if (!in.is_tensor)
        model_error(ErrorCode::Unsupported, what, " is not a tensor (sequences, maps and optionals are not supported)");
      DType dtype;
      if (!fusor_dtype_of(in.elem_type, &dtype))
        model_error(ErrorCode::Unsupported, what, " has dtype ", onnx_dtype_name(in.elem_type),
                    ", which fusor does not support (it takes ", supported_onnx_dtypes(), ")");
      if (!in.has_shape)
        model_error(ErrorCode::Unsupported, what, " has no shape (unknown rank); fusor needs the rank of every input");
      std::vector<Dim> dims;
      for (size_t axis = 0; axis < in.dims.size(); ++axis) {
        const OnnxDim& d = in.dims[axis];
        if (d.has_value) {
          if (d.value < 0) model_error(ErrorCode::ParseError, what, " has dimension ", axis, " = ", d.value);
          dims.emplace_back(d.value);
        } else if (!d.param.empty()) {
          std::string sym = sanitize_symbol(d.param);
          if (sym != d.param)
            warn(what + ": dimension " + std::to_string(axis) + " '" + d.param + "' is named '" + sym +
                 "' (bind it with --dim " + sym + "=SIZE)");
          dims.emplace_back(sym);
        } else {
          std::string sym = sanitize_symbol(in.name + "_d" + std::to_string(axis));
          while (params.count(sym)) sym += "_";
          params.insert(sym);
          warn(what + ": dimension " + std::to_string(axis) + " is dynamic without a name; it is named '" + sym +
               "' (bind it with --dim " + sym + "=SIZE)");
          dims.emplace_back(sym);
        }
      }
      std::string name = new_value_name(in.name);
      if (name != in.name) warn(what + " is named '" + name + "' (fusor names use A-Z a-z 0-9 _ . / : -)");
      if (const Tensor* fixed = constant_input(in.name)) {
        check_constant_input(what, *fixed, dtype, dims);
        values_[in.name] = guard([&] { return g_.add_constant(name, fixed->clone()); });
        continue;
      }
      values_[in.name] = guard([&] { return g_.add_input(name, dtype, std::move(dims)); });
    }
  }

  const Tensor* constant_input(const std::string& name) const {
    if (!o_.constant_inputs) return nullptr;
    auto it = o_.constant_inputs->find(name);
    return it == o_.constant_inputs->end() ? nullptr : &it->second;
  }

  void check_constant_input(const std::string& what, const Tensor& t, DType dtype, const std::vector<Dim>& dims) {
    if (t.dtype() != dtype)
      model_error(ErrorCode::DTypeMismatch, what, " is ", dtype_name(dtype), " but its constant value is ",
                  t.type_str());
    bool fits = t.rank() == int(dims.size());
    for (size_t i = 0; fits && i < dims.size(); ++i)
      fits = dims[i].is_symbolic() || dims[i].size == t.shape()[int(i)];
    if (!fits) {
      std::string declared;
      for (const Dim& d : dims) declared += (declared.empty() ? "" : ", ") + d.str();
      model_error(ErrorCode::ShapeMismatch, what, " is declared [", declared, "] but its constant value is ",
                  t.type_str());
    }
  }

  // Runs f, prefixing a fusor::Error from the graph with the source.
  template <class F>
  auto guard(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error& e) {
      if (e.message().rfind(o_.source + ": ", 0) == 0) throw;
      fail(e.code(), o_.source, ": ", e.message());
    }
  }

  // The fusor value of ONNX name `name` (an initializer becomes a constant when first used).
  ValueId value_of(const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    auto init = ix_.initializer.find(name);
    FUSOR_ASSERT(init != ix_.initializer.end(), "ONNX value '", name, "' used before its definition");
    Tensor t = tensors_.decode(m_.initializers[init->second], "initializer '" + name + "'");
    std::string fname = new_value_name(name);
    ValueId v = guard([&] { return g_.add_constant(fname, std::move(t)); });
    values_[name] = v;
    return v;
  }

  // The dtype of ONNX value `name` when the loader knows it: graph inputs, initializers,
  // constants, and outputs of nodes whose dtype rule (op_forms.h) gives it from those.
  bool known_dtype(const std::string& name, DType* out) const {
    if (name.empty()) return false;
    if (auto it = dtypes_.find(name); it != dtypes_.end()) {
      *out = it->second;
      return true;
    }
    if (auto it = ix_.initializer.find(name); it != ix_.initializer.end())
      return fusor_dtype_of(m_.initializers[it->second].data_type, out);
    if (auto it = values_.find(name); it != values_.end() && g_.value(it->second).kind != ValueKind::NodeOutput) {
      *out = g_.value(it->second).dtype;
      return true;
    }
    return false;
  }

  // Records the dtype of node n's first output by its rule.
  void track_dtype(const OnnxNode& n, const Attributes& attrs) {
    if (n.outputs.empty() || n.outputs[0].empty()) return;
    DType t;
    bool known = false;
    switch (output_dtype_rule(n.op_type)) {
      case OutputDType::Input0: known = !n.inputs.empty() && known_dtype(n.inputs[0], &t); break;
      case OutputDType::Input1: known = n.inputs.size() > 1 && known_dtype(n.inputs[1], &t); break;
      case OutputDType::Bool: t = DType::Bool, known = true; break;
      case OutputDType::Int64: t = DType::I64, known = true; break;
      case OutputDType::DtypeAttribute:
        if (const char* name = dtype_attribute_of(n.op_type)) {
          auto it = attrs.find(name);
          if (it == attrs.end()) t = DType::F32, known = true;
          else if (it->second.type() == AttrType::String) known = parse_dtype(it->second.s(), &t);
        }
        break;
      case OutputDType::Unknown: break;
    }
    if (known) dtypes_[n.outputs[0]] = t;
  }

  const Tensor* constant_of(const std::string& name) {
    if (name.empty()) return nullptr;
    if (!values_.count(name) && !ix_.initializer.count(name)) return nullptr;
    return g_.constant_data(value_of(name));
  }

  void convert_node(const OnnxNode& n) {
    if (n.op_type == "Constant") return convert_constant(n);
    if (n.op_type == "Identity" || n.op_type == "Dropout") return convert_pass_through(n);
    {
      Composer cx(*this, n);
      const Composition* c = composed_operator(n.op_type);
      if (!c) c = composed_form(n, cx);
      if (c) return convert_composed(n, *c, cx);
    }
    OpKind kind;
    FUSOR_ASSERT(parse_op_kind(n.op_type, &kind), "operator checked before conversion: ", n.op_type);
    const OpSchema& schema = op_schema(kind);

    std::vector<ValueId> inputs;
    for (const std::string& in : n.inputs) inputs.push_back(in.empty() ? kNoValue : value_of(in));
    std::vector<bool> drop(inputs.size(), false);
    std::set<std::string> done_attrs;
    Attributes attrs;

    for (const InputAttributeForm& form : input_attribute_forms(n.op_type)) {
      const size_t idx = size_t(form.input);
      const bool has_input = idx < n.inputs.size() && !n.inputs[idx].empty();
      const OnnxAttribute* attr = find_attr(n, form.attr);
      const AttrSpec* spec = find_spec(schema, form.attr);
      const bool schema_takes_input = schema.max_inputs > form.input;
      if (has_input && !schema_takes_input) {
        if (!spec)
          node_error(n, ErrorCode::Unsupported, "input ", idx, " '", n.inputs[idx], "' (", form.attr,
                     "): fusor's ", n.op_type, " takes neither that input nor an attribute '", form.attr, "'");
        const Tensor* t = constant_of(n.inputs[idx]);
        if (!t)
          node_error(n, ErrorCode::Unsupported, "input ", idx, " '", n.inputs[idx], "' (", form.attr,
                     ") must be a constant (an initializer or a Constant's output): fusor's ", n.op_type,
                     " takes ", form.attr, " as an attribute");
        attrs[std::string(form.attr)] = attribute_from_tensor(n, *t, *spec, form.attr);
        drop[idx] = true;
      } else if (attr && !spec) {
        done_attrs.insert(attr->name);
        if (!schema_takes_input)
          node_error(n, ErrorCode::Unsupported, "attribute '", form.attr, "': fusor's ", n.op_type,
                     " takes neither that attribute nor an input for it");
        if (has_input)
          node_error(n, ErrorCode::InvalidGraph, "'", form.attr, "' is given both as input ", idx,
                     " and as an attribute");
        if (inputs.size() <= idx) {
          inputs.resize(idx + 1, kNoValue);
          drop.resize(idx + 1, false);
        }
        inputs[idx] = constant_from_attribute(n, *attr);
      }
    }
    for (size_t k = drop.size(); k-- > 0;) {
      if (!drop[k]) continue;
      for (size_t j = k + 1; j < inputs.size(); ++j)
        if (!drop[j] && inputs[j] != kNoValue)
          node_error(n, ErrorCode::Unsupported, "fusor's ", n.op_type, " takes input ", k,
                     " as an attribute but input ", j, " as an input; the loader cannot shift the inputs");
      inputs.resize(k);
    }
    while (!inputs.empty() && inputs.back() == kNoValue) inputs.pop_back();
    if (kind == OpKind::Pow && inputs.size() == 2) inputs[1] = exponent_in_base_dtype(n, inputs[1]);

    for (const OnnxAttribute& a : n.attrs) {
      if (done_attrs.count(a.name)) continue;
      if (!a.ref_attr_name.empty())
        node_error(n, ErrorCode::Unsupported, "attribute '", a.name, "' refers to a function attribute ('",
                   a.ref_attr_name, "')");
      const AttrSpec* spec = find_spec(schema, a.name);
      if (!spec) {
        if (droppable_attribute(n.op_type, a.name, a.type == OnnxAttrType::Int, a.i)) continue;
        std::string known;
        for (const AttrSpec& s : schema.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
        node_error(n, ErrorCode::Unsupported, "attribute '", a.name, "' is not supported (fusor's ", n.op_type,
                   " takes: ", known.empty() ? "none" : known, ")");
      }
      attrs[a.name] = convert_attribute(n, a, *spec);
      // A tensor that became a number leaves its dtype behind, unless fusor keeps it too.
      const char* dtype_attr = a.type == OnnxAttrType::Tensor ? tensor_dtype_attribute(n.op_type, a.name) : nullptr;
      if (dtype_attr && find_spec(schema, dtype_attr) && !find_attr(n, dtype_attr)) {
        DType t;
        if (!fusor_dtype_of(a.tensor.data_type, &t))
          node_error(n, ErrorCode::Unsupported, "attribute '", a.name, "' has dtype ",
                     onnx_dtype_name(a.tensor.data_type), " (fusor takes ", supported_onnx_dtypes(), ")");
        attrs[dtype_attr] = std::string(dtype_name(t));
      }
    }

    std::vector<std::string> out_names;
    const int most_outputs = max_outputs(schema);
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& out = n.outputs[k];
      if (int(k) < most_outputs) {
        out_names.push_back(out.empty() ? fresh_name(new_node_name_base(n) + "_unused") : new_value_name(out));
      } else if (!out.empty() && ix_.used(out) && !(kind == OpKind::LayerNormalization && k <= 2)) {
        node_error(n, ErrorCode::Unsupported, "output ", k, " '", out, "' is used, but fusor's ", n.op_type,
                   " produces only ", most_outputs, " output", most_outputs == 1 ? "" : "s");
      }
    }
    if (kind == OpKind::LayerNormalization) layernorm_statistics(n, inputs, attrs);
    while (int(out_names.size()) < schema.num_outputs)
      out_names.push_back(fresh_name(new_node_name_base(n) + "_unused"));
    std::string node_name = new_node_name(n);
    NodeId id = guard([&] { return g_.add_node(kind, inputs, out_names, attrs, node_name); });
    const Node& made = g_.node(id);
    for (size_t k = 0; k < n.outputs.size() && k < made.outputs.size(); ++k)
      if (!n.outputs[k].empty()) values_[n.outputs[k]] = made.outputs[k];
    track_dtype(n, attrs);
  }

  // ---- compositions (Note [Compositions] in onnx/compositions.cpp) -----------------------

  // What a composition of node n asks of the loader.
  class Composer final : public CompositionContext {
   public:
    Composer(Builder& b, const OnnxNode& n) : b_(b), n_(n) {}

    std::string fresh(std::string_view what) override {
      const std::string base = n_.outputs.empty() || n_.outputs[0].empty() ? n_.op_type : n_.outputs[0];
      for (size_t& i = b_.next_composed_[base];;) {
        std::string s = base + "/" + std::string(what) + "_" + std::to_string(++i);
        if (!b_.ix_.producer.count(s) && !b_.ix_.initializer.count(s) && !b_.ix_.declared_inputs.count(s) &&
            !b_.values_.count(s))
          return s;
      }
    }
    std::string scalar(double value, const std::string& like) override {
      DType d = DType::F32;
      if (DType t; b_.known_dtype(like, &t) && is_floating(t)) d = t;
      return add(Tensor::from_doubles(d, Shape{}, {value}), "const");
    }
    std::string ints(const std::vector<int64_t>& values) override {
      Tensor t = Tensor::empty(DType::I64, Shape{int64_t(values.size())});
      std::copy(values.begin(), values.end(), t.data<int64_t>());
      return add(std::move(t), "ints");
    }
    std::string int_scalar(int64_t value) override {
      Tensor t = Tensor::empty(DType::I64, Shape{});
      t.data<int64_t>()[0] = value;
      return add(std::move(t), "int");
    }
    int64_t known_numel(const std::string& name) override {
      const std::optional<std::vector<int64_t>> dims = constant_dims(name);
      if (!dims) return -1;
      int64_t n = 1;
      for (int64_t d : *dims) n *= d;
      return n;
    }
    int64_t known_length(const std::string& name) override {
      if (int64_t n = known_numel(name); n >= 0) return n;
      auto p = b_.ix_.producer.find(name);
      if (p == b_.ix_.producer.end()) return -1;
      const OnnxNode& m = b_.m_.nodes[p->second];
      if (!m.domain.empty() || m.inputs.empty()) return -1;
      if (m.op_type == "Cast" || m.op_type == "Identity") return known_length(m.inputs[0]);
      if (m.op_type == "Concat") {
        int64_t total = 0;
        for (const std::string& in : m.inputs) {
          const int64_t k = in.empty() ? -1 : known_length(in);
          if (k < 0) return -1;
          total += k;
        }
        return total;
      }
      if (m.op_type == "Shape") {
        const int64_t rank = known_rank(m.inputs[0]);
        if (rank < 0) return -1;
        int64_t start = 0, end = rank;
        for (const OnnxAttribute& a : m.attrs) {
          if (a.name == "start") start = a.i < 0 ? std::max<int64_t>(0, a.i + rank) : std::min(a.i, rank);
          if (a.name == "end") end = a.i < 0 ? std::max<int64_t>(0, a.i + rank) : std::min(a.i, rank);
        }
        return std::max<int64_t>(0, end - start);
      }
      if (m.op_type == "Slice") {
        // One axis, step 1, constant bounds (inputs from opset 10, attributes before).
        auto bound = [&](size_t input, const char* attr, int64_t* out) {
          if (m.inputs.size() > input && !m.inputs[input].empty()) {
            const Tensor* t = b_.constant_of(m.inputs[input]);
            if (!t || t->numel() != 1) return false;
            *out = int64_t(t->at(0));
            return true;
          }
          for (const OnnxAttribute& a : m.attrs)
            if (a.name == attr && a.ints.size() == 1) return *out = a.ints[0], true;
          return false;
        };
        int64_t start = 0, end = 0, axis = 0, step = 1;
        if (!bound(1, "starts", &start) || !bound(2, "ends", &end)) return -1;
        if ((bound(3, "axes", &axis) && axis != 0 && axis != -1) || (bound(4, "steps", &step) && step != 1)) return -1;
        const int64_t data = known_length(m.inputs[0]);
        constexpr int64_t kToEnd = int64_t(1) << 40;  // "to the end", as exporters write INT64_MAX
        if (data >= 0) {
          auto clamp = [&](int64_t v) { return v < 0 ? std::max<int64_t>(0, v + data) : std::min(v, data); };
          return std::max<int64_t>(0, clamp(end) - clamp(start));
        }
        // A shape of unknown rank: the length the bounds give when the rank covers them.
        if (start >= 0 && end >= start && end < kToEnd) return end - start;
        if (start < 0 && start > -kToEnd && end >= kToEnd) return -start;
        return -1;
      }
      return -1;
    }
    bool known_dtype(const std::string& name, DType* out) override { return b_.known_dtype(name, out); }
    Tensor constant_copy(const std::string& name) override {
      // An initializer not converted yet is decoded here alone: the original never joins the graph.
      if (auto init = b_.ix_.initializer.find(name); init != b_.ix_.initializer.end() && !b_.values_.count(name))
        return b_.tensors_.decode(b_.m_.initializers[init->second], "initializer '" + name + "'");
      if (const Tensor* c = b_.constant_of(name)) return c->clone();
      return Tensor();
    }
    std::string constant(Tensor t, std::string_view what) override { return add(std::move(t), what); }
    int known_rank(const std::string& name) override {
      if (const OnnxValueInfo* in = declared_input(name)) return int(in->dims.size());
      const std::optional<std::vector<int64_t>> dims = constant_dims(name);
      return dims ? int(dims->size()) : -1;
    }
    std::vector<int64_t> known_dims(const std::string& name) override {
      if (const OnnxValueInfo* in = declared_input(name)) {
        std::vector<int64_t> dims;
        for (const OnnxDim& d : in->dims) {
          if (!d.has_value) return {};
          dims.push_back(d.value);
        }
        return dims;
      }
      return constant_dims(name).value_or(std::vector<int64_t>{});
    }
    bool used(const std::string& name) const override { return b_.ix_.used(name); }
    [[noreturn]] void fail(ErrorCode code, const std::string& message) const override {
      b_.node_error(n_, code, message);
    }

   private:
    // Graph input `name` with a declared shape, or null.
    const OnnxValueInfo* declared_input(const std::string& name) const {
      if (!b_.ix_.is_graph_input(name)) return nullptr;
      for (const OnnxValueInfo& in : b_.m_.inputs)
        if (in.name == name && in.has_shape) return &in;
      return nullptr;
    }
    // The dims of constant `name` (an initializer or a converted constant), read without
    // decoding it.
    std::optional<std::vector<int64_t>> constant_dims(const std::string& name) const {
      if (auto init = b_.ix_.initializer.find(name); init != b_.ix_.initializer.end())
        return b_.m_.initializers[init->second].dims;
      if (auto it = b_.values_.find(name); it != b_.values_.end())
        if (const Tensor* t = b_.g_.constant_data(it->second)) return t->shape().dims();
      return std::nullopt;
    }
    std::string add(Tensor t, std::string_view what) {
      std::string onnx_name = fresh(what);
      std::string name = b_.fresh_name(b_.new_node_name_base(n_) + "_" + std::string(what));
      b_.values_[onnx_name] = b_.guard([&] { return b_.g_.add_constant(name, std::move(t)); });
      return onnx_name;
    }

    Builder& b_;
    const OnnxNode& n_;
  };

  // Node n as its composition's nodes, each converted as a model's node is.
  void convert_composed(const OnnxNode& n, const Composition& c, Composer& cx) {
    for (const OnnxNode& m : c.body(n, cx)) {
      try {
        convert_node(m);
      } catch (const Error& e) {
        fail(e.code(), e.message(), " (", label(n), " is computed as fusor's ", m.op_type, " and other operators)");
      }
    }
  }

  // ONNX's Pow takes an exponent of any numeric dtype; fusor's takes the base's. When both
  // dtypes are known here (known_dtype) and differ, the exponent is converted: a constant's
  // data directly, anything else through a Cast. (Unknown dtypes are left to fusor's shape
  // inference, which names the mismatch.)
  ValueId exponent_in_base_dtype(const OnnxNode& n, ValueId exponent) {
    DType base, ex;
    if (!known_dtype(n.inputs[0], &base) || !is_floating(base) || !known_dtype(n.inputs[1], &ex) || ex == base)
      return exponent;
    const std::string name = fresh_name(new_node_name_base(n) + "_exponent");
    if (const Tensor* t = g_.constant_data(exponent)) {
      Tensor converted = Tensor::empty(base, t->shape());
      for (int64_t i = 0; i < t->numel(); ++i) converted.set(i, t->at(i));
      return guard([&] { return g_.add_constant(name, std::move(converted)); });
    }
    OnnxNode cast;
    cast.name = name;
    std::string node_name = new_node_name(cast);
    NodeId id = guard([&] {
      return g_.add_node(OpKind::Cast, {exponent}, {name}, {{"to", std::string(dtype_name(base))}}, node_name);
    });
    return g_.node(id).outputs[0];
  }

  // Adds a fusor node of the loader's own making: its name and output's derive from n's
  // (or the output is ONNX value `onnx_out`, named as such).
  ValueId add_op(const OnnxNode& n, OpKind kind, std::vector<ValueId> inputs, Attributes attrs, const std::string& what,
                 const std::string& onnx_out = "") {
    std::string out = onnx_out.empty() ? fresh_name(new_node_name_base(n) + "_" + what) : new_value_name(onnx_out);
    OnnxNode named;
    named.name = new_node_name_base(n) + "_" + what;
    std::string node_name = new_node_name(named);
    NodeId id = guard([&] { return g_.add_node(kind, std::move(inputs), {out}, std::move(attrs), node_name); });
    ValueId v = g_.node(id).outputs[0];
    if (!onnx_out.empty()) values_[onnx_out] = v;
    return v;
  }

  ValueId scalar_constant(const OnnxNode& n, const std::string& what, float value) {
    std::string name = fresh_name(new_node_name_base(n) + "_" + what);
    return guard([&] { return g_.add_constant(name, Tensor::from_doubles(DType::F32, Shape{}, {value})); });
  }

  // LayerNormalization's optional outputs Mean and InvStdDev (training aids fusor's
  // LayerNormalization does not produce; the ONNX tests read them): computed beside it as
  // ReduceMean(X) and 1 / Sqrt(ReduceMean((X - Mean)^2) + epsilon) over axes [axis, rank),
  // in f32 (stash_type 1). The axes need X's rank, known here for a graph input or a
  // constant; otherwise the outputs stay unsupported.
  void layernorm_statistics(const OnnxNode& n, const std::vector<ValueId>& inputs, const Attributes& attrs) {
    const bool mean_used = n.outputs.size() > 1 && ix_.used(n.outputs[1]);
    const bool inv_used = n.outputs.size() > 2 && ix_.used(n.outputs[2]);
    if (!mean_used && !inv_used) return;
    if (inputs.empty() || inputs[0] == kNoValue) node_error(n, ErrorCode::InvalidGraph, "required input 0 (X) is missing");
    const ValueId x = inputs[0];
    const Value& xv = g_.value(x);
    if (xv.kind == ValueKind::NodeOutput || !is_floating(xv.dtype))
      node_error(n, ErrorCode::Unsupported, "its Mean or InvStdDev output is used; fusor computes them only for an X ",
                 "of known rank (a graph input or a constant) and floating dtype");
    const int rank = int(xv.dims.size());
    auto attr_or = [&](const char* name, Attribute fallback) {
      auto it = attrs.find(name);
      return it == attrs.end() ? fallback : it->second;
    };
    const int64_t axis_attr = attr_or("axis", int64_t(-1)).i();
    const int64_t axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
    if (axis < 0 || axis >= rank)
      node_error(n, ErrorCode::InvalidGraph, "axis ", axis_attr, " is out of range for rank ", rank);
    if (attr_or("stash_type", int64_t(1)).i() != 1)
      node_error(n, ErrorCode::Unsupported, "stash_type other than 1 (f32) for the Mean and InvStdDev outputs");
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
    const Attributes reduce{{"axes", axes}, {"keepdims", int64_t(1)}};
    ValueId xf = xv.dtype == DType::F32 ? x : add_op(n, OpKind::Cast, {x}, {{"to", "f32"}}, "x_f32");
    const std::string mean_name = mean_used ? n.outputs[1] : "";
    ValueId mean = add_op(n, OpKind::ReduceMean, {xf}, reduce, "mean", mean_name);
    if (!inv_used) return;
    ValueId d = add_op(n, OpKind::Sub, {xf, mean}, {}, "centered");
    ValueId var = add_op(n, OpKind::ReduceMean, {add_op(n, OpKind::Mul, {d, d}, {}, "squares")}, reduce, "variance");
    const double eps = attr_or("epsilon", 1e-5).f();
    ValueId sd = add_op(n, OpKind::Sqrt, {add_op(n, OpKind::Add, {var, scalar_constant(n, "epsilon", float(eps))}, {}, "var_eps")},
                        {}, "stddev");
    add_op(n, OpKind::Div, {scalar_constant(n, "one", 1.f), sd}, {}, "inv_stddev", n.outputs[2]);
  }

  std::string new_node_name_base(const OnnxNode& n) const { return sanitize_name(n.name.empty() ? n.op_type : n.name); }

  static const OnnxAttribute* find_attr(const OnnxNode& n, std::string_view name) {
    for (const OnnxAttribute& a : n.attrs)
      if (a.name == name) return &a;
    return nullptr;
  }
  static const AttrSpec* find_spec(const OpSchema& s, std::string_view name) {
    for (const AttrSpec& a : s.attrs)
      if (a.name == name) return &a;
    return nullptr;
  }

  Tensor decode_attr_tensor(const OnnxNode& n, const OnnxAttribute& a) {
    if (a.tensor.index < 0) node_error(n, ErrorCode::ParseError, "attribute '", a.name, "' is a TENSOR without a tensor");
    return tensors_.decode(a.tensor, label(n) + ": attribute '" + a.name + "'");
  }
  Attribute convert_attribute(const OnnxNode& n, const OnnxAttribute& a, const AttrSpec& spec) {
    return onnx_import::convert_attribute(n, a, spec, o_.source + ": " + label(n),
                                          [&] { return decode_attr_tensor(n, a); });
  }
  Attribute attribute_from_tensor(const OnnxNode& n, const Tensor& t, const AttrSpec& spec, std::string_view what) {
    return onnx_import::attribute_from_tensor(n, t, spec, what, o_.source + ": " + label(n));
  }

  // An ONNX attribute fusor takes as an input: a constant of ONNX's type for it (i64 for
  // integers; for a float, the dtype of input 0 when known, else f32).
  ValueId constant_from_attribute(const OnnxNode& n, const OnnxAttribute& a) {
    Tensor t;
    switch (a.type) {
      case OnnxAttrType::Int:
        t = Tensor::empty(DType::I64, Shape{});
        t.data<int64_t>()[0] = a.i;
        break;
      case OnnxAttrType::Ints:
        t = Tensor::empty(DType::I64, Shape{int64_t(a.ints.size())});
        std::copy(a.ints.begin(), a.ints.end(), t.data<int64_t>());
        break;
      case OnnxAttrType::Float: {
        DType d = DType::F32;
        if (!n.inputs.empty() && known_dtype(n.inputs[0], &d) && !is_floating(d)) d = DType::F32;
        t = Tensor::from_doubles(d, Shape{}, {a.f});
        break;
      }
      case OnnxAttrType::Floats:
        t = Tensor::from_doubles(DType::F32, Shape{int64_t(a.floats.size())}, a.floats);
        break;
      default:
        node_error(n, ErrorCode::Unsupported, "attribute '", a.name, "' of type ", onnx_attr_type_name(a.type),
                   " cannot become an input");
    }
    std::string name = fresh_name(new_node_name_base(n) + "_" + a.name);
    return guard([&] { return g_.add_constant(name, std::move(t)); });
  }

  void convert_constant(const OnnxNode& n) {
    if (n.outputs.size() != 1 || n.outputs[0].empty()) node_error(n, ErrorCode::InvalidGraph, "must have one output");
    if (!n.inputs.empty()) node_error(n, ErrorCode::InvalidGraph, "takes no inputs, has ", n.inputs.size());
    if (n.attrs.size() != 1)
      node_error(n, ErrorCode::InvalidGraph, "must have exactly one attribute (value, value_float, ...), has ",
                 n.attrs.size());
    const OnnxAttribute& a = n.attrs[0];
    Tensor t;
    auto want = [&](OnnxAttrType type) {
      if (a.type != type)
        node_error(n, ErrorCode::InvalidGraph, "attribute '", a.name, "' is ", onnx_attr_type_name(a.type),
                   ", not ", onnx_attr_type_name(type));
    };
    if (a.name == "value") {
      want(OnnxAttrType::Tensor);
      t = decode_attr_tensor(n, a);
    } else if (a.name == "value_float") {
      want(OnnxAttrType::Float);
      t = Tensor::from_doubles(DType::F32, Shape{}, {a.f});
    } else if (a.name == "value_floats") {
      want(OnnxAttrType::Floats);
      t = Tensor::from_doubles(DType::F32, Shape{int64_t(a.floats.size())}, a.floats);
    } else if (a.name == "value_int") {
      want(OnnxAttrType::Int);
      t = Tensor::empty(DType::I64, Shape{});
      t.data<int64_t>()[0] = a.i;
    } else if (a.name == "value_ints") {
      want(OnnxAttrType::Ints);
      t = Tensor::empty(DType::I64, Shape{int64_t(a.ints.size())});
      std::copy(a.ints.begin(), a.ints.end(), t.data<int64_t>());
    } else if (a.name == "value_string" || a.name == "value_strings") {
      node_error(n, ErrorCode::Unsupported, "string constants are not supported");
    } else if (a.name == "sparse_value") {
      node_error(n, ErrorCode::Unsupported, "sparse constants are not supported");
    } else {
      node_error(n, ErrorCode::InvalidGraph, "unknown attribute '", a.name, "'");
    }
    std::string name = new_value_name(n.outputs[0]);
    values_[n.outputs[0]] = guard([&] { return g_.add_constant(name, std::move(t)); });
  }

  void convert_pass_through(const OnnxNode& n) {
    if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.empty() || n.outputs[0].empty())
      node_error(n, ErrorCode::InvalidGraph, "needs an input and an output");
    if (n.op_type == "Identity" && (n.inputs.size() != 1 || n.outputs.size() != 1))
      node_error(n, ErrorCode::InvalidGraph, "takes one input and one output");
    if (n.op_type == "Dropout") {
      if (n.inputs.size() > 3 || n.outputs.size() > 2)
        node_error(n, ErrorCode::InvalidGraph, "takes at most 3 inputs and 2 outputs");
      if (n.inputs.size() == 3 && !n.inputs[2].empty()) {
        const Tensor* mode = constant_of(n.inputs[2]);
        if (!mode || mode->numel() != 1 || mode->dtype() != DType::Bool)
          node_error(n, ErrorCode::Unsupported, "training_mode '", n.inputs[2],
                     "' must be a constant bool (fusor runs inference)");
        if (mode->at(0) != 0) node_error(n, ErrorCode::Unsupported, "training_mode is true; fusor runs inference");
      }
      if (n.outputs.size() == 2 && !n.outputs[1].empty() && ix_.used(n.outputs[1]))
        node_error(n, ErrorCode::Unsupported, "its mask output '", n.outputs[1], "' is used (fusor runs inference)");
    }
    values_[n.outputs[0]] = value_of(n.inputs[0]);
    DType t;
    if (known_dtype(n.inputs[0], &t)) dtypes_[n.outputs[0]] = t;
  }

  void add_outputs() {
    for (const OnnxValueInfo& out : m_.outputs) {
      ValueId v = value_of(out.name);
      if (copies_.count(out.name)) {
        DType dtype = g_.value(v).dtype;
        if (g_.value(v).kind == ValueKind::NodeOutput) {
          if (!out.has_type || !out.is_tensor || !fusor_dtype_of(out.elem_type, &dtype))
            model_error(ErrorCode::InvalidGraph, "graph output '", out.name,
                        "' repeats another value and has no tensor type of a dtype fusor supports");
        }
        std::string name = new_value_name(out.name, /*is_copy=*/true);
        OnnxNode copy;
        copy.op_type = "Cast";
        copy.name = out.name + "_copy";
        std::string node_name = new_node_name(copy);
        NodeId id = guard([&] {
          return g_.add_node(OpKind::Cast, {v}, {name}, {{"to", std::string(dtype_name(dtype))}}, node_name);
        });
        v = g_.node(id).outputs[0];
      }
      const std::string& fname = g_.value(v).name;
      if (fname != out.name)
        warn("graph output '" + out.name + "' is named '" + fname + "' (fusor names use A-Z a-z 0-9 _ . / : -)");
      guard([&] {
        g_.add_output(v);
        return 0;
      });
    }
  }

  const OnnxModel& m_;
  const TensorSource& tensors_;
  const BuildOptions& o_;
  Graph g_;
  ModelIndex ix_;
  std::map<std::string, ValueId> values_;       // ONNX name -> fusor value
  std::map<std::string, DType> dtypes_;         // node outputs whose dtype the loader knows
  std::map<std::string, std::string> preferred_name_;  // root value -> graph output name it takes
  std::set<std::string> copies_;                // graph outputs that need a copy of their value
  std::set<std::string> output_names_;          // ONNX names of the graph outputs
  std::set<std::string> reserved_;              // fusor names of graph inputs and outputs
  std::set<std::string> node_names_;
  std::map<std::string, size_t> next_suffix_;   // fresh_name's counters
  std::map<std::string, size_t> next_composed_; // Composer::fresh's counters
};

}  // namespace

Graph build_graph(const OnnxModel& model, const TensorSource& tensors, const BuildOptions& options) {
  return Builder(model, tensors, options).build();
}

}  // namespace fusor::onnx_import
