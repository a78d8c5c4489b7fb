// The text format: a line-based lexer, a recursive-descent parser and the printer. The
// grammar is in text_format.h; the notes below record the choices the grammar leaves open.
#include "ir/text_format.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "ir/input_file.h"
#include "ir/npy.h"
#include "ir/op_schema.h"
#include "ir/random.h"
#include "ir/verifier.h"

namespace fusor {

namespace {

// Note [Names in the text format]
// Value and node names may use [A-Za-z0-9_./:-] (Graph's rule), so "/enc/layer.0/Add:0",
// "onnx::Mul_3" and "123" are names. A name is therefore lexed only where the grammar
// expects one, as the longest run of those characters, except that a ':' belongs to a name
// only when another name character follows it: `x: f32` declares x, `onnx::Add_1` is one
// name (and `x:f32` is read as the name "x:f32", which the error message points out).
// The first word of a line is a keyword (graph, input, const, output) unless '=' or ','
// follows it, so values may be named after keywords. `_` alone marks an omitted input and
// cannot name a value.

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == ':' || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

struct Token {
  enum class Kind : uint8_t { End, Word, Number, String, Punct };
  Kind kind = Kind::End;
  std::string_view text;  ///< as written (a string with its quotes)
  std::string str;        ///< the unescaped contents of a String
  int col = 0;            ///< 1-based column of the first character

  bool is(char c) const { return kind == Kind::Punct && text[0] == c; }
  bool is_word(std::string_view w) const { return kind == Kind::Word && text == w; }
};

/// How an error message shows a token.
std::string describe(const Token& t) {
  if (t.kind == Token::Kind::End) return "end of line";
  std::string s(1, '\'');  // not "'" + string: GCC 12 warns falsely (-Wrestrict) on that
  s.append(t.text);
  s += '\'';
  return s;
}

/// The line being parsed, for "SOURCE:LINE:COL: " prefixes.
struct Location {
  const std::string* source;
  int line;
};

template <class... Parts>
[[noreturn]] void parse_fail(const Location& loc, int col, const Parts&... parts) {
  fail(ErrorCode::ParseError, *loc.source, ":", loc.line, ":", col, ": ", parts...);
}

/// Splits one line into tokens on demand. Names are lexed only when asked for (Note [Names
/// in the text format]); everything else through next()/peek(). Where a name may come next,
/// the parser looks ahead with peek_char(), since peek() would lex the name as a token.
class Lexer {
 public:
  Lexer(std::string_view line, Location loc) : line_(line), loc_(loc) {}

  const Location& loc() const { return loc_; }

  Token next() {
    skip_space();
    Token t;
    t.col = col();
    if (pos_ >= line_.size()) return t;
    char c = line_[pos_];
    char c1 = pos_ + 1 < line_.size() ? line_[pos_ + 1] : '\0';
    if ((is_alnum(c) && !is_digit(c)) || c == '_') return name();
    if (is_digit(c) || (c == '.' && is_digit(c1)) || ((c == '-' || c == '+') && (is_alnum(c1) || c1 == '.')))
      return number();
    if (c == '"') return string();
    if (std::strchr(":[](){},=", c) && c != '\0') {
      t.kind = Token::Kind::Punct;
      t.text = line_.substr(pos_++, 1);
      return t;
    }
    if (c >= 0x20 && c < 0x7f) parse_fail(loc_, t.col, "unexpected character '", c, "'");
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02x", unsigned(static_cast<unsigned char>(c)));
    parse_fail(loc_, t.col, "unexpected byte ", hex, " (names use [A-Za-z0-9_./:-])");
  }

  Token peek() {
    size_t save = pos_;
    Token t = next();
    pos_ = save;
    return t;
  }

  /// The next character that is not a space ('\0' at the end of the line).
  char peek_char() {
    skip_space();
    return pos_ < line_.size() ? line_[pos_] : '\0';
  }

  /// Reads a name; an empty Word when no name character comes next.
  Token name() {
    skip_space();
    Token t;
    t.kind = Token::Kind::Word;
    t.col = col();
    size_t start = pos_;
    while (pos_ < line_.size() && is_name_char(line_[pos_])) {
      if (line_[pos_] == ':' && !(pos_ + 1 < line_.size() && is_name_char(line_[pos_ + 1]))) break;
      ++pos_;
    }
    t.text = line_.substr(start, pos_ - start);
    return t;
  }

 private:
  int col() const { return int(pos_) + 1; }

  void skip_space() {
    while (pos_ < line_.size() && (line_[pos_] == ' ' || line_[pos_] == '\t')) ++pos_;
    if (pos_ < line_.size() && line_[pos_] == '#') pos_ = line_.size();
  }

  // A number is lexed generously (a sign, then letters, digits, '.', and a sign after an
  // exponent 'e') and validated where its value is read, so "12ab" is one bad number rather
  // than a number followed by garbage.
  Token number() {
    Token t;
    t.kind = Token::Kind::Number;
    t.col = col();
    size_t start = pos_;
    if (line_[pos_] == '-' || line_[pos_] == '+') ++pos_;
    while (pos_ < line_.size()) {
      char c = line_[pos_];
      bool exp_sign = (c == '-' || c == '+') && (line_[pos_ - 1] == 'e' || line_[pos_ - 1] == 'E');
      if (!is_alnum(c) && c != '.' && c != '_' && !exp_sign) break;
      ++pos_;
    }
    t.text = line_.substr(start, pos_ - start);
    return t;
  }

  Token string() {
    Token t;
    t.kind = Token::Kind::String;
    t.col = col();
    size_t start = pos_++;
    for (;;) {
      if (pos_ >= line_.size()) parse_fail(loc_, t.col, "unterminated string (no closing '\"' on this line)");
      char c = line_[pos_++];
      if (c == '"') break;
      if (c == '\\') {
        char e = pos_ < line_.size() ? line_[pos_] : '\0';
        if (e != '"' && e != '\\')
          parse_fail(loc_, int(pos_), "unknown escape in string (only \\\" and \\\\ are escapes)");
        ++pos_;
        c = e;
      }
      t.str += c;
    }
    t.text = line_.substr(start, pos_ - start);
    return t;
  }

  std::string_view line_;
  size_t pos_ = 0;
  Location loc_;
};

bool is_float_text(std::string_view s) {
  return s.find_first_of(".eE") != std::string_view::npos || s.find("inf") != std::string_view::npos ||
         s.find("nan") != std::string_view::npos;
}

/// True for a Number token or the words inf and nan.
bool is_number(const Token& t) {
  return t.kind == Token::Kind::Number || t.is_word("inf") || t.is_word("nan");
}

/// An integer literal (int64); ParseError for floats, garbage and overflow.
int64_t int_value(const Location& loc, const Token& t, std::string_view what) {
  if (t.kind != Token::Kind::Number || is_float_text(t.text))
    parse_fail(loc, t.col, "expected ", what, " (an integer), found ", describe(t));
  std::string_view s = t.text;
  if (s[0] == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range)
    parse_fail(loc, t.col, "integer ", describe(t), " is out of range (64-bit signed)");
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) parse_fail(loc, t.col, "bad number ", describe(t));
  return v;
}

/// A floating literal (or an integer read as one); inf, -inf and nan are numbers.
template <class T>
T float_value(const Location& loc, const Token& t, std::string_view what) {
  if (!is_number(t)) parse_fail(loc, t.col, "expected ", what, " (a number), found ", describe(t));
  std::string_view s = t.text;
  if (s[0] == '+') s.remove_prefix(1);
  bool neg = s[0] == '-';
  std::string_view mag = neg ? s.substr(1) : s;
  if (mag == "inf") return neg ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  // Doubles (attributes, recipes) print through format_double, which drops a NaN's sign, so
  // a double NaN is always +nan; tensor data prints "-nan" and keeps it.
  if (mag == "nan")
    return std::copysign(std::numeric_limits<T>::quiet_NaN(), neg && !std::is_same_v<T, double> ? T(-1) : T(1));
  T v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ptr != s.data() + s.size() || (r.ec != std::errc() && r.ec != std::errc::result_out_of_range))
    parse_fail(loc, t.col, "bad number ", describe(t));
  if (r.ec == std::errc::result_out_of_range) {
    // Underflow rounds to zero like a C literal does; overflow is an error.
    double d = 0;
    auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
    if (rd.ec != std::errc() || std::fabs(d) >= 1)
      parse_fail(loc, t.col, "number ", describe(t), " is out of range for ", what);
    v = T(d);
  }
  return v;
}

/// "f32[B, T, 768]".
std::string type_text(DType dtype, const std::vector<Dim>& dims) {
  std::string s(dtype_name(dtype));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i].str();
  return s + ']';
}

/// Levenshtein distance, case-insensitive (for "did you mean").
size_t edit_distance(std::string_view a, std::string_view b) {
  auto low = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (low(a[i - 1]) == low(b[j - 1]) ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// " (did you mean MatMul?)" listing up to three op types close to `name`, or "".
std::string op_suggestions(std::string_view name) {
  std::vector<std::pair<size_t, std::string_view>> close;
  for (int k = 0; k < kNumOpKinds; ++k) {
    std::string_view op = op_name(OpKind(k));
    size_t d = edit_distance(name, op);
    if (d <= std::max<size_t>(2, op.size() / 4)) close.emplace_back(d, op);
  }
  if (close.empty()) return "";
  std::stable_sort(close.begin(), close.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::string s = " (did you mean ";
  for (size_t i = 0; i < close.size() && i < 3; ++i) s += (i ? ", " : "") + std::string(close[i].second);
  return s + "?)";
}

class Parser {
 public:
  Parser(std::string_view text, std::string base_dir, std::string source)
      : text_(text), base_dir_(std::move(base_dir)), source_(std::move(source)) {}

  Graph parse() {
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      Lexer lx(line, Location{&source_, ++line_no});
      statement(lx);
      pos = end + 1;
    }
    verify_with_lines();
    return std::move(g_);
  }

 private:
  using Kind = Token::Kind;

  template <class... Parts>
  [[noreturn]] void error(const Lexer& lx, int col, const Parts&... parts) {
    parse_fail(lx.loc(), col, parts...);
  }

  Token expect(Lexer& lx, char c, std::string_view context) {
    Token t = lx.next();
    if (!t.is(c)) error(lx, t.col, "expected '", c, "' ", context, ", found ", describe(t));
    return t;
  }

  Token expect_name(Lexer& lx, std::string_view what) {
    Token t = lx.name();
    if (t.text.empty()) error(lx, t.col, "expected ", what, ", found ", describe(lx.peek()));
    return t;
  }

  void expect_end(Lexer& lx) {
    Token t = lx.next();
    if (t.kind != Kind::End) error(lx, t.col, "expected end of line, found ", describe(t));
  }

  // Claims a name for a new value: it must not be taken, nor be `_`.
  std::string claim_value_name(Lexer& lx, const Token& t) {
    if (t.text == "_") error(lx, t.col, "'_' marks an omitted input and cannot name a value");
    auto it = defined_at_.find(std::string(t.text));
    if (it != defined_at_.end())
      error(lx, t.col, "value '", t.text, "' is already defined (line ", it->second, ")");
    defined_at_.emplace(std::string(t.text), lx.loc().line);
    return std::string(t.text);
  }

  ValueId lookup(Lexer& lx, const Token& name) {
    ValueId v = g_.find_value(name.text);
    if (v == kNoValue) error(lx, name.col, "undefined value '", name.text, "' (values must be defined before use)");
    return v;
  }

  void statement(Lexer& lx) {
    Token first = lx.name();
    if (first.text.empty()) {
      Token t = lx.peek();
      if (t.kind == Kind::End) return;  // blank or comment
      error(lx, t.col, "expected a statement (graph, input, const, output or `outs = Op(...)`), found ",
            describe(t));
    }
    char after = lx.peek_char();
    bool keyword = after != '=' && after != ',';
    bool first_statement = !seen_statement_;
    seen_statement_ = true;
    if (keyword && first.text == "graph") {
      if (!first_statement) error(lx, first.col, "'graph' must be the first statement");
      g_.set_name(std::string(expect_name(lx, "a graph name").text));
    } else if (keyword && first.text == "input") {
      input_statement(lx);
    } else if (keyword && first.text == "const") {
      const_statement(lx);
    } else if (keyword && first.text == "output") {
      output_statement(lx);
    } else {
      node_statement(lx, first);
    }
    expect_end(lx);
  }

  DType dtype(Lexer& lx) {
    Token t = lx.next();
    DType d;
    if (t.kind != Kind::Word) error(lx, t.col, "expected a dtype (f32, f16, bf16, i64, i32, bool), found ", describe(t));
    if (!parse_dtype(t.text, &d))
      error(lx, t.col, "unknown dtype ", describe(t), " (expected f32, f16, bf16, i64, i32 or bool)");
    return d;
  }

  std::vector<Dim> dims(Lexer& lx, bool allow_symbols) {
    expect(lx, '[', "to start the dimensions");
    std::vector<Dim> out;
    if (lx.peek_char() == ']') {
      lx.next();
      return out;
    }
    for (;;) {
      char c = lx.peek_char();
      if (is_digit(c) || c == '-' || c == '+') {
        Token t = lx.next();
        int64_t d = int_value(lx.loc(), t, "a dimension");
        if (d < 0) error(lx, t.col, "dimension ", d, " is negative");
        out.emplace_back(d);
      } else if (is_name_char(c)) {
        Token t = lx.name();
        if (!allow_symbols) error(lx, t.col, "a constant's dimensions must be integers, found ", describe(t));
        out.emplace_back(std::string(t.text));
      } else {
        Token t = lx.peek();
        error(lx, t.col, "expected a dimension (an integer or a name), found ", describe(t));
      }
      Token sep = lx.next();
      if (sep.is(']')) return out;
      if (!sep.is(',')) error(lx, sep.col, "expected ',' or ']' after a dimension, found ", describe(sep));
    }
  }

  // `NAME: DTYPE[dims]`, shared by input and const.
  std::string declaration(Lexer& lx, std::string_view what, DType* dt, std::vector<Dim>* ds, bool symbols,
                          int* dims_col = nullptr) {
    std::string name = claim_value_name(lx, expect_name(lx, what));
    Token colon = lx.next();
    if (!colon.is(':'))
      error(lx, colon.col, "expected ':' after '", name, "', found ", describe(colon),
            name.find(':') != std::string::npos ? " (a ':' followed by a name character is part of the name; "
                                                  "write 'x: f32')"
                                                : "");
    *dt = dtype(lx);
    if (dims_col) *dims_col = lx.peek().col;
    *ds = dims(lx, symbols);
    return name;
  }

  void input_statement(Lexer& lx) {
    DType dt;
    std::vector<Dim> ds;
    std::string name = declaration(lx, "an input name", &dt, &ds, true);
    g_.add_input(name, dt, std::move(ds));
  }

  void const_statement(Lexer& lx) {
    DType dt;
    std::vector<Dim> ds;
    int dims_col = 0;
    std::string name = declaration(lx, "a constant name", &dt, &ds, false, &dims_col);
    std::vector<int64_t> sizes;
    for (const Dim& d : ds) sizes.push_back(d.size);
    Shape shape(sizes);
    try {
      checked_numel(sizes, "constant '" + name + "'");
    } catch (const Error& e) {
      error(lx, dims_col, e.message());
    }
    expect(lx, '=', "before the constant's value");
    Token init = lx.next();
    if (init.is('[')) {
      g_.add_constant(name, inline_data(lx, dt, shape));
    } else if (init.is_word("randn") || init.is_word("uniform") || init.is_word("fill")) {
      RandomRecipe r = recipe(lx, init);
      check_recipe_fits(lx, init.col, r, dt);
      // A generated constant is materialized as the graph is read: a bound keeps a typo in a
      // dim from asking for terabytes (the largest real one, GPT-2's embedding, is 154 MB).
      if (shape.numel() > kMaxGeneratedConstantBytes / int64_t(dtype_size(dt)))
        error(lx, dims_col, "constant '", name, "' has ", shape.numel(), " elements, more than the ",
              kMaxGeneratedConstantBytes, " bytes a generated constant may take (give large weights as npy(\"...\"))");
      g_.add_constant(name, make_random(dt, shape, r), r.str());
    } else if (init.is_word("npy")) {
      expect(lx, '(', "after npy");
      Token path = lx.next();
      if (path.kind != Kind::String) error(lx, path.col, "expected a \"path\", found ", describe(path));
      expect(lx, ')', "after the npy path");
      g_.add_constant(name, load_npy(lx, path, dt, shape), "npy(" + Attribute(path.str).str() + ")");
    } else {
      error(lx, init.col, "expected randn(...), uniform(...), fill(...), npy(\"...\") or [values], found ",
            describe(init));
    }
  }

  Tensor load_npy(Lexer& lx, const Token& path, DType dt, const Shape& shape) {
    std::filesystem::path p(path.str);
    if (p.is_relative()) p = std::filesystem::path(base_dir_) / p;
    Tensor t;
    try {
      t = read_npy(p.string());
    } catch (const Error& e) {  // keep the code (Io, Unsupported, ...), add the position
      throw Error(e.code(), detail::cat(source_, ":", lx.loc().line, ":", path.col, ": ", e.message()));
    }
    if (t.dtype() != dt || t.shape() != shape)
      error(lx, path.col, "'", p.string(), "' holds ", t.type_str(), " but the constant is declared ",
            dtype_name(dt), shape.str());
    return t;
  }

  RandomRecipe recipe(Lexer& lx, const Token& kind) {
    expect(lx, '(', detail::cat("after ", kind.text));
    if (kind.text == "fill") {
      Token v = lx.next();
      double value = float_value<double>(lx.loc(), v, "the fill value");
      expect(lx, ')', "after the fill value");
      return RandomRecipe::fill(value);
    }
    bool normal = kind.text == "randn";
    std::vector<std::string_view> keys = normal ? std::vector<std::string_view>{"seed", "std", "mean"}
                                                : std::vector<std::string_view>{"seed", "low", "high"};
    std::vector<Token> args(3);
    for (;;) {
      Token key = expect_name(lx, "an argument name");
      size_t k = size_t(std::find(keys.begin(), keys.end(), key.text) - keys.begin());
      if (k == keys.size())
        error(lx, key.col, "unknown argument '", key.text, "' of ", kind.text, " (takes ", keys[0], ", ", keys[1],
              ", ", keys[2], ")");
      if (args[k].col) error(lx, key.col, "argument '", key.text, "' is given twice");
      expect(lx, '=', detail::cat("after '", key.text, "'"));
      args[k] = lx.next();  // col != 0 marks the argument as given
      Token sep = lx.next();
      if (sep.is(')')) break;
      if (!sep.is(',')) error(lx, sep.col, "expected ',' or ')' after an argument, found ", describe(sep));
    }
    for (size_t k = 0; k < 3; ++k)
      if (!args[k].col && !(normal && k == 2)) error(lx, kind.col, kind.text, " needs ", keys[k], "=");
    const Token& seed = args[0];
    if (seed.kind != Kind::Number || is_float_text(seed.text) || seed.text[0] == '-')
      error(lx, seed.col, "expected a seed (a non-negative integer), found ", describe(seed));
    std::string_view s = seed.text[0] == '+' ? seed.text.substr(1) : seed.text;
    uint64_t sv = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), sv);
    if (r.ec == std::errc::result_out_of_range) error(lx, seed.col, "seed ", describe(seed), " is out of range");
    if (r.ec != std::errc() || r.ptr != s.data() + s.size()) error(lx, seed.col, "bad number ", describe(seed));
    double a = float_value<double>(lx.loc(), args[1], keys[1]);
    if (!normal) return RandomRecipe::uniform(sv, a, float_value<double>(lx.loc(), args[2], keys[2]));
    double mean = args[2].col ? float_value<double>(lx.loc(), args[2], "mean") : 0.0;
    return RandomRecipe::normal(sv, a, mean);
  }

  // make_random converts doubles to integers, which must not overflow (that would be UB):
  // an integer constant's recipe has to stay inside the dtype. A normal sample is at most
  // 8.7 std from the mean (Box-Muller on 53-bit uniforms), so 9 std bounds it.
  void check_recipe_fits(Lexer& lx, int col, const RandomRecipe& r, DType dt) {
    if (!is_integer(dt)) return;
    double hi = dt == DType::I32 ? 2147483648.0 : 9223372036854775808.0;  // exclusive
    double lo = -hi;
    double a = r.a, b = r.a;
    if (r.kind == RandomRecipe::Kind::Normal) {
      a = r.a - 9 * std::fabs(r.b);
      b = r.a + 9 * std::fabs(r.b);
    } else if (r.kind == RandomRecipe::Kind::Uniform) {
      a = std::min(r.a, r.b);
      b = std::max(r.a, r.b);
    }
    if (!(a >= lo && b < hi))  // also false for NaN
      error(lx, col, r.str(), " gives values outside the range of ", dtype_name(dt));
  }

  // `[v, v, ...]`, row-major. Values are collected first so a wrong count is reported before
  // anything is allocated.
  Tensor inline_data(Lexer& lx, DType dt, const Shape& shape) {
    std::vector<Token> vals;
    Token close;
    if (lx.peek().is(']')) {
      close = lx.next();
    } else {
      for (;;) {
        Token v = lx.next();
        bool ok = dt == DType::Bool ? (v.is_word("true") || v.is_word("false") || v.kind == Kind::Number)
                                    : is_number(v);
        if (!ok) error(lx, v.col, "expected a ", dtype_name(dt), " value, found ", describe(v));
        vals.push_back(v);
        Token sep = lx.next();
        if (sep.is(']')) {
          close = sep;
          break;
        }
        if (!sep.is(',')) error(lx, sep.col, "expected ',' or ']' after a value, found ", describe(sep));
      }
    }
    int64_t n = shape.numel();
    if (int64_t(vals.size()) != n)
      error(lx, int64_t(vals.size()) > n ? vals[size_t(n)].col : close.col, "expected ", n, " value",
            n == 1 ? "" : "s", " for ", dtype_name(dt), shape.str(), ", found ", vals.size());
    Tensor t = Tensor::empty(dt, shape);
    for (size_t i = 0; i < vals.size(); ++i) {
      const Token& v = vals[i];
      switch (dt) {
        case DType::F32: t.data<float>()[i] = float_value<float>(lx.loc(), v, "f32"); break;
        case DType::F16: t.data<uint16_t>()[i] = f32_to_f16(float_value<float>(lx.loc(), v, "f16")); break;
        case DType::BF16: t.data<uint16_t>()[i] = f32_to_bf16(float_value<float>(lx.loc(), v, "bf16")); break;
        case DType::I64: t.data<int64_t>()[i] = int_value(lx.loc(), v, "an i64 value"); break;
        case DType::I32: {
          int64_t x = int_value(lx.loc(), v, "an i32 value");
          if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
            error(lx, v.col, "integer ", describe(v), " is out of range for i32");
          t.data<int32_t>()[i] = int32_t(x);
          break;
        }
        case DType::Bool: {
          int64_t x = v.is_word("true") ? 1 : v.is_word("false") ? 0 : int_value(lx.loc(), v, "a bool value");
          if (x != 0 && x != 1) error(lx, v.col, "expected true, false, 0 or 1, found ", describe(v));
          t.data<uint8_t>()[i] = uint8_t(x);
          break;
        }
      }
    }
    return t;
  }

  void output_statement(Lexer& lx) {
    for (;;) {
      Token name = expect_name(lx, "an output value name");
      ValueId v = lookup(lx, name);
      if (std::find(g_.outputs().begin(), g_.outputs().end(), v) != g_.outputs().end())
        error(lx, name.col, "value '", name.text, "' is already an output");
      g_.add_output(v);
      if (!lx.peek().is(',')) return;
      lx.next();
    }
  }

  void node_statement(Lexer& lx, const Token& first) {
    std::vector<Token> out_tokens{first};
    while (lx.peek().is(',')) {
      lx.next();
      out_tokens.push_back(expect_name(lx, "an output name"));
    }
    expect(lx, '=', "after the output names");
    Token op_tok = lx.next();
    if (op_tok.kind != Kind::Word) error(lx, op_tok.col, "expected an op type, found ", describe(op_tok));
    OpKind op;
    if (!parse_op_kind(op_tok.text, &op))
      error(lx, op_tok.col, "unknown op type ", describe(op_tok), op_suggestions(op_tok.text));
    const OpSchema& schema = op_schema(op);
    if (!schema.takes_outputs(out_tokens.size()))
      error(lx, out_tokens[0].col, schema.name, " has ", schema.max_outputs == kVariadic ? "at least " : "",
            schema.num_outputs, " output", schema.num_outputs == 1 ? "" : "s", ", found ", out_tokens.size(), " names");

    expect(lx, '(', detail::cat("after ", op_tok.text));
    std::vector<ValueId> inputs;
    if (lx.peek_char() == ')') {
      lx.next();
    } else {
      for (;;) {
        Token in = expect_name(lx, "an input name or '_'");
        inputs.push_back(in.text == "_" ? kNoValue : lookup(lx, in));
        Token sep = lx.next();
        if (sep.is(')')) break;
        if (!sep.is(',')) error(lx, sep.col, "expected ',' or ')' after an input, found ", describe(sep));
      }
    }
    Attributes attrs;
    if (lx.peek().is('{')) attrs = attributes(lx, schema);
    std::string node_name;
    int name_col = out_tokens[0].col;
    if (lx.peek().is_word("as")) {
      lx.next();
      Token n = expect_name(lx, "a node name after 'as'");
      node_name = std::string(n.text);
      name_col = n.col;
    }
    // Outputs are checked after the inputs so that `x = Relu(x)` reports the undefined input.
    std::vector<std::string> outs;
    for (const Token& t : out_tokens) outs.push_back(claim_value_name(lx, t));
    std::string effective = node_name.empty() ? outs[0] : node_name;
    if (!node_names_.emplace(effective).second)
      error(lx, name_col, "node name '", effective, "' is used twice");
    try {
      g_.add_node(op, std::move(inputs), std::move(outs), std::move(attrs), std::move(node_name));
    } catch (const Error& e) {  // the checks above should leave nothing for the graph to refuse
      error(lx, op_tok.col, e.message());
    }
    node_pos_.emplace_back(lx.loc().line, op_tok.col);
  }

  Attributes attributes(Lexer& lx, const OpSchema& schema) {
    expect(lx, '{', "to start the attributes");
    Attributes attrs;
    if (lx.peek_char() == '}') {
      lx.next();
      return attrs;
    }
    for (;;) {
      Token name = expect_name(lx, "an attribute name");
      if (attrs.count(name.text)) error(lx, name.col, "attribute '", name.text, "' is given twice");
      expect(lx, '=', detail::cat("after '", name.text, "'"));
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& s : schema.attrs)
        if (s.name == name.text) spec = &s;
      attrs.emplace(std::string(name.text), attribute_value(lx, spec));
      Token sep = lx.next();
      if (sep.is('}')) return attrs;
      if (!sep.is(',')) error(lx, sep.col, "expected ',' or '}' after an attribute, found ", describe(sep));
    }
  }

  // The schema decides only what the text cannot: the type of [] and int -> float.
  Attribute attribute_value(Lexer& lx, const AttrSpec* spec) {
    bool wants_float = spec && (spec->type == AttrType::Float || spec->type == AttrType::Floats);
    Token t = lx.next();
    if (t.kind == Kind::String) return Attribute(t.str);
    if (is_number(t)) {
      if (is_float_text(t.text) || wants_float) return Attribute(float_value<double>(lx.loc(), t, "a float"));
      return Attribute(int_value(lx.loc(), t, "an int"));
    }
    if (!t.is('['))
      error(lx, t.col, "expected an attribute value (a number, a [list] or a \"string\"), found ", describe(t));
    std::vector<Token> elems;
    bool any_float = wants_float;
    if (lx.peek().is(']')) {
      lx.next();
    } else {
      for (;;) {
        Token e = lx.next();
        if (!is_number(e)) error(lx, e.col, "expected a number in the list, found ", describe(e));
        any_float = any_float || is_float_text(e.text);
        elems.push_back(e);
        Token sep = lx.next();
        if (sep.is(']')) break;
        if (!sep.is(',')) error(lx, sep.col, "expected ',' or ']' in the list, found ", describe(sep));
      }
    }
    if (any_float) {
      std::vector<double> v;
      for (const Token& e : elems) v.push_back(float_value<double>(lx.loc(), e, "a float"));
      return Attribute(std::move(v));
    }
    std::vector<int64_t> v;
    for (const Token& e : elems) v.push_back(int_value(lx.loc(), e, "an int"));
    return Attribute(std::move(v));
  }

  // The verifier names a node by node_label(); the message gets the line of that node's op.
  void verify_with_lines() {
    try {
      verify(g_);
    } catch (const Error& e) {
      std::string where = source_;
      for (size_t i = 0; i < g_.nodes().size() && i < node_pos_.size(); ++i) {
        if (e.message().rfind(node_label(g_.nodes()[i]) + ":", 0) == 0) {
          where = detail::cat(source_, ":", node_pos_[i].first, ":", node_pos_[i].second);
          break;
        }
      }
      throw Error(e.code(), where + ": " + e.message());
    }
  }

  std::string_view text_;
  std::string base_dir_;
  std::string source_;
  Graph g_;
  bool seen_statement_ = false;
  std::unordered_map<std::string, int> defined_at_;      // value name -> line
  std::unordered_set<std::string> node_names_;
  std::vector<std::pair<int, int>> node_pos_;            // per node: line, column of the op
};

// Shortest text that reads back as the same float (so 0.1f prints as 0.1, not as the
// double nearest to it); always reads as a float.
std::string format_float(float v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

void print_inline(std::string& out, const Tensor& t) {
  out += '[';
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) out += ", ";
    switch (t.dtype()) {
      case DType::F32: out += format_float(t.data<float>()[i]); break;
      case DType::F16: out += format_float(f16_to_f32(t.data<uint16_t>()[i])); break;
      case DType::BF16: out += format_float(bf16_to_f32(t.data<uint16_t>()[i])); break;
      case DType::I64: out += std::to_string(t.data<int64_t>()[i]); break;
      case DType::I32: out += std::to_string(t.data<int32_t>()[i]); break;
      case DType::Bool: out += t.data<uint8_t>()[i] ? "true" : "false"; break;
    }
  }
  out += ']';
}

}  // namespace

Graph parse_graph(std::string_view text, const std::string& base_dir, const std::string& source) {
  return Parser(text, base_dir, source).parse();
}

Graph load_graph(const std::string& path) {
  InputFile f = open_input_file(path, "graph file");
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) text.append(buf, n);
  if (std::ferror(f.get())) fail(ErrorCode::Io, "cannot read graph file '", path, "': ", std::strerror(errno));
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return parse_graph(text, dir.empty() ? "." : dir.string(), path);
}

std::string print_graph(const Graph& g) {
  std::string out = "graph " + g.name() + "\n";
  for (ValueId v : g.inputs()) {
    const Value& val = g.value(v);
    out += "input " + val.name + ": " + type_text(val.dtype, val.dims) + "\n";
  }
  for (const Value& val : g.values()) {
    if (val.kind != ValueKind::Constant) continue;
    const Constant& c = g.constants()[size_t(val.constant)];
    out += "const " + val.name + ": " + std::string(dtype_name(c.data.dtype())) + c.data.shape().str() + " = ";
    if (c.recipe.empty()) print_inline(out, c.data);
    else out += c.recipe;
    out += '\n';
  }
  for (const Node& n : g.nodes()) {
    for (size_t i = 0; i < n.outputs.size(); ++i) out += (i ? ", " : "") + g.value(n.outputs[i]).name;
    out += " = ";
    out += op_name(n.op);
    out += '(';
    for (size_t i = 0; i < n.inputs.size(); ++i)
      out += (i ? ", " : "") + (n.inputs[i] == kNoValue ? std::string("_") : g.value(n.inputs[i]).name);
    out += ')';
    if (!n.attrs.empty()) {
      out += " {";
      bool first = true;
      for (const auto& [name, a] : n.attrs) {
        out += (first ? "" : ", ") + name + "=" + a.str();
        first = false;
      }
      out += '}';
    }
    if (n.outputs.empty() || n.name != g.value(n.outputs[0]).name) out += " as " + n.name;
    out += '\n';
  }
  if (!g.outputs().empty()) {
    out += "output ";
    for (size_t i = 0; i < g.outputs().size(); ++i) out += (i ? ", " : "") + g.value(g.outputs()[i]).name;
    out += '\n';
  }
  return out;
}

}  // namespace fusor
