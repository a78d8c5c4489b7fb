#include "ir/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ir/error.h"

namespace fusor {

InputFile open_input_file(const std::string& path, std::string_view what, uint64_t* size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::Io, "cannot open ", what, " '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(ErrorCode::Io, "cannot open ", what, " '", path, "': ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::Io, what, " '", path, "' is not a regular file");
  }
  InputFile f(::fdopen(fd, "rb"));
  if (!f) {
    const int err = errno;
    ::close(fd);
    fail(ErrorCode::Io, "cannot open ", what, " '", path, "': ", std::strerror(err));
  }
  if (size) *size = uint64_t(st.st_size);
  return f;
}

}  // namespace fusor
