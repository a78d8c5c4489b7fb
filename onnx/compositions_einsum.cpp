// Einsum as fusor's MatMul, ReduceSum and views (Note [Einsum]).
#include <algorithm>
#include <map>
#include <set>

#include "ir/error.h"
#include "onnx/composition_body.h"

namespace fusor::onnx_import::composition {

// Note [Einsum]
// ~~~~~~~~~~~~~
// An equation's operands are contracted left to right, two at a time, each pair as one
// batched MatMul, so that fusor's GEMM (its packing, tiling and epilogues) does the work:
//   - a label repeated within one operand (a diagonal, "ii->i") keeps the elements where
//     the two indices agree (a Where against an equality of two Ranges) and sums one away;
//   - a label of one operand alone that nothing after needs is summed away first (ReduceSum);
//   - of the rest, labels in both operands that the output or a later operand needs are
//     the batch dims, labels in both that nothing needs are contracted, and the others are
//     the free dims of their side: A is transposed to [batch, free_a, contracted] and B to
//     [batch, contracted, free_b], each group merged into one dim (Reshape: the batch dims
//     stay apart, so MatMul broadcasts them), multiplied, and the free dims split again;
//   - the last operand's labels are summed and transposed to the output's order.
// "..." stands for the dims an operand has beyond its letters (its rank must be known at
// load), aligned from the right across operands as broadcasting does; without "->" the
// output is "..." then the letters used once, in alphabetical order. The merged sizes are
// products of Shape slices (ReduceProd), so the body works for any dims and folds to
// constants at trace. The transposes are views the GEMM reads in place where it can.

namespace {

using Labels = std::vector<int>;  // a letter as 0-51, the j-th ellipsis dim from the right as 100 + j

struct Term {
  std::string value;  // the ONNX value
  Labels labels;
};

constexpr int kEllipsis = 100;

// The labels of one term of an operand of `rank` (-1 when unknown, or for the output, whose
// "..." has ellipsis_dims dims).
Labels parse_term(const std::string& term, int rank, int ellipsis_dims, CompositionContext& cx) {
  Labels letters_before, letters_after;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (ellipsis || term.compare(i, 3, "...") != 0)
        cx.fail(ErrorCode::InvalidGraph, "term \"" + term + "\" has a '.' that is not one \"...\"");
      ellipsis = true;
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      (ellipsis ? letters_after : letters_before).push_back(c >= 'a' ? c - 'a' : 26 + c - 'A');
    } else {
      cx.fail(ErrorCode::InvalidGraph, std::string("term \"") + term + "\" has the character '" + c + "'");
    }
  }
  const int letters = int(letters_before.size() + letters_after.size());
  int dots = 0;
  if (rank >= 0) {
    if (rank < letters || (!ellipsis && rank != letters))
      cx.fail(ErrorCode::InvalidGraph, "term \"" + term + "\" does not fit an operand of rank " + std::to_string(rank));
    dots = rank - letters;
  } else if (ellipsis) {
    dots = ellipsis_dims;
  }
  Labels out = letters_before;
  for (int j = dots; j-- > 0;) out.push_back(kEllipsis + j);
  out.insert(out.end(), letters_after.begin(), letters_after.end());
  return out;
}

class Contractor {
 public:
  Contractor(Body& b, CompositionContext& cx) : b_(b), cx_(cx) {}

  // The dims [from, to) of v's shape, a 1-D i64 value.
  std::string shape_dims(const std::string& v, int64_t from, int64_t to) { return b_.dims(b_.op("Shape", {v}), from, to); }

  // Sums away the second of each repeated label (keeping the diagonal).
  void diagonals(Term& t) {
    for (size_t p = 0; p < t.labels.size(); ++p)
      for (size_t q = p + 1; q < t.labels.size(); ++q) {
        if (t.labels[p] != t.labels[q]) continue;
        const int rank = int(t.labels.size());
        const std::string n = b_.op("Gather", {b_.op("Shape", {t.value}), cx_.int_scalar(int64_t(p))});
        const std::string range = b_.op("Range", {cx_.int_scalar(0), n, cx_.int_scalar(1)});
        auto along = [&](size_t axis) {
          std::vector<int64_t> dims(size_t(rank), 1);
          dims[axis] = -1;
          return b_.op("Reshape", {range, cx_.ints(dims)});
        };
        const std::string same = b_.op("Equal", {along(p), along(q)});
        const std::string kept = b_.op("Where", {same, t.value, b_.scalar(0.0)});
        t.value = b_.op("ReduceSum", {kept, cx_.ints({int64_t(q)})}, {int_attribute("keepdims", 0)});
        t.labels.erase(t.labels.begin() + long(q));
        --q;
      }
  }

  // Sums away the labels not in `keep`.
  void sum_unneeded(Term& t, const std::set<int>& keep) {
    std::vector<int64_t> axes;
    Labels rest;
    for (size_t i = 0; i < t.labels.size(); ++i) {
      if (keep.count(t.labels[i])) rest.push_back(t.labels[i]);
      else axes.push_back(int64_t(i));
    }
    if (axes.empty()) return;
    t.value = b_.op("ReduceSum", {t.value, cx_.ints(axes)}, {int_attribute("keepdims", 0)});
    t.labels = rest;
  }

  // t's dims in the order of `order` (a permutation of its labels).
  void transpose(Term& t, const Labels& order) {
    if (order == t.labels) return;
    std::vector<int64_t> perm;
    for (int l : order) perm.push_back(int64_t(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin()));
    t.value = b_.op("Transpose", {t.value}, {ints_attribute("perm", perm)});
    t.labels = order;
  }

  // The product of t's dims [from, to), a 1-D i64 value of one element.
  std::string product(const Term& t, int64_t from, int64_t to) {
    return b_.op("ReduceProd", {shape_dims(t.value, from, to)}, {int_attribute("keepdims", 1)});
  }

  // a x b, keeping `keep` (the labels the output and later operands need).
  Term contract(Term a, Term b, const std::set<int>& keep) {
    std::set<int> in_a(a.labels.begin(), a.labels.end()), in_b(b.labels.begin(), b.labels.end());
    std::set<int> keep_a = keep, keep_b = keep;
    keep_a.insert(in_b.begin(), in_b.end());
    keep_b.insert(in_a.begin(), in_a.end());
    sum_unneeded(a, keep_a);
    sum_unneeded(b, keep_b);
    Labels batch, contracted, free_a, free_b;
    for (int l : a.labels) {
      if (!in_b.count(l)) free_a.push_back(l);
      else if (keep.count(l)) batch.push_back(l);
      else contracted.push_back(l);
    }
    for (int l : b.labels)
      if (!in_a.count(l)) free_b.push_back(l);
    auto join = [](std::initializer_list<const Labels*> parts) {
      Labels out;
      for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
      return out;
    };
    transpose(a, join({&batch, &free_a, &contracted}));
    transpose(b, join({&batch, &contracted, &free_b}));
    const int64_t nb = int64_t(batch.size()), na = int64_t(free_a.size()), nc = int64_t(contracted.size());
    const int64_t nf = int64_t(free_b.size());
    const std::vector<int64_t> copy_batch(size_t(nb), 0);  // Reshape's 0: the dim as it is
    const bool plain = na == 1 && nc == 1 && nf == 1;      // already [batch, m, k] x [batch, k, n]
    std::string lhs = a.value, rhs = b.value;
    if (!plain) {
      lhs = b_.op("Reshape", {a.value, b_.concat({cx_.ints(copy_batch), product(a, nb, nb + na), product(a, nb + na, nb + na + nc)})});
      rhs = b_.op("Reshape", {b.value, b_.concat({cx_.ints(copy_batch), product(b, nb, nb + nc), product(b, nb + nc, nb + nc + nf)})});
    }
    Term out{b_.op("MatMul", {lhs, rhs}), join({&batch, &free_a, &free_b})};
    if (!plain)
      out.value = b_.op("Reshape", {out.value, b_.concat({cx_.ints(copy_batch), shape_dims(a.value, nb, nb + na),
                                                          shape_dims(b.value, nb + nc, nb + nc + nf)})});
    return out;
  }

 private:
  Body& b_;
  CompositionContext& cx_;
};

}  // namespace

std::vector<OnnxNode> einsum(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  std::string eq;
  for (char c : string_attr(n, "equation", "")) {
    if (c != ' ') eq += c;
  }
  if (eq.empty()) cx.fail(ErrorCode::InvalidGraph, "has no equation");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != n.inputs.size())
    cx.fail(ErrorCode::InvalidGraph, "equation \"" + eq + "\" has " + std::to_string(terms.size()) + " terms for " +
                                         std::to_string(n.inputs.size()) + " inputs");
  std::vector<Term> operands;
  int ellipsis_dims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& value = b.input(i, "an operand");
    const int rank = cx.known_rank(value);
    if (rank < 0 && terms[i].find('.') != std::string::npos)
      cx.fail(ErrorCode::Unsupported, "\"...\" over operand '" + value + "' of unknown rank (fusor needs its rank)");
    operands.push_back({value, parse_term(terms[i], rank, 0, cx)});
    for (int l : operands.back().labels)
      if (l >= kEllipsis) ellipsis_dims = std::max(ellipsis_dims, l - kEllipsis + 1);
  }
  Labels output;
  if (arrow != std::string::npos) {
    output = parse_term(eq.substr(arrow + 2), -1, ellipsis_dims, cx);
    std::set<int> seen;
    for (int l : output) {
      if (!seen.insert(l).second) cx.fail(ErrorCode::InvalidGraph, "the output of \"" + eq + "\" repeats a label");
      bool found = false;
      for (const Term& t : operands) found |= std::count(t.labels.begin(), t.labels.end(), l) > 0;
      if (!found) cx.fail(ErrorCode::InvalidGraph, "the output of \"" + eq + "\" has a label no operand has");
    }
  } else {  // "..." then the letters used once, alphabetically
    std::map<int, int> uses;
    for (const Term& t : operands)
      for (int l : t.labels) ++uses[l];
    for (int j = ellipsis_dims; j-- > 0;) output.push_back(kEllipsis + j);
    for (const auto& [l, count] : uses)
      if (l < kEllipsis && count == 1) output.push_back(l);
  }
  Contractor c(b, cx);
  for (Term& t : operands) c.diagonals(t);
  Term acc = operands[0];
  for (size_t i = 1; i < operands.size(); ++i) {
    std::set<int> keep(output.begin(), output.end());
    for (size_t j = i + 1; j < operands.size(); ++j) keep.insert(operands[j].labels.begin(), operands[j].labels.end());
    acc = c.contract(acc, operands[i], keep);
  }
  c.sum_unneeded(acc, std::set<int>(output.begin(), output.end()));
  c.transpose(acc, output);
  b.finish(acc.value);
  return b.done();
}

}  // namespace fusor::onnx_import::composition
