#include "ir/error.h"

#include <cstdio>

namespace fusor {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidGraph: return "InvalidGraph";
    case ErrorCode::ShapeMismatch: return "ShapeMismatch";
    case ErrorCode::DTypeMismatch: return "DTypeMismatch";
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::ParseError: return "ParseError";
    case ErrorCode::Unsupported: return "Unsupported";
    case ErrorCode::CompileFailed: return "CompileFailed";
    case ErrorCode::CacheCorrupt: return "CacheCorrupt";
    case ErrorCode::DeviceUnavailable: return "DeviceUnavailable";
    case ErrorCode::OutOfMemory: return "OutOfMemory";
    case ErrorCode::Io: return "Io";
    case ErrorCode::NumericsMismatch: return "NumericsMismatch";
    case ErrorCode::Internal: return "Internal";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message),
      code_(code),
      message_(message) {}

void warn_to_stderr(const std::string& message) { std::fprintf(stderr, "fusor: warning: %s\n", message.c_str()); }

namespace detail {
void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
  throw Error(ErrorCode::Internal, cat("internal invariant broken (a fusor bug): ", expr, " at ",
                                       file, ":", line, msg.empty() ? "" : ": ", msg));
}
}  // namespace detail

}  // namespace fusor
