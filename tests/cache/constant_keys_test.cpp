// Tests of the constant-sharing keys (cache/constant_keys.h): a key by storage matches only
// the same storage, whatever the bytes; a key by content matches equal bytes in any storage
// and nothing else (another dtype, shape or byte); a derivation key compares its recipe and
// its sources' storage.
#include <doctest/doctest.h>

#include "cache/constant_keys.h"

using namespace fusor;

namespace {

Tensor filled(Shape shape, float v) {
  Tensor t = Tensor::empty(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

}  // namespace

TEST_SUITE("cache/constant_keys") {
  TEST_CASE("a key by storage matches the same storage and not an equal copy") {
    Tensor a = filled(Shape{64}, 1.0f), copy = a.clone();
    CHECK(PackKey{a, "n16"} == PackKey{a, "n16"});
    CHECK(PackKeyHash()(PackKey{a, "n16"}) == PackKeyHash()(PackKey{a, "n16"}));
    CHECK_FALSE(PackKey{a, "n16"} == PackKey{copy, "n16"});
    CHECK_FALSE(PackKey{a, "n16"} == PackKey{a, "n8"});
    const DeviceConstKey by_storage{a, false, 0};
    CHECK(by_storage == DeviceConstKey{a, false, 0});
    CHECK_FALSE(by_storage == DeviceConstKey{copy, false, 0});
    CHECK_FALSE(by_storage == DeviceConstKey{a, true, content_hash(a)});
  }

  TEST_CASE("a key by content matches equal bytes anywhere and nothing else") {
    Tensor a = filled(Shape{8, 8}, 2.0f), copy = a.clone(), other = a.clone(), reshaped = a.reshaped(Shape{64});
    other.data<float>()[63] = 3.0f;
    auto intern = [](const Tensor& t) { return InternKey{t, content_hash(t)}; };
    CHECK(intern(a) == intern(copy));
    CHECK(InternKeyHash()(intern(a)) == InternKeyHash()(intern(copy)));
    CHECK_FALSE(intern(a) == intern(other));
    CHECK_FALSE(intern(a) == intern(reshaped));  // the same bytes in another shape
    auto device = [](const Tensor& t) { return DeviceConstKey{t, true, content_hash(t)}; };
    CHECK(device(a) == device(copy));
    CHECK(DeviceConstKeyHash()(device(a)) == DeviceConstKeyHash()(device(copy)));
    CHECK_FALSE(device(a) == device(other));
  }

  TEST_CASE("a derivation key compares the recipe and the sources' storage") {
    Tensor w = filled(Shape{4, 4}, 1.0f), copy = w.clone();
    const DerivedKey k{ConstantDerivation{"fold_batchnorm Conv eps=1e-5", {w}}};
    CHECK(k == DerivedKey{ConstantDerivation{"fold_batchnorm Conv eps=1e-5", {w}}});
    CHECK(DerivedKeyHash()(k) == DerivedKeyHash()(DerivedKey{ConstantDerivation{"fold_batchnorm Conv eps=1e-5", {w}}}));
    CHECK_FALSE(k == DerivedKey{ConstantDerivation{"fold_batchnorm Conv eps=1e-3", {w}}});
    CHECK_FALSE(k == DerivedKey{ConstantDerivation{"fold_batchnorm Conv eps=1e-5", {copy}}});
    CHECK_FALSE(k == DerivedKey{ConstantDerivation{"fold_batchnorm Conv eps=1e-5", {w, w}}});
  }
}
