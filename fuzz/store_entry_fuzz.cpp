// libFuzzer target for the disk store's entry loader: any bytes as the file at an entry's
// name. DiskStore::get promises never to throw for a bad entry: it returns the payload or
// nothing (a bad entry warned about and removed). A crash, a sanitizer report or any
// exception is a bug. The store lives in a fresh folder under $TMPDIR for the process.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cache/disk_store.h"

namespace {

fusor::DiskStore& store() {
  static fusor::DiskStore s = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/fusor-store-fuzz-XXXXXX";
    if (!::mkdtemp(dir.data())) std::abort();
    fusor::DiskStore::Options o;
    o.dir = dir + "/store";
    o.sync = false;
    o.warn = [](const std::string&) {};
    return fusor::DiskStore::open(o);
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fusor::DiskStore& s = store();
  if (!s.enabled()) std::abort();
  static const std::string key = "fuzzed-kernel-key";
  const std::string path = s.entry_path(key);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, data, size) != ssize_t(size)) std::abort();
  ::close(fd);
  (void)s.get(key);
  return 0;
}
