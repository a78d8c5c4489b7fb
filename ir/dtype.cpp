#include "ir/dtype.h"

namespace fusor {

std::string_view dtype_name(DType t) {
  switch (t) {
#define FUSOR_X(e, n, ty, b) \
  case DType::e: return n;
    FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
  }
  return "?";
}

bool parse_dtype(std::string_view name, DType* out) {
#define FUSOR_X(e, n, ty, b) \
  if (name == n) {           \
    *out = DType::e;         \
    return true;             \
  }
  FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
  return false;
}

}  // namespace fusor
