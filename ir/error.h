// fusor::Error and the assertion macros: the one way every layer reports failure.
// Layer: ir (std only). User input problems throw Error with a code; broken internal
// invariants use FUSOR_ASSERT, which also throws (code Internal) so a bug never turns
// into UB inside a server, but says plainly that it is a bug.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fusor {

/// What kind of failure an Error reports; stable, so callers may switch on it.
enum class ErrorCode {
  InvalidGraph,       ///< malformed graph: cycles, dangling values, arity, bad attributes
  ShapeMismatch,      ///< shapes that do not fit an op or a declared input
  DTypeMismatch,      ///< element types that do not fit
  InvalidArgument,    ///< a bad argument to an API call (unknown input name, bad option)
  ParseError,         ///< text format or file contents that do not parse
  Unsupported,        ///< valid request that this build or backend cannot serve
  CompileFailed,      ///< a backend failed to compile a kernel
  CacheCorrupt,       ///< a cache entry that fails validation
  DeviceUnavailable,  ///< the requested device or backend is not present
  OutOfMemory,        ///< an allocation failed or a size overflowed
  Io,                 ///< a file could not be read or written
  NumericsMismatch,   ///< a fused kernel's results differ from its unfused ops' (EngineOptions::verify strict)
  Internal,           ///< a broken invariant inside fusor: a bug
};

/// The name of an error code, e.g. "ShapeMismatch".
std::string_view error_code_name(ErrorCode code);

/// The exception fusor throws for every failure. what() is "<Code>: <message>".
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  /// The kind of failure.
  ErrorCode code() const { return code_; }
  /// The message without the code prefix.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

namespace detail {
/// Concatenates streamable parts into one string.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
[[noreturn]] void assert_fail(const char* expr, const char* file, int line, const std::string& msg);
}  // namespace detail

/// The default warning sink of every layer: "fusor: warning: <message>" on standard error.
void warn_to_stderr(const std::string& message);

/// Throws Error(code, message built from the streamable parts).
template <class... Parts>
[[noreturn]] void fail(ErrorCode code, const Parts&... parts) {
  throw Error(code, detail::cat(parts...));
}

}  // namespace fusor

/// Checks an internal invariant; on failure throws Error(Internal) naming the expression.
#define FUSOR_ASSERT(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond)) ::fusor::detail::assert_fail(#cond, __FILE__, __LINE__,               \
                                              ::fusor::detail::cat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

/// Checks a condition on user input; on failure throws Error(code, parts...).
#define FUSOR_CHECK(cond, code, ...)                                  \
  do {                                                                \
    if (!(cond)) ::fusor::fail(::fusor::ErrorCode::code, __VA_ARGS__); \
  } while (0)
