// Tests of Einsum (onnx/compositions_einsum.cpp, Note [Einsum]) against a direct sum over
// every assignment of the labels, computed here in double, on every CPU backend this machine
// has: plain and batched products, attention's two, inner and outer products, transposes,
// sums, diagonals, "..." broadcast over operands of different rank, three operands, the
// implicit output, uppercase labels; and the errors.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/onnx/composition_checks.h"

using namespace fusor;
using namespace fusor::test;

namespace {

// einsum(eq) in double: eq has letters only and an explicit "->".
Tensor reference(const std::string& eq, const std::vector<Tensor>& xs) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string cur;
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') terms.push_back(cur), cur.clear();
    else cur += c;
  }
  terms.push_back(cur);
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t i = 0; i < terms[t].size(); ++i) size[terms[t][i]] = xs[t].shape()[int(i)];
  std::vector<char> labels;
  for (const auto& [l, s] : size) labels.push_back(l);
  std::vector<int64_t> out_dims;
  for (char c : out) out_dims.push_back(size[c]);
  std::vector<double> acc(size_t(Shape(out_dims).numel()), 0.0);
  std::map<char, int64_t> at;
  for (char l : labels) at[l] = 0;
  for (;;) {
    double p = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      int64_t flat = 0;
      for (size_t i = 0; i < terms[t].size(); ++i) flat = flat * xs[t].shape()[int(i)] + at[terms[t][i]];
      p *= xs[t].at(flat);
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    acc[size_t(o)] += p;
    size_t k = labels.size();
    while (k > 0 && ++at[labels[k - 1]] == size[labels[k - 1]]) at[labels[--k]] = 0;
    if (k == 0) break;
  }
  return make(DType::F32, Shape(out_dims), acc);
}

// Einsum(onnx_eq) of inputs of `shapes` against reference(ref_eq) (onnx_eq's when empty).
void check_einsum(const std::string& onnx_eq, const std::vector<std::vector<int64_t>>& shapes, std::string ref_eq = "") {
  CAPTURE(onnx_eq);
  if (ref_eq.empty()) ref_eq = onnx_eq;
  OnnxBuilder b(13);
  std::vector<std::string> names;
  std::vector<Tensor> xs;
  TensorMap in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    std::vector<OnnxDimSpec> dims(shapes[i].begin(), shapes[i].end());
    b.input(names.back(), kFloat, dims);
    xs.push_back(randn(Shape(shapes[i]), 40 + i));
    in[names.back()] = xs.back();
  }
  attr(b.node("Einsum", names, {"y"}, "es"), "equation", onnx_eq);
  b.output("y");
  check_on_backends(load(b), in, reference(ref_eq, xs), 1e-5, 1e-5);
}

}  // namespace

TEST_SUITE("onnx/compositions/einsum") {
  TEST_CASE("products: plain, batched, attention's two, inner, outer, elementwise") {
    check_einsum("ij,jk->ik", {{5, 7}, {7, 3}});
    check_einsum("bij,bjk->bik", {{2, 5, 7}, {2, 7, 3}});
    check_einsum("bhqd,bhkd->bhqk", {{1, 2, 5, 8}, {1, 2, 6, 8}});
    check_einsum("bhqk,bhkd->bhqd", {{1, 2, 5, 6}, {1, 2, 6, 8}});
    check_einsum("i,i->", {{9}, {9}});
    check_einsum("i,j->ij", {{4}, {3}});
    check_einsum("ij,ij->ij", {{3, 4}, {3, 4}});
    check_einsum("ab,ab->a", {{3, 4}, {3, 4}});
    check_einsum("abc,cd->abd", {{2, 3, 4}, {4, 5}});
    check_einsum("ijk,jil->kl", {{3, 2, 4}, {2, 3, 5}});
    check_einsum("Ab,bC->CA", {{3, 4}, {4, 2}});
  }

  TEST_CASE("one operand: transpose, sums, diagonals") {
    check_einsum("ij->ji", {{3, 4}});
    check_einsum("ij->", {{3, 4}});
    check_einsum("ijk->j", {{2, 3, 4}});
    check_einsum("ii->i", {{4, 4}});
    check_einsum("ii->", {{4, 4}});
    check_einsum("bii->bi", {{2, 3, 3}});
    check_einsum("iji->j", {{3, 2, 3}});
  }

  TEST_CASE("\"...\" broadcast across operands, three operands, the implicit output") {
    check_einsum("...ij,jk->...ik", {{2, 3, 4, 5}, {5, 6}}, "abij,jk->abik");
    check_einsum("...ii->...i", {{2, 3, 3}}, "aii->ai");
    check_einsum("b...d,bd->b...", {{2, 3, 4}, {2, 4}}, "bxd,bd->bx");
    check_einsum("ij,jk,kl->il", {{3, 4}, {4, 5}, {5, 2}});
    check_einsum("ij,jk", {{3, 4}, {4, 5}}, "ij,jk->ik");
    check_einsum("ba", {{3, 4}}, "ba->ab");
    check_einsum("...ij,...jk", {{2, 3, 4}, {2, 4, 5}}, "bij,bjk->bik");
  }

  TEST_CASE("errors name the node: terms and inputs, a stray character, an output label nobody has") {
    struct Case {
      const char* eq;
      const char* says;
    } cases[] = {
        {"ij,jk->ik", "has 2 terms for 1 inputs"},
        {"i$->i", "has the character '$'"},
        {"ij->ik", "has a label no operand has"},
        {"ij->ii", "repeats a label"},
        {"ijk->i", "does not fit an operand of rank 2"},
        {"i..j->ij", "is not one \"...\""},
    };
    for (const Case& c : cases) {
      CAPTURE(c.eq);
      OnnxBuilder b(13);
      b.input("x", kFloat, {3, 4});
      attr(b.node("Einsum", {"x"}, {"y"}, "es"), "equation", c.eq);
      b.output("y");
      const auto [code, msg] = load_error(b);
      CHECK(code == ErrorCode::InvalidGraph);
      CHECK(msg.find("'es'") != std::string::npos);
      CHECK(msg.find(c.says) != std::string::npos);
    }
  }
}
