#include <doctest/doctest.h>

#include <functional>
#include <memory>

#include "ir/error.h"
#include "ir/shape.h"
#include "ir/tensor.h"

using namespace fusor;

TEST_SUITE("ir/shape") {
  TEST_CASE("numel and strides") {
    Shape s{2, 3, 4};
    CHECK(s.rank() == 3);
    CHECK(s.numel() == 24);
    CHECK(s.strides() == std::vector<int64_t>{12, 4, 1});
    CHECK(s[-1] == 4);
    CHECK(Shape{}.numel() == 1);
    CHECK(Shape{3, 0, 5}.numel() == 0);
    CHECK(s.str() == "[2, 3, 4]");
  }

  TEST_CASE("element count overflow is an OutOfMemory error") {
    Shape huge{int64_t(1) << 30, int64_t(1) << 30};
    try {
      (void)huge.numel();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::OutOfMemory);
      CHECK(std::string(e.what()).find("overflows") != std::string::npos);
    }
    CHECK_THROWS_AS(Tensor::empty(DType::F32, Shape{int64_t(1) << 40, int64_t(1) << 40}), Error);
  }

  TEST_CASE("negative dimension is refused") {
    try {
      (void)Shape{2, -1}.numel();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
    }
  }

  TEST_CASE("numpy broadcasting") {
    Shape out;
    CHECK(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}, &out));
    CHECK(out == Shape{2, 3, 4});
    CHECK(broadcast_shapes(Shape{}, Shape{5}, &out));
    CHECK(out == Shape{5});
    CHECK(broadcast_shapes(Shape{0}, Shape{1}, &out));
    CHECK(out == Shape{0});
    CHECK_FALSE(broadcast_shapes(Shape{2, 3}, Shape{4, 3}, &out));
    CHECK(broadcast_strides(Shape{3, 1}, Shape{2, 3, 4}) == std::vector<int64_t>{0, 1, 0});
  }

  TEST_CASE("normalize_axis") {
    int a;
    CHECK(normalize_axis(-1, 3, &a));
    CHECK(a == 2);
    CHECK_FALSE(normalize_axis(3, 3, &a));
    CHECK_FALSE(normalize_axis(-4, 3, &a));
  }
}

TEST_SUITE("ir/tensor") {
  TEST_CASE("owning tensors are aligned and share on copy") {
    Tensor t = Tensor::zeros(DType::F32, Shape{3, 5});
    CHECK(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment == 0);
    CHECK(t.numel() == 15);
    CHECK(t.nbytes() == 60);
    Tensor u = t;
    u.data<float>()[4] = 2.5f;
    CHECK(t.at(4) == 2.5);
    Tensor c = t.clone();
    c.set(4, 1.0);
    CHECK(t.at(4) == 2.5);
    CHECK(t.type_str() == "f32[3, 5]");
  }

  TEST_CASE("borrowed tensors use caller memory") {
    float buf[6] = {1, 2, 3, 4, 5, 6};
    Tensor t = Tensor::borrow(buf, DType::F32, Shape{2, 3});
    CHECK_FALSE(t.owns_memory());
    t.set(0, 9);
    CHECK(buf[0] == 9);
    CHECK_THROWS_AS(Tensor::borrow(nullptr, DType::F32, Shape{2}), Error);
  }

  TEST_CASE("typed access checks the dtype") {
    Tensor t = Tensor::zeros(DType::I64, Shape{2});
    CHECK_NOTHROW(t.data<int64_t>());
    try {
      (void)t.data<float>();
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::DTypeMismatch);
    }
  }

  TEST_CASE("reshaped views keep the buffer and check the count") {
    Tensor t = Tensor::from_doubles(DType::F32, Shape{2, 3}, {0, 1, 2, 3, 4, 5});
    Tensor v = t.reshaped(Shape{3, 2});
    CHECK(v.raw() == t.raw());
    CHECK(v.at(5) == 5);
    CHECK_THROWS_AS(t.reshaped(Shape{4}), Error);
  }

  TEST_CASE("at and set convert every dtype") {
    for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool}) {
      Tensor t = Tensor::zeros(d, Shape{1});
      t.set(0, 1.0);
      CHECK(t.at(0) == 1.0);
    }
  }

  TEST_CASE("a device tensor carries its address and owner and refuses host access") {
    auto owner = std::make_shared<int>(7);
    std::weak_ptr<int> watch = owner;
    Tensor t = Tensor::wrap_device(0x7f0000001000, DType::F16, Shape{2, 3}, owner);
    owner.reset();
    CHECK_FALSE(watch.expired());  // the tensor keeps its allocation alive
    CHECK(t.defined());
    CHECK(t.device() == Device::Cuda);
    CHECK(t.device_address() == 0x7f0000001000);
    CHECK(t.raw() == nullptr);
    CHECK(t.nbytes() == 12);
    Tensor v = t.reshaped(Shape{3, 2});
    CHECK(v.device() == Device::Cuda);
    CHECK(v.device_address() == t.device_address());
    for (auto access : std::initializer_list<std::function<void()>>{[&] { (void)t.at(0); }, [&] { t.set(0, 1.0); },
                                                                  [&] { (void)t.clone(); },
                                                                  [&] { (void)t.data<uint16_t>(); }}) {
      try {
        access();
        FAIL("host access to device memory did not throw");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::InvalidArgument);
        CHECK(std::string(e.what()).find("f16[2, 3] is in cuda device memory") != std::string::npos);
      }
    }
    t = Tensor();
    v = Tensor();
    CHECK(watch.expired());
    CHECK_THROWS_AS(Tensor::wrap_device(0, DType::F32, Shape{4}, nullptr), Error);
    CHECK(Tensor::wrap_device(0, DType::F32, Shape{0}, nullptr).numel() == 0);
    CHECK(Tensor::empty(DType::F32, Shape{1}).device_address() == 0);
  }
}
