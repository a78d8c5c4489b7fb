#include "jit/shared_constants.h"


namespace fusor {

SharedConstants::SharedConstants(uint64_t budget_bytes)
    : derived_({budget_bytes, nullptr, nullptr}),
      interned_({budget_bytes, nullptr, nullptr}),
      packed_({budget_bytes, nullptr, nullptr}) {}

std::vector<Tensor> SharedConstants::derive(const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make,
                                            SharedStorage* shared) {
  std::shared_ptr<const DerivedTensors> r = derived_.get_or_build(DerivedKey{d}, [&] {
    auto v = std::make_shared<DerivedTensors>();
    v->tensors = make();
    uint64_t bytes = sizeof(DerivedTensors);
    for (const Tensor& t : v->tensors) bytes += t.nbytes();
    return SizedValue<DerivedTensors>{v, bytes};
  });
  if (shared)
    for (const Tensor& t : r->tensors) shared->insert(t.raw());
  return r->tensors;
}

void SharedConstants::intern(SharedStorage* shared, Graph& g) {
  for (size_t v = 0; v < g.values().size(); ++v) {
    const Tensor* c = g.constant_data(ValueId(v));
    if (!c || shared->count(c->raw()) || c->nbytes() < kInternMinBytes) continue;
    InternKey key{*c, content_hash(*c)};
    std::shared_ptr<const Tensor> copy = interned_.get_or_build(key, [&] {
      return SizedValue<Tensor>{std::make_shared<Tensor>(*c), uint64_t(c->nbytes())};
    });
    if (copy->raw() != c->raw()) g.share_constant_data(ValueId(v), *copy);
    shared->insert(copy->raw());
  }
}

std::shared_ptr<const Tensor> SharedConstants::packed(const CompiledKernel& k, const CompiledKernel::Prepack& p,
                                                      const Tensor& c) {
  PackKey key{c, k.layout(p)};
  return packed_.get_or_build(key, [&] {
    auto t = std::make_shared<Tensor>(Tensor::empty(DType::F32, Shape{p.floats}));
    k.pack(p, c.data<float>(), t->data<float>());
    return SizedValue<Tensor>{t, uint64_t(t->nbytes())};
  });
}

uint64_t SharedConstants::bytes() const {
  return derived_.stats().bytes + interned_.stats().bytes + packed_.stats().bytes;
}

}  // namespace fusor
