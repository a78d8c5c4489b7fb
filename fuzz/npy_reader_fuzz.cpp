// libFuzzer target for the npy reader: any bytes as a .npy file (read through a memfd, so
// the reader's own open and size checks run). Every failure must be a fusor::Error of a
// user-facing code; anything else (a crash, a sanitizer report, another exception, an
// Internal error, a huge allocation) is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ir/error.h"
#include "ir/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("fusor-npy-fuzz", 0);
  if (fd < 0) std::abort();
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != ssize_t(size)) std::abort();
  try {
    fusor::Tensor t = fusor::read_npy("/proc/self/fd/" + std::to_string(fd));
    (void)t.nbytes();
  } catch (const fusor::Error& e) {
    if (e.code() == fusor::ErrorCode::Internal) {
      std::fprintf(stderr, "npy_reader_fuzz: internal error: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
