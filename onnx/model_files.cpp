#include "onnx/model_files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "ir/error.h"

namespace fusor::onnx_import {

// Note [Reading model files]
// A model file and everything it points to are untrusted input (issue 19's rules):
// - every file is opened with O_NONBLOCK | O_CLOEXEC and fstat'ed before it is read;
//   anything but a regular file (a FIFO, a device, a folder) is refused, so nothing the
//   model names can make the loader wait forever;
// - reads are bounded by what the caller expects (the tensor's byte size, 2 GiB for a
//   model), checked against st_size before any allocation, never "st_size bytes at once"
//   for a file the model names;
// - an external data location is a relative path inside the model's folder: absolute
//   paths, ".." components and NUL bytes are refused, and the path is walked one
//   component at a time with openat(O_NOFOLLOW), so no symbolic link is followed — not
//   even one that stays inside the folder (a link cannot be told apart from one that
//   escapes without resolving it, and resolving races with whoever controls the folder).
//   The model file itself is the user's choice and may be a link.

namespace {

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Reads exactly n bytes at offset into dst; false at a premature end of file.
bool pread_all(int fd, void* dst, uint64_t n, uint64_t offset, int* err) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    size_t chunk = size_t(std::min<uint64_t>(n, uint64_t(1) << 30));
    ssize_t r = ::pread(fd, p, chunk, off_t(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (r == 0) {
      *err = 0;
      return false;
    }
    p += r;
    n -= uint64_t(r);
    offset += uint64_t(r);
  }
  return true;
}

}  // namespace

std::string read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  Fd f(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (f.fd < 0) fail(ErrorCode::Io, "cannot open ", what, " '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail(ErrorCode::Io, "cannot stat ", what, " '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(ErrorCode::Io, what, " '", path, "' is ", file_kind(st.st_mode), ", not a regular file");
  uint64_t size = uint64_t(st.st_size);
  if (size > max_bytes)
    fail(ErrorCode::Unsupported, what, " '", path, "' is ", size, " bytes, more than the ", max_bytes,
         " this reader takes", max_bytes == kMaxModelBytes ? " (protobuf's limit: keep the weights in external data)" : "");
  std::string bytes(size_t(size), '\0');
  int err = 0;
  if (!pread_all(f.fd, bytes.data(), size, 0, &err)) {
    if (err) fail(ErrorCode::Io, "cannot read ", what, " '", path, "': ", std::strerror(err));
    fail(ErrorCode::Io, "cannot read ", what, " '", path, "': it shrank while being read");
  }
  return bytes;
}

ExternalFiles::ExternalFiles(std::string base_dir, std::string source)
    : base_dir_(std::move(base_dir)), source_(std::move(source)) {}

ExternalFiles::~ExternalFiles() {
  for (auto& [name, f] : files_)
    if (f.fd >= 0) ::close(f.fd);
}

const ExternalFiles::File& ExternalFiles::open_file(const std::string& location, const std::string& what) {
  if (auto it = files_.find(location); it != files_.end()) return it->second;
  const std::string at = source_ + ": " + what + ": external data '" + location + "'";
  if (base_dir_.empty())
    fail(ErrorCode::Io, at, ": the model was given as bytes without a folder to read external data from");
  if (location.empty()) fail(ErrorCode::ParseError, at, ": the location is empty");
  if (location.find('\0') != std::string::npos) fail(ErrorCode::ParseError, at, ": the location holds a NUL byte");
  if (location[0] == '/')
    fail(ErrorCode::ParseError, at, ": an absolute path; external data must lie in the model's folder");
  std::vector<std::string> parts;
  for (size_t b = 0; b <= location.size();) {
    size_t e = location.find('/', b);
    if (e == std::string::npos) e = location.size();
    std::string part = location.substr(b, e - b);
    if (part == "..") fail(ErrorCode::ParseError, at, ": '..' leaves the model's folder");
    if (!part.empty() && part != ".") parts.push_back(part);
    b = e + 1;
  }
  if (parts.empty()) fail(ErrorCode::ParseError, at, ": the location names no file");

  Fd dir(::open(base_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0) fail(ErrorCode::Io, at, ": cannot open the model's folder '", base_dir_, "': ", std::strerror(errno));
  // O_NOFOLLOW refuses a link as the last component of each openat: ELOOP, or ENOTDIR when
  // O_DIRECTORY is asked too; fstatat tells a link from a plain failure.
  auto refuse = [&](int dirfd, const std::string& part, int err, const char* what) {
    struct stat ls;
    if (::fstatat(dirfd, part.c_str(), &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(ls.st_mode))
      fail(ErrorCode::Io, at, ": '", part,
           "' is a symbolic link; links are not followed (copy the file into the folder)");
    fail(ErrorCode::Io, at, ": cannot open ", what, " '", part, "' in '", base_dir_, "': ", std::strerror(err));
  };
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int next = ::openat(dir.fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) refuse(dir.fd, parts[i], errno, "folder");
    ::close(dir.fd);
    dir.fd = next;
  }
  Fd f(::openat(dir.fd, parts.back().c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (f.fd < 0) refuse(dir.fd, parts.back(), errno, "file");
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail(ErrorCode::Io, at, ": cannot stat: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(ErrorCode::Io, at, " is ", file_kind(st.st_mode), ", not a regular file");
  File file{f.release(), uint64_t(st.st_size)};
  return files_.emplace(location, file).first->second;
}

void ExternalFiles::check(const std::string& location, int64_t offset, int64_t length, uint64_t nbytes,
                          const std::string& what) {
  const std::string at = source_ + ": " + what + ": external data '" + location + "'";
  if (offset < 0) fail(ErrorCode::ParseError, at, ": negative offset ", offset);
  if (length >= 0 && uint64_t(length) != nbytes)
    fail(ErrorCode::ParseError, at, ": length ", length, " but the tensor's shape and dtype need ", nbytes, " bytes");
  const File& f = open_file(location, what);
  if (uint64_t(offset) > f.size || nbytes > f.size - uint64_t(offset))
    fail(ErrorCode::Io, at, ": the file has ", f.size, " bytes, fewer than offset ", offset, " + ", nbytes,
         " bytes of data");
}

void ExternalFiles::read(const std::string& location, int64_t offset, int64_t length, void* dst, uint64_t nbytes,
                         const std::string& what) {
  check(location, offset, length, nbytes, what);
  const File& f = open_file(location, what);
  const std::string at = source_ + ": " + what + ": external data '" + location + "'";
  int err = 0;
  if (!pread_all(f.fd, dst, nbytes, uint64_t(offset), &err))
    fail(ErrorCode::Io, at, ": cannot read ", nbytes, " bytes at offset ", offset, ": ",
         err ? std::strerror(err) : "the file shrank while being read");
}

}  // namespace fusor::onnx_import
