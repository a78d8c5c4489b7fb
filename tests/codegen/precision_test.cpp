// bf16 (codegen/precision.h, Note [bf16 contractions]): the rounding every path shares, the
// activations' conversion (its AVX512-BF16 path against the scalar one), the weights' packed
// pairs (PackKind::Bf16Panels) unpacked back, which specs may compute in bf16, and the
// option's names. The kernels are tested in tests/codegen/llvm/bf16_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "codegen/packing.h"
#include "codegen/precision.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// A GEMM spec over [batch..., m, k] x [batch..., k, n], B contiguous (or per-batch blocks).
KernelSpec gemm(int64_t m, int64_t k, int64_t n, bool b_const, bool b_per_batch = false) {
  KernelSpec s;
  s.kind = KernelKind::Contraction;
  s.buffers = {BufferSpec{}, BufferSpec{}, BufferSpec{}};
  s.buffers[1].constant = b_const;
  ContractionSpec& c = s.contraction;
  c.m = m;
  c.k = k;
  c.n = n;
  c.batch = {2};
  c.a = StridedAccess{};
  c.a.buffer = 0;
  c.a.strides = {m * k, k, 1};
  c.b = StridedAccess{};
  c.b.buffer = 1;
  c.b.strides = {b_per_batch ? k * n : 0, n, 1};
  return s;
}

}  // namespace

TEST_SUITE("codegen/precision") {
  TEST_CASE("to_bf16 rounds as vcvtne2ps2bf16: to nearest even, subnormals flushed, NaN and infinities kept") {
    CHECK(to_bf16(1.0f) == 0x3f80);
    CHECK(to_bf16(-2.0f) == 0xc000);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1); 1 + 3*2^-8 to 1 + 2^-6.
    CHECK(to_bf16(from_bits(0x3f808000u)) == 0x3f80);
    CHECK(to_bf16(from_bits(0x3f818000u)) == 0x3f82);
    CHECK(to_bf16(from_bits(0x3f808001u)) == 0x3f81);  // just above half: up
    CHECK(to_bf16(from_bits(0x3f807fffu)) == 0x3f80);  // just below: down
    // The largest finite float rounds up to infinity, as the instruction does.
    CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
    CHECK(to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
    CHECK(to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
    const uint16_t nan = to_bf16(std::numeric_limits<float>::quiet_NaN());
    CHECK(std::isnan(bf16_to_f32(nan)));
    CHECK(std::isnan(bf16_to_f32(to_bf16(from_bits(0x7f800001u)))));  // a NaN whose payload is all below bit 16
    CHECK(to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
    CHECK(to_bf16(-std::numeric_limits<float>::denorm_min()) == 0x8000);
    CHECK(to_bf16(std::numeric_limits<float>::min()) == 0x0080);  // the smallest normal stays
    // Every rounding is within half a unit of the 8th significant bit.
    for (float x : test::normal_floats(1000, 1, 3.0f)) {
      const float r = bf16_to_f32(to_bf16(x));
      CHECK(std::fabs(r - x) <= std::ldexp(std::fabs(x), -8));
      CHECK((bits(r) & 0xffffu) == 0);
    }
    CHECK(bf16_pair(1.0f, -2.0f) == (0x3f80u | 0xc000u << 16));
  }

  TEST_CASE("AMX's order of A's pairs holds each pair where the tiles load it") {
    // fusor_rt_pack_a_bf16_amx against the row-major pairs: per 16 rows and step of 16 pairs,
    // one 64-byte line per row; rows past `rows` zeros; contiguous and strided A (k_stride 2).
    for (int64_t k : {32, 64, 96}) {
      for (int64_t rows : {int64_t(1), int64_t(16), int64_t(21), int64_t(32)}) {
        CAPTURE(k);
        CAPTURE(rows);
        const int64_t mr = 32, k2 = k / 2, row_stride = k + 5;
        std::vector<float> a = test::normal_floats(size_t(rows * row_stride), uint32_t(k + rows), 3.0f);
        std::vector<uint32_t> plain(size_t(mr * k2)), tiled(size_t(mr * k2), 0xdeadbeef), tiled2(size_t(mr * k2), 0xdeadbeef);
        fusor_rt_pack_a_bf16(a.data(), row_stride, 1, rows, k, mr, plain.data());
        fusor_rt_pack_a_bf16_amx(a.data(), row_stride, 1, rows, k, mr, tiled.data());
        std::vector<float> spread(size_t(rows * row_stride * 2));
        for (size_t i = 0; i < a.size(); ++i) spread[2 * i] = a[i];
        fusor_rt_pack_a_bf16_amx(spread.data(), 2 * row_stride, 2, rows, k, mr, tiled2.data());
        int64_t wrong = 0;
        for (int64_t i = 0; i < mr; ++i)
          for (int64_t j = 0; j < k2; ++j) {
            const size_t at = size_t((i / 16) * k2 * 16 + (j / 16) * 256 + (i % 16) * 16 + j % 16);
            wrong += tiled[at] != plain[size_t(i * k2 + j)] || tiled2[at] != plain[size_t(i * k2 + j)];
          }
        CHECK(wrong == 0);
      }
    }
  }

  TEST_CASE("activations convert to pairs the same on the vector and scalar paths") {
    // k from 1 to past two vectors, rows fewer than the block (zeros after), and a strided A.
    for (int64_t k : {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100}) {
      CAPTURE(k);
      const int64_t rows = 5, mr = 7, k2 = (k + 1) / 2, row_stride = k + 3;
      std::vector<float> a = test::normal_floats(size_t(rows * row_stride), uint32_t(k), 3.0f);
      a[1] = std::numeric_limits<float>::quiet_NaN();
      a[2] = std::numeric_limits<float>::denorm_min();
      std::vector<uint32_t> got(size_t(mr * k2), 0xdeadbeef), strided(size_t(mr * k2), 0xdeadbeef);
      fusor_rt_pack_a_bf16(a.data(), row_stride, 1, rows, k, mr, got.data());
      // The same rows read with k_stride 2 out of a copy spread to every other float.
      std::vector<float> spread(size_t(rows * row_stride * 2));
      for (size_t i = 0; i < a.size(); ++i) spread[2 * i] = a[i];
      fusor_rt_pack_a_bf16(spread.data(), 2 * row_stride, 2, rows, k, mr, strided.data());
      for (int64_t i = 0; i < mr; ++i)
        for (int64_t j = 0; j < k2; ++j) {
          const float lo = i < rows ? a[size_t(i * row_stride + 2 * j)] : 0.0f;
          const float hi = i < rows && 2 * j + 1 < k ? a[size_t(i * row_stride + 2 * j + 1)] : 0.0f;
          uint32_t want = bf16_pair(lo, hi);
          CAPTURE(i);
          CAPTURE(j);
          if (std::isnan(lo)) {  // (any quiet NaN in the low half)
            CHECK(std::isnan(bf16_to_f32(uint16_t(got[size_t(i * k2 + j)]))));
            want = got[size_t(i * k2 + j)];
          }
          CHECK(got[size_t(i * k2 + j)] == want);
          CHECK(strided[size_t(i * k2 + j)] == want);
        }
    }
    MESSAGE("vector path: " << (host_bf16().avx512_bf16 ? "AVX512-BF16" : "not on this CPU (scalar only)"));
  }

  TEST_CASE("weights pack as bf16 pairs that unpack to their rounded values") {
    for (bool per_batch : {false, true})
      for (int64_t k : {1, 2, 7, 32, 33})
        for (int64_t n : {1, 15, 16, 47, 48, 49}) {
          CAPTURE(per_batch);
          CAPTURE(k);
          CAPTURE(n);
          const KernelSpec s = gemm(4, k, n, true, per_batch);
          const ContractionSpec& c = s.contraction;
          const int64_t width = 16, batches = per_batch ? 2 : 1, panels = (n + width - 1) / width, k2 = (k + 1) / 2;
          std::vector<float> b = test::normal_floats(size_t(batches * k * n), uint32_t(k * 100 + n), 3.0f);
          const int64_t floats = packed_b_floats(c, width, PackKind::Bf16Panels);
          CHECK(floats == batches * panels * k2 * width);
          std::vector<float> packed(static_cast<size_t>(floats));
          pack_b(c, width, b.data(), packed.data(), PackKind::Bf16Panels);
          const uint32_t* pairs = reinterpret_cast<const uint32_t*>(packed.data());
          for (int64_t bi = 0; bi < batches; ++bi)
            for (int64_t kk = 0; kk < 2 * k2; ++kk)
              for (int64_t j = 0; j < panels * width; ++j) {
                const uint32_t pair = pairs[((bi * panels + j / width) * k2 + kk / 2) * width + j % width];
                const uint16_t h = uint16_t(kk % 2 ? pair >> 16 : pair & 0xffffu);
                const float want = kk < k && j < n ? bf16_to_f32(to_bf16(b[size_t((bi * k + kk) * n + j)])) : 0.0f;
                if (bf16_to_f32(h) != want) {
                  FAIL_CHECK("batch " << bi << " k " << kk << " column " << j << ": " << bf16_to_f32(h) << " != " << want);
                  return;
                }
              }
          // Its layout bytes differ from the f32 panels', so the two copies are never shared.
          CHECK(packed_b_layout(c, width, PackKind::Bf16Panels) != packed_b_layout(c, width, PackKind::Panels));
        }
  }

  TEST_CASE("contractions and attention of f32 operands may compute in bf16 and nothing else") {
    std::string why;
    for (bool b_const : {true, false}) {  // weights, or an activation (batched products)
      KernelSpec s = gemm(8, 16, 32, b_const);
      CHECK(bf16_applies(s, &why));
      CHECK(mark_bf16(s));
      CHECK(s.contraction.bf16);
    }
    KernelSpec f16 = gemm(8, 16, 32, true);
    f16.contraction.a.dtype = DType::F16;
    CHECK_FALSE(bf16_applies(f16, &why));
    CHECK(why.find("other than f32") != std::string::npos);
    CHECK_FALSE(mark_bf16(f16));
    CHECK_FALSE(f16.contraction.bf16);
    KernelSpec pw;
    pw.kind = KernelKind::Pointwise;
    CHECK_FALSE(bf16_applies(pw, &why));
    CHECK(why.find("not a contraction") != std::string::npos);
    // Attention's two products too; the mark is read and taken back through one pair.
    KernelSpec att;
    att.kind = KernelKind::Attention;
    for (StridedAccess* x : {&att.attention.q, &att.attention.k, &att.attention.v}) x->dtype = DType::F32;
    CHECK(mark_bf16(att));
    CHECK(att.attention.bf16);
    CHECK(is_bf16(att));
    CHECK(att.hash() != [&] {
      KernelSpec f32 = att;
      clear_bf16(f32);
      return f32.hash();
    }());
    clear_bf16(att);
    CHECK_FALSE(is_bf16(att));
    att.attention.v.dtype = DType::F16;
    CHECK_FALSE(mark_bf16(att));
  }

  TEST_CASE("precision names parse, and others are a clear error") {
    for (Precision p : {Precision::Fp32, Precision::Bf16, Precision::Auto}) CHECK(parse_precision(precision_name(p)) == p);
    std::string msg;
    CHECK(test::error_of([] { parse_precision("fp16"); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("fp16") != std::string::npos);
    CHECK(msg.find("fp32, bf16 or auto") != std::string::npos);
    MESSAGE("this CPU's bf16 instruction sets: " << host_bf16().str());
  }
}
