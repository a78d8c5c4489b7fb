#include "ir/attribute.h"

#include <charconv>
#include <cmath>

namespace fusor {

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Int: return "int";
    case AttrType::Float: return "float";
    case AttrType::Ints: return "ints";
    case AttrType::Floats: return "floats";
    case AttrType::String: return "string";
  }
  return "?";
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string Attribute::str() const {
  switch (type()) {
    case AttrType::Int: return std::to_string(i());
    case AttrType::Float: return format_double(f());
    case AttrType::Ints: {
      std::string s = "[";
      for (size_t k = 0; k < ints().size(); ++k) s += (k ? ", " : "") + std::to_string(ints()[k]);
      return s + "]";
    }
    case AttrType::Floats: {
      std::string s = "[";
      for (size_t k = 0; k < floats().size(); ++k) s += (k ? ", " : "") + format_double(floats()[k]);
      return s + "]";
    }
    case AttrType::String: {
      std::string s = "\"";
      for (char c : this->s()) {
        if (c == '"' || c == '\\') s += '\\';
        s += c;
      }
      return s + "\"";
    }
  }
  return "?";
}

}  // namespace fusor
