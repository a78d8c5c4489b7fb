#include "codegen/backends.h"

#include "ir/error.h"

namespace fusor {

const BackendInfo& backend_info(BackendKind b) {
  for (const BackendInfo& info : kBackends)
    if (info.kind == b) return info;
  fail(ErrorCode::InvalidArgument, "backend kind ", int(b), " is not one of codegen/backends.def");
}

std::string_view backend_name(BackendKind b) {
  for (const BackendInfo& info : kBackends)
    if (info.kind == b) return info.name;
  return "?";
}

BackendKind parse_backend(std::string_view name) {
  for (const BackendInfo& info : kBackends)
    if (info.name == name) return info.kind;
  fail(ErrorCode::InvalidArgument, "unknown backend '", name, "' (choices: ", backend_choices(), ")");
}

std::string backend_choices() {
  std::string s;
  for (const BackendInfo& info : kBackends) (s += s.empty() ? "" : ", ") += info.name;
  return s;
}

}  // namespace fusor
