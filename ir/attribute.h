// Attribute: the typed constant parameters of a node (strides, axis, epsilon, ...).
// Layer: ir (std only).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fusor {

/// The kinds of attribute values.
enum class AttrType : uint8_t { Int, Float, Ints, Floats, String };

/// "int", "float", "ints", "floats", "string".
std::string_view attr_type_name(AttrType t);

/// One attribute value.
class Attribute {
 public:
  Attribute() : v_(int64_t(0)) {}
  Attribute(int64_t v) : v_(v) {}
  Attribute(int v) : v_(int64_t(v)) {}
  Attribute(double v) : v_(v) {}
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}
  Attribute(std::vector<double> v) : v_(std::move(v)) {}
  Attribute(std::string v) : v_(std::move(v)) {}
  Attribute(const char* v) : v_(std::string(v)) {}

  AttrType type() const { return AttrType(v_.index()); }
  int64_t i() const { return std::get<int64_t>(v_); }
  double f() const { return std::get<double>(v_); }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(v_); }
  const std::vector<double>& floats() const { return std::get<std::vector<double>>(v_); }
  const std::string& s() const { return std::get<std::string>(v_); }
  /// The value as the text format writes it: 3, 1e-05, [1, 2], "tanh".
  std::string str() const;

  bool operator==(const Attribute&) const = default;

 private:
  std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string> v_;
};

/// A node's attributes, sorted by name so printing and hashing are deterministic.
using Attributes = std::map<std::string, Attribute, std::less<>>;

/// Formats a double so that parsing it back yields the same value, and so that it always
/// reads as a float (contains '.', 'e', "inf" or "nan").
std::string format_double(double v);

}  // namespace fusor
