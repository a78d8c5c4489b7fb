// Writing JSON scalars: the one escaping routine behind every JSON fusor prints (explain
// reports, the CLI's --json). Layer: ir (std only).
#pragma once

#include <string>
#include <string_view>

namespace fusor {

/// s as a quoted JSON string (quotes, backslashes and control characters escaped).
std::string json_string(std::string_view s);

/// v as a JSON number; NaN and infinities (which JSON lacks) become null.
std::string json_number(double v);

}  // namespace fusor
