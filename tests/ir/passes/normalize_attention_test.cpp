#include <doctest/doctest.h>

#include "ir/passes/normalize_attention.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

namespace {

// torch's exported scaled_dot_product_attention (Note [Exported attention]).
const char* const kExported = R"(
graph sdpa
input q: f32[1, 2, T, 8]
input k: f32[1, 2, 8, T]
input v: f32[1, 2, T, 8]
input mask: f32[1, 1, T, T]
const c: f32[] = [0.5]
const zero: f32[] = [0.0]
qs = Mul(q, c)
ks = Mul(c, k)
s = MatMul(qs, ks)
m = Add(s, mask)
p = Softmax(m) {axis=-1}
n = IsNaN(p)
g = Where(n, zero, p)
o = MatMul(g, v)
output o
)";

}  // namespace

TEST_SUITE("ir/passes/normalize_attention") {
  TEST_CASE("scales move behind Q·Kᵀ and the NaN guard behind ·V") {
    Graph before = test::trace_text(kExported, {{"T", 5}});
    FusionLog log;
    Graph after = normalize_attention(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("s_unscaled = MatMul(q, k)\n"
                                   "s = Mul(s_unscaled, s_scale)\n"
                                   "m = Add(s, mask)\n"
                                   "p = Softmax(m)\n"
                                   "o_unguarded = MatMul(p, v)\n"
                                   "o_isnan = IsNaN(o_unguarded)\n"
                                   "o = Where(o_isnan, zero, o_unguarded)\n"
                                   "output o"));
    CHECK(after.constant_data(after.find_value("s_scale"))->at(0) == 0.25);
    CHECK(log.applied.size() == 2);
    // The whole attention then is one group with the guard as its epilogue.
    FusedGraph f = test::fuse_text(kExported, {{"T", 5}});
    CHECK(test::group_summary(f).find("attention matmul+mul+add+softmax+matmul+isnan+where") != std::string::npos);
  }

  TEST_CASE("nothing changes when an intermediate has another use or the option is off") {
    std::string text = kExported;
    text.replace(text.find("output o"), 8, "output o, qs, n");
    Graph before = test::trace_text(text, {{"T", 3}});
    FusionLog log;
    Graph after = normalize_attention(before, FusionOptions{}, &log);
    // ks still moves (one use); qs and the guard stay.
    CHECK(test::structure(after).find("qs = Mul(q, c)") != std::string::npos);
    CHECK(test::structure(after).find("g = Where(n, zero, p)") != std::string::npos);
    CHECK(log.applied.size() == 1);
    FusionOptions off;
    off.normalize_exports = false;
    FusionLog none;
    CHECK(test::structure(normalize_attention(test::trace_text(kExported, {{"T", 3}}), off, &none)) ==
          test::structure(test::trace_text(kExported, {{"T", 3}})));
    CHECK(none.applied.empty());
  }

  TEST_CASE("a guard whose zero is not zero or whose input is not a softmax stays") {
    std::string text = kExported;
    text.replace(text.find("const zero: f32[] = [0.0]"), 25, "const zero: f32[] = [1.0]");
    FusionLog log;
    Graph after = normalize_attention(test::trace_text(text, {{"T", 3}}), FusionOptions{}, &log);
    CHECK(test::structure(after).find("g = Where(n, zero, p)") != std::string::npos);
    CHECK(log.applied.size() == 1);  // the scales only
  }
}
