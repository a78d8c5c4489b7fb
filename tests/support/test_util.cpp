#include "tests/support/test_util.h"

#include <random>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "codegen/static/static_backend.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "jit/thread_pool.h"

namespace fusor::test {

std::string with(std::string text, const std::map<std::string, std::string>& subst) {
  for (const auto& [key, value] : subst)
    for (size_t p = 0; (p = text.find(key, p)) != std::string::npos; p += value.size()) text.replace(p, key.size(), value);
  return text;
}

std::string unary_graph(const std::string& op, int64_t n) {
  return with("graph g\ninput x: f32[@N@]\ny = " + op + "\noutput y\n", {{"@N@", std::to_string(n)}});
}

std::string two_output_rows_graph(int64_t rows) {
  return with(R"(graph g
input x: f32[@R@, 2049]
input y: f32[2049]
a = Add(x, y)
s = Mul(a, x)
t = Sub(x, y)
u = Relu(t)
output s
output u
)",
              {{"@R@", std::to_string(rows)}});
}

Tensor randn(Shape shape, uint64_t seed, double std, DType dtype) {
  return make_random(dtype, shape, RandomRecipe::normal(seed, std));
}

Tensor uniform(Shape shape, uint64_t seed, double low, double high, DType dtype) {
  return make_random(dtype, shape, RandomRecipe::uniform(seed, low, high));
}

Tensor make(DType dtype, Shape shape, const std::vector<double>& values) {
  return Tensor::from_doubles(dtype, std::move(shape), values);
}

Tensor ints(const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(DType::I64, Shape{int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

double max_abs_diff(const Tensor& got, const Tensor& want) {
  double m = 0;
  for (int64_t i = 0; i < std::min(got.numel(), want.numel()); ++i) m = std::max(m, std::fabs(got.at(i) - want.at(i)));
  return m;
}

std::vector<float> normal_floats(size_t n, uint32_t seed, float std) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, std);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

bool allclose(const Tensor& got, const Tensor& want, double rtol, double atol, std::string* why) {
  std::ostringstream os;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    os << "type differs: got " << got.type_str() << ", want " << want.type_str();
    *why = os.str();
    return false;
  }
  int64_t bad = 0;
  std::vector<std::pair<double, int64_t>> worst;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.at(i), w = want.at(i);
    bool ok;
    if (std::isnan(w)) ok = std::isnan(g);
    else if (std::isinf(w)) ok = g == w;
    else ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      ++bad;
      double err = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
      worst.emplace_back(err, i);
    }
  }
  if (bad == 0) {
    *why = "";
    return true;
  }
  std::sort(worst.begin(), worst.end(), [](auto& a, auto& b) { return a.first > b.first; });
  os << bad << " of " << got.numel() << " elements of " << got.type_str() << " differ (rtol " << rtol << ", atol "
     << atol << "); worst:";
  for (size_t k = 0; k < std::min<size_t>(5, worst.size()); ++k) {
    int64_t i = worst[k].second;
    os << "\n  [" << i << "] got " << got.at(i) << " want " << want.at(i);
  }
  *why = os.str();
  return false;
}

std::vector<Tensor> run_static_op(OpKind op, const std::vector<OpInput>& inputs, const Attributes& attrs,
                                  Parallel& parallel, int outputs) {
  Graph g("single_op");
  std::vector<ValueId> ids;
  std::vector<TensorType> input_types;
  std::vector<const Tensor*> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const OpInput& in = inputs[i];
    std::string name = "in" + std::to_string(i);
    if (in.absent) {
      ids.push_back(kNoValue);
    } else if (in.constant) {
      ids.push_back(g.add_constant(name, in.tensor));
    } else {
      std::vector<Dim> dims;
      for (int64_t d : in.tensor.shape().dims()) dims.emplace_back(d);
      ids.push_back(g.add_input(name, in.tensor.dtype(), dims));
      input_types.push_back(TensorType{in.tensor.dtype(), in.tensor.shape()});
    }
  }
  std::vector<std::string> names;
  if (outputs == 0) outputs = op_schema(op).num_outputs;
  for (int i = 0; i < outputs; ++i) names.push_back("out" + std::to_string(i));
  NodeId n = g.add_node(op, ids, names, attrs, "op");
  for (ValueId o : g.node(n).outputs) g.add_output(o);
  verify(g);
  std::vector<TensorType> types = infer_types(g, input_types);
  StaticKernelArgs args{g.node(n), {}, {}, parallel};
  for (size_t i = 0; i < inputs.size(); ++i) args.inputs.push_back(inputs[i].absent ? nullptr : &inputs[i].tensor);
  std::vector<Tensor> outs;
  for (ValueId o : g.node(n).outputs) outs.push_back(Tensor::empty(types[size_t(o)].dtype, types[size_t(o)].shape));
  for (Tensor& t : outs) args.outputs.push_back(&t);
  run_static_kernel(args);
  return outs;
}

Parallel& pool() {
  static ThreadPool p(3);  // shared by every test of the process; not a cache
  return p;
}

std::vector<Parallel*> parallels() { return {&serial_parallel(), &pool()}; }

std::vector<int64_t> sizes_around(int64_t w) {
  std::vector<int64_t> s{1, w - 1, w, w + 1, 2 * w + 3, 7 * w + 5};
  s.erase(std::remove_if(s.begin(), s.end(), [](int64_t v) { return v < 1; }), s.end());
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

}  // namespace fusor::test
