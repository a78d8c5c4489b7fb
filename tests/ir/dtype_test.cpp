#include <doctest/doctest.h>

#include <cmath>

#include "ir/dtype.h"

using namespace fusor;

TEST_SUITE("ir/dtype") {
  TEST_CASE("dtype names round trip") {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool}) {
      DType back;
      REQUIRE(parse_dtype(dtype_name(t), &back));
      CHECK(back == t);
    }
    DType x;
    CHECK_FALSE(parse_dtype("float", &x));
  }
}

TEST_SUITE("ir/dtype") {
  TEST_CASE("f16 conversion is exact on representable values and rounds to nearest even") {
    // Every half bit pattern converts to float and back unchanged (NaNs stay NaN).
    for (uint32_t h = 0; h < 0x10000; ++h) {
      float f = f16_to_f32(uint16_t(h));
      uint16_t back = f32_to_f16(f);
      if (std::isnan(f)) {
        CHECK(std::isnan(f16_to_f32(back)));
      } else {
        CHECK(back == h);
      }
    }
    CHECK(f32_to_f16(65504.0f) == 0x7bff);
    CHECK(f32_to_f16(65520.0f) == 0x7c00);          // rounds up to inf
    CHECK(f32_to_f16(65519.0f) == 0x7bff);
    CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);  // tie: to even
    CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);  // tie: to even (up)
    CHECK(f32_to_f16(5.9604645e-8f) == 0x0001);       // smallest subnormal
    CHECK(f32_to_f16(2.9802322e-8f) == 0x0000);       // half of it: tie to even (zero)
    CHECK(f32_to_f16(-0.0f) == 0x8000);
  }

  TEST_CASE("bf16 conversion rounds to nearest even and keeps NaN") {
    for (uint32_t h = 0; h < 0x10000; ++h) {
      float f = bf16_to_f32(uint16_t(h));
      if (std::isnan(f)) CHECK(std::isnan(bf16_to_f32(f32_to_bf16(f))));
      else CHECK(f32_to_bf16(f) == h);
    }
    CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80);  // tie to even
    CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82);
    CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::bit_cast<float>(0x7f800001u)))));
  }

  TEST_CASE("dtype sizes") {
    CHECK(dtype_size(DType::F32) == 4);
    CHECK(dtype_size(DType::F16) == 2);
    CHECK(dtype_size(DType::BF16) == 2);
    CHECK(dtype_size(DType::I64) == 8);
    CHECK(dtype_size(DType::I32) == 4);
    CHECK(dtype_size(DType::Bool) == 1);
  }
}
