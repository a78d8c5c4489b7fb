#include "ir/builder.h"

#include "ir/verifier.h"

namespace fusor {

ValueId GraphBuilder::input(const std::string& name, DType dtype, std::vector<Dim> dims) {
  return g_.add_input(name, dtype, std::move(dims));
}

ValueId GraphBuilder::constant(const std::string& name, Tensor data) { return g_.add_constant(name, std::move(data)); }

ValueId GraphBuilder::randn(const std::string& name, Shape shape, uint64_t seed, double std, double mean,
                            DType dtype) {
  RandomRecipe r = RandomRecipe::normal(seed, std, mean);
  return g_.add_constant(name, make_random(dtype, shape, r), r.str());
}

ValueId GraphBuilder::uniform(const std::string& name, Shape shape, uint64_t seed, double low, double high,
                              DType dtype) {
  RandomRecipe r = RandomRecipe::uniform(seed, low, high);
  return g_.add_constant(name, make_random(dtype, shape, r), r.str());
}

ValueId GraphBuilder::fill(const std::string& name, Shape shape, double value, DType dtype) {
  RandomRecipe r = RandomRecipe::fill(value);
  return g_.add_constant(name, make_random(dtype, shape, r), r.str());
}

ValueId GraphBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
  Tensor t = Tensor::empty(DType::I64, Shape{int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return g_.add_constant(name, std::move(t));
}

ValueId GraphBuilder::op(OpKind kind, std::vector<ValueId> inputs, Attributes attrs, std::string out) {
  std::vector<std::string> outs;
  if (!out.empty()) outs.push_back(std::move(out));
  NodeId n = g_.add_node(kind, std::move(inputs), std::move(outs), std::move(attrs));
  return g_.node(n).outputs[0];
}

ValueId GraphBuilder::conv(ValueId x, ValueId w, ValueId bias, const ConvOptions& o) {
  std::vector<ValueId> ins{x, w};
  if (bias != kNoValue) ins.push_back(bias);
  return op(OpKind::Conv, std::move(ins),
            {{"strides", o.strides}, {"pads", o.pads}, {"dilations", o.dilations}, {"group", o.group}});
}

ValueId GraphBuilder::batchnorm(ValueId x, ValueId scale, ValueId bias, ValueId mean, ValueId var, double eps) {
  return op(OpKind::BatchNormalization, {x, scale, bias, mean, var}, {{"epsilon", eps}});
}

ValueId GraphBuilder::layernorm(ValueId x, ValueId scale, ValueId bias, double eps, int64_t axis) {
  std::vector<ValueId> ins{x, scale};
  if (bias != kNoValue) ins.push_back(bias);
  return op(OpKind::LayerNormalization, std::move(ins), {{"epsilon", eps}, {"axis", axis}});
}

ValueId GraphBuilder::reshape(ValueId x, const std::vector<int64_t>& dims) {
  ValueId shape = ints(g_.unique_name(g_.value(x).name + "_shape"), dims);
  return op(OpKind::Reshape, {x, shape});
}

void GraphBuilder::output(ValueId v) { g_.add_output(v); }

Graph GraphBuilder::build() {
  verify(g_);
  return g_;
}

}  // namespace fusor
