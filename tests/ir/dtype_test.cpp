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
