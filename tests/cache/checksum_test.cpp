// Tests of checksum64 (cache/checksum.h) against the reference XXH64 values.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cache/checksum.h"

using namespace fusor;

TEST_SUITE("cache/checksum") {
  TEST_CASE("checksum64 is XXH64") {
    // Reference values from the xxHash library (libxxhash XXH64).
    CHECK(checksum64("", 0) == 0xef46db3751d8e999ull);
    CHECK(checksum64("a", 1) == 0xd24ec4f1a98c6e5bull);
    CHECK(checksum64("abc", 3) == 0x44bc2cf5ad770999ull);
    CHECK(checksum64("abcd", 4) == 0xde0327b0d25d92ccull);
    std::string s46 = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
    CHECK(checksum64(s46.data(), s46.size()) == 0x4efdb622d9f95091ull);
    CHECK(checksum64(s46.data(), s46.size(), 0x9E3779B185EBCA8Dull) == 0xa984afc92d73cdb1ull);
    std::vector<uint8_t> r(200);
    for (size_t i = 0; i < r.size(); ++i) r[i] = uint8_t(i);
    CHECK(checksum64(r.data(), r.size(), 7) == 0x38095d110db174ccull);
  }
}
