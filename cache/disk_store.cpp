#include "cache/disk_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include "cache/checksum.h"
#include "cache/store_entry.h"
#include "cache/version.h"
#include "ir/error.h"

namespace fusor {

namespace {

constexpr EntryFormat kFormat{"FUSORBLB", DiskStore::kEntryFormatVersion};  // Note [Store entry]
constexpr uint64_t kKeyHashSeed = 0x66757361722d6b31ull;  // names entries; any fixed value
constexpr const char* kManifestHeader = "fusor-disk-store-manifest";
// The largest entry a load reads (a kernel object is KiBs to a few MiB): a bigger file at an
// entry's name is corrupt (a sparse 64 GiB one made every run fail with bad_alloc).
constexpr uint64_t kMaxEntryBytes = uint64_t(256) << 20;
// The largest manifest read; a bigger one is rebuilt from the entries.
constexpr uint64_t kMaxManifestBytes = uint64_t(64) << 20;
constexpr int64_t kStaleTempSeconds = 3600;              // a temp file this old lost its writer

std::string errno_text(int err) { return std::strerror(err); }

std::string hex16(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

bool parse_hex16(std::string_view s, uint64_t* out) {
  if (s.size() != 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | uint64_t(d);
  }
  *out = v;
  return true;
}

std::string mode_text(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", unsigned(m & 07777));
  return b;
}

// Writes all of [data, data + n) to fd, retrying short writes and EINTR.
bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Reads up to n bytes from the start of fd; out ends up holding what could be read.
void read_all(int fd, std::vector<uint8_t>* out, size_t n) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, out->data() + got, n - got, off_t(got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += size_t(r);
  }
  out->resize(got);
}

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// Holds an flock on <dir>/lock for its lifetime; locks every process and thread out of the
// manifest (each FileLock opens its own descriptor, so threads exclude each other too).
class FileLock {
 public:
  FileLock(const std::string& path, bool exclusive)
      : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600)) {
    struct stat st;
    if (!fd_.ok() || ::fstat(fd_.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // (a FIFO would block)
    int r;
    do r = ::flock(fd_.get(), exclusive ? LOCK_EX : LOCK_SH);
    while (r != 0 && errno == EINTR);
    locked_ = r == 0;
  }
  ~FileLock() {
    if (locked_) ::flock(fd_.get(), LOCK_UN);
  }
  bool locked() const { return locked_; }

 private:
  Fd fd_;
  bool locked_ = false;
};

// Creates dir and its missing parents with mode 0700. Returns 0 or the errno of the failure.
int make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    std::string prefix = dir.substr(0, i);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) return errno;
  }
  return 0;
}

// Why a directory may not hold code this process will run, or "" when it may.
std::string unsafe_dir_reason(const std::string& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory; set FUSOR_CACHE_DIR to a folder of your own";
  if (st.st_uid != ::geteuid())
    return dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
           std::to_string(::geteuid()) + "); set FUSOR_CACHE_DIR to a folder of your own";
  // Sticky or not: in a folder others may write, they can create files under the names the
  // store opens (a FIFO at its lock or manifest, an entries/ of their own).
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return dir + " is writable by group or others (mode " + mode_text(st.st_mode) +
           "), so another user could plant files that fusor would open; fix it with `chmod go-w " + dir +
           "` or set FUSOR_CACHE_DIR to a private folder";
  return "";
}

// True when dir is empty or already holds a store (its manifest, entries/ or lock): a folder
// with other files in it (`--cache-dir /`, a home folder) is not made into one.
bool empty_or_store(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool ok = true;
  while (const struct dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (name == "manifest" || name == "entries" || name == "lock") {
      ok = true;
      break;
    }
    ok = false;
  }
  ::closedir(d);
  return ok;
}

// The store's size bound when Options::max_bytes is 0: $FUSOR_CACHE_MAX_BYTES, else 2 GiB.
uint64_t default_max_bytes(std::string* bad_env) {
  constexpr uint64_t kDefault = uint64_t(2) << 30;
  const char* v = std::getenv("FUSOR_CACHE_MAX_BYTES");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno || *end || n == 0 || v[0] == '-') {
    *bad_env = std::string("FUSOR_CACHE_MAX_BYTES=") + v + " is not a positive number of bytes; using 2 GiB";
    return kDefault;
  }
  return uint64_t(n);
}

// A replayed manifest: the live entries (the last record of a key counts).
struct Manifest {
  std::map<uint64_t, uint64_t> bytes;  // key hash → entry bytes
  uint64_t records = 0;
};

std::string manifest_header() {
  return std::string(kManifestHeader) + " " + std::to_string(DiskStore::kManifestVersion) + "\n";
}

// nullopt: missing, unreadable or another version.
std::optional<Manifest> read_manifest(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.ok()) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  if (uint64_t(st.st_size) > kMaxManifestBytes) return std::nullopt;  // rebuilt from the entries
  std::vector<uint8_t> raw;
  read_all(fd.get(), &raw, size_t(st.st_size));
  std::string_view text(reinterpret_cast<const char*>(raw.data()), raw.size());
  std::string header = manifest_header();
  if (text.substr(0, header.size()) != header) return std::nullopt;
  Manifest m;
  size_t pos = header.size();
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) break;  // a torn last line
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    uint64_t h = 0;
    if (line.size() >= 21 && line.substr(0, 4) == "put " && parse_hex16(line.substr(4, 16), &h) && line[20] == ' ') {
      uint64_t b = 0;
      bool digits = line.size() > 21;
      for (char c : line.substr(21)) {
        digits &= c >= '0' && c <= '9';
        b = b * 10 + uint64_t(c - '0');
      }
      if (!digits) continue;
      m.bytes[h] = b;
      ++m.records;
    } else if (line.size() == 20 && line.substr(0, 4) == "del " && parse_hex16(line.substr(4, 16), &h)) {
      m.bytes.erase(h);
      ++m.records;
    }
  }
  return m;
}

}  // namespace

struct DiskStore::State {
  std::string dir, entries_dir, manifest_path, lock_path;
  std::string engine_version;
  std::function<void(const std::string&)> warn;
  bool sync = true;
  bool enabled = false;
  std::string reason;
  uint64_t max_bytes = 0;                 // trim to 90% of this when the listed entries pass it
  std::atomic<uint64_t> listed_bytes{0};  // what the manifest lists (this process's view)

  std::mutex warned_mu;
  std::set<std::string> warned;
  std::atomic<uint64_t> temp_counter{0};
  StoreCounters counts;

  // Gives message to the sink once per distinct `what`.
  void warn_once(const std::string& what, const std::string& message) {
    {
      std::lock_guard<std::mutex> lk(warned_mu);
      if (!warned.insert(what).second) return;
    }
    if (warn)
      warn(message);
    else
      warn_to_stderr(message);
  }

  std::string path_of(uint64_t h) const { return entries_dir + "/" + hex16(h); }

  // A name no other writer uses: pid, thread and a per-store counter.
  std::string temp_path(const std::string& in_dir) {
    return in_dir + "/.tmp-" + std::to_string(::getpid()) + "-" +
           hex16(std::hash<std::thread::id>()(std::this_thread::get_id())) + "-" +
           std::to_string(temp_counter.fetch_add(1, std::memory_order_relaxed));
  }

  // Writes text to a temp file beside `path` and renames it over `path`.
  bool replace_file(const std::string& path, const std::string& text) {
    std::string tmp = temp_path(path.substr(0, path.rfind('/')));
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    bool ok = fd.ok() && write_all(fd.get(), text.data(), text.size()) && (!sync || ::fsync(fd.get()) == 0) &&
              ::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) ::unlink(tmp.c_str());
    return ok;
  }

  // Appends one record to the manifest. Caller holds the exclusive lock.
  void append_record(const std::string& record) {
    Fd fd(::open(manifest_path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    struct stat st;
    bool ok = fd.ok() && ::fstat(fd.get(), &st) == 0;
    std::string text = record;
    if (ok && st.st_size == 0) {
      text = manifest_header() + record;
    } else if (ok) {  // a writer that died mid-record left a torn line: end it first
      char last = '\n';
      if (::pread(fd.get(), &last, 1, st.st_size - 1) == 1 && last != '\n') text = "\n" + record;
    }
    if (ok) ok = write_all(fd.get(), text.data(), text.size());
    if (!ok)
      warn_once("manifest-write", "cannot update the disk cache manifest " + manifest_path + ": " +
                                      errno_text(errno) + "; entries still load, and open() rebuilds it");
  }

  // Writes the manifest listing exactly `m`. Caller holds the exclusive lock.
  void write_manifest(const Manifest& m) {
    std::string text = manifest_header();
    for (const auto& [h, b] : m.bytes) text += "put " + hex16(h) + " " + std::to_string(b) + "\n";
    if (!replace_file(manifest_path, text))
      warn_once("manifest-write", "cannot rewrite the disk cache manifest " + manifest_path + ": " +
                                      errno_text(errno));
  }

  // The entries on disk, found by scanning entries/; removes temp files abandoned by
  // crashed writers. Caller holds the exclusive lock.
  Manifest scan() {
    Manifest m;
    time_t now = ::time(nullptr);
    for (const std::string& in : {entries_dir, dir}) {
      DIR* d = ::opendir(in.c_str());
      if (!d) continue;
      while (struct dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        std::string path = in + "/" + name;
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        uint64_t h = 0;
        if (in == entries_dir && parse_hex16(name, &h)) {
          m.bytes[h] = uint64_t(st.st_size);
          ++m.records;
        } else if (name.rfind(".tmp-", 0) == 0 && now - st.st_mtime > kStaleTempSeconds) {
          ::unlink(path.c_str());
        }
      }
      ::closedir(d);
    }
    return m;
  }

  // Reads and checks the entry open at `fd` (Note [Disk store entry]): "valid", or the kind
  // of what is wrong ("foreign", "stale", "truncated", "corrupt"), or "unreadable" (out of
  // memory: not the entry's fault), with *detail.
  std::string read_entry(int fd, const struct stat& st, std::vector<uint8_t>* file, DecodedEntry* e,
                         std::string* detail) const {
    if (!S_ISREG(st.st_mode)) {
      *detail = "not a regular file";
      return "foreign";
    }
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
      *detail = "owned by uid " + std::to_string(st.st_uid) + " with mode " + mode_text(st.st_mode) +
                "; only this user's private files are loaded";
      return "foreign";
    }
    if (uint64_t(st.st_size) > kMaxEntryBytes) {
      *detail = std::to_string(st.st_size) + " bytes, more than any entry (" + std::to_string(kMaxEntryBytes >> 20) +
                " MiB)";
      return "corrupt";
    }
    try {
      read_all(fd, file, size_t(st.st_size));
    } catch (const std::bad_alloc&) {
      *detail = std::to_string(st.st_size) + " bytes: out of memory";
      return "unreadable";
    }
    *e = decode_entry(*file, kFormat, engine_version);
    if (e->fault != EntryFault::None) {
      *detail = e->detail;
      return std::string(entry_fault_name(e->fault));
    }
    if (e->end != file->size()) {
      *detail = "bytes after the payload";
      return "corrupt";
    }
    return "valid";
  }

  // Removes what sits at an entry's name: a file, or a folder (inside entries/, which only
  // this user can write, so it is ours), which unlink would leave there for ever.
  static bool remove_entry_file(const std::string& path, const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0;
    if (st.st_uid != ::geteuid()) return false;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return !ec;
  }

  // Removes an entry that failed validation, unless another writer has replaced it since
  // it was opened (then the new file is left alone).
  void remove_bad(const std::string& path, const struct stat& opened, uint64_t h) {
    struct stat now;
    if (::lstat(path.c_str(), &now) != 0 || now.st_ino != opened.st_ino || now.st_dev != opened.st_dev) return;
    if (!remove_entry_file(path, now)) return;
    FileLock lock(lock_path, true);
    if (lock.locked()) append_record("del " + hex16(h) + "\n");
  }
};

DiskStore::DiskStore(std::unique_ptr<State> state) : state_(std::move(state)) {}
DiskStore::DiskStore(DiskStore&&) noexcept = default;
DiskStore& DiskStore::operator=(DiskStore&&) noexcept = default;
DiskStore::~DiskStore() = default;

std::string DiskStore::default_dir() {
  if (const char* d = std::getenv("FUSOR_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/') return std::string(x) + "/fusor";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else {
    struct passwd pw, *found = nullptr;
    char buf[4096];
    if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir) home = found->pw_dir;
  }
  return home.empty() ? "" : home + "/.cache/fusor";
}

DiskStore DiskStore::open() { return open(Options{}); }

DiskStore DiskStore::open(Options options) {
  auto s = std::make_unique<State>();
  s->dir = options.dir.empty() ? default_dir() : options.dir;
  while (s->dir.size() > 1 && s->dir.back() == '/') s->dir.pop_back();
  s->entries_dir = s->dir + "/entries";
  s->manifest_path = s->dir + "/manifest";
  s->lock_path = s->dir + "/lock";
  s->engine_version = options.engine_version.empty() ? std::string(kFusorVersion) : options.engine_version;
  s->warn = std::move(options.warn);
  s->sync = options.sync;
  std::string bad_env;
  s->max_bytes = options.max_bytes ? options.max_bytes : default_max_bytes(&bad_env);
  if (!bad_env.empty()) s->warn_once("max-bytes", bad_env);

  auto disable = [&](std::string reason) {
    s->reason = std::move(reason);
    s->warn_once("disabled", "the disk cache is off, kernels are kept in memory only: " + s->reason);
    return DiskStore(std::move(s));
  };
  if (s->dir.empty())
    return disable("no cache directory: FUSOR_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset; set "
                   "FUSOR_CACHE_DIR to a folder of your own");
  if (struct stat st; ::stat(s->dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !empty_or_store(s->dir))
    return disable(s->dir + " already holds other files and no fusor store; give the store a folder of its own (" +
                   (s->dir == "/" ? std::string("/tmp/fusor-cache") : s->dir + "/fusor") + ", say)");
  for (const std::string& d : {s->dir, s->entries_dir}) {
    if (int err = make_dirs(d))
      return disable("cannot create " + d + ": " + errno_text(err) +
                     "; create it (mode 0700) or set FUSOR_CACHE_DIR to a writable folder");
    struct stat st;
    if (::stat(d.c_str(), &st) != 0) return disable("cannot read " + d + ": " + errno_text(errno));
    if (std::string why = unsafe_dir_reason(d, st); !why.empty()) return disable(why);
  }
  // Permission bits do not tell about read-only mounts or root squashing: try a real file.
  for (const std::string& d : {s->dir, s->entries_dir}) {
    std::string probe = s->temp_path(d);
    Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.ok())
      return disable(d + " is not writable (" + errno_text(errno) +
                     "); make it writable or set FUSOR_CACHE_DIR to a writable folder");
    ::unlink(probe.c_str());
  }
  s->enabled = true;
  {
    FileLock lock(s->lock_path, true);
    if (lock.locked()) {
      std::optional<Manifest> m = read_manifest(s->manifest_path);
      if (!m) {
        m = s->scan();
        s->write_manifest(*m);
      } else if (m->records > 2 * m->bytes.size() + 64) {
        s->write_manifest(*m);
      }
      uint64_t total = 0;
      for (const auto& [h, b] : m->bytes) total += b;
      s->listed_bytes = total;
    }
  }
  return DiskStore(std::move(s));
}

bool DiskStore::enabled() const { return state_ && state_->enabled; }

std::string DiskStore::reason_disabled() const {
  if (!state_) return "the store was moved from";
  return state_->reason;
}

std::string DiskStore::dir() const { return state_ ? state_->dir : ""; }

uint64_t DiskStore::key_hash(std::string_view key_bytes) {
  return checksum64(key_bytes.data(), key_bytes.size(), kKeyHashSeed);
}

std::string DiskStore::entry_path(std::string_view key_bytes) const {
  return state_ ? state_->path_of(key_hash(key_bytes)) : "";
}

std::optional<std::vector<uint8_t>> DiskStore::get(std::string_view key_bytes) {
  if (!enabled()) return std::nullopt;
  State& s = *state_;
  s.counts.load();
  uint64_t h = key_hash(key_bytes);
  std::string path = s.path_of(h);
  auto miss = [&]() -> std::optional<std::vector<uint8_t>> {
    s.counts.miss();
    return std::nullopt;
  };

  // Not blocking (a FIFO at the name would hang every run), not following links; the type,
  // owner and size are checked on the descriptor before anything is read.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.ok()) {
    if (errno != ENOENT)
      s.warn_once(path + ":open", "cannot read disk cache entry " + path + ": " + errno_text(errno) +
                                      "; it will be rebuilt in memory");
    return miss();
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return miss();
  auto bad = [&](const std::string& kind, const std::string& detail) {
    s.counts.corrupt();
    s.warn_once(path + ":" + kind, "ignoring " + kind + " disk cache entry " + path + " (" + detail +
                                       "); it is removed and will be rebuilt");
    s.remove_bad(path, st, h);
    return miss();
  };
  std::vector<uint8_t> file;
  DecodedEntry e;
  std::string detail;
  const std::string kind = s.read_entry(fd.get(), st, &file, &e, &detail);
  if (kind == "unreadable") {  // load never throws for an entry: a miss, compiled again
    s.warn_once(path + ":memory", "cannot read disk cache entry " + path + " (" + detail +
                                      "); it will be rebuilt in memory");
    return miss();
  }
  if (kind != "valid") return bad(kind, detail);
  if (e.key != key_bytes) return miss();  // another key with the same hash: valid, not ours

  ::futimens(fd.get(), nullptr);  // the mtime is trim()'s LRU clock
  s.counts.hit(e.payload.size());
  return std::vector<uint8_t>(e.payload.begin(), e.payload.end());
}

bool DiskStore::put(std::string_view key_bytes, std::span<const uint8_t> payload) {
  if (!enabled()) return false;
  State& s = *state_;
  if (payload.size() + key_bytes.size() + 4096 > kMaxEntryBytes) {
    s.counts.write_failed();
    s.warn_once("too-big", "not saving a " + std::to_string(payload.size()) + "-byte payload to the disk cache " +
                               s.dir + ": entries are at most " + std::to_string(kMaxEntryBytes >> 20) + " MiB");
    return false;
  }
  const std::string header = encode_entry_header(kFormat, s.engine_version, key_bytes, payload);

  uint64_t h = key_hash(key_bytes);
  std::string path = s.path_of(h), tmp = s.temp_path(s.entries_dir);
  bool ok = false;
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    ok = fd.ok() && write_all(fd.get(), header.data(), header.size()) &&
         write_all(fd.get(), payload.data(), payload.size()) && (!s.sync || ::fsync(fd.get()) == 0);
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    struct stat st;  // a folder at the entry's name (EISDIR, ENOTEMPTY): removed, then once more
    ok = (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST) && ::lstat(path.c_str(), &st) == 0 &&
         State::remove_entry_file(path, st) && ::rename(tmp.c_str(), path.c_str()) == 0;
  }
  if (!ok) {
    int err = errno;
    ::unlink(tmp.c_str());
    s.counts.write_failed();
    s.warn_once("write", "cannot save to the disk cache " + s.dir + ": " + errno_text(err) +
                             "; kernels are still kept in memory");
    return false;
  }
  if (s.sync) {
    Fd d(::open(s.entries_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (d.ok()) ::fsync(d.get());
  }
  {
    FileLock lock(s.lock_path, true);
    if (lock.locked()) s.append_record("put " + hex16(h) + " " + std::to_string(header.size() + payload.size()) + "\n");
  }
  s.counts.wrote(payload.size());
  // (A replaced entry is counted twice until the next trim recounts: trims come early, never late.)
  if (s.listed_bytes.fetch_add(header.size() + payload.size()) + header.size() + payload.size() > s.max_bytes)
    trim(s.max_bytes / 10 * 9);
  return true;
}

std::vector<DiskStore::Checked> DiskStore::check_all(bool remove_bad) {
  std::vector<Checked> out;
  if (!enabled()) return out;
  State& s = *state_;
  DIR* d = ::opendir(s.entries_dir.c_str());
  if (!d) return out;
  std::vector<std::pair<uint64_t, std::string>> names;
  while (const struct dirent* ent = ::readdir(d)) {
    uint64_t h = 0;
    if (parse_hex16(ent->d_name, &h)) names.emplace_back(h, s.entries_dir + "/" + ent->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& [h, path] : names) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    struct stat st;
    if (!fd.ok() || ::fstat(fd.get(), &st) != 0) continue;  // removed meanwhile (or a link: not ours to judge)
    Checked c{h, uint64_t(st.st_size), "", ""};
    std::vector<uint8_t> file;
    DecodedEntry e;
    c.kind = s.read_entry(fd.get(), st, &file, &e, &c.detail);
    if (c.kind == "valid" && key_hash(e.key) != h) {
      c.kind = "misnamed";
      c.detail = "its key hashes to " + hex16(key_hash(e.key));
    }
    if (remove_bad && c.kind != "valid" && c.kind != "unreadable") s.remove_bad(path, st, h);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<DiskStore::Entry> DiskStore::entries() const {
  std::vector<Entry> out;
  if (!enabled()) return out;
  FileLock lock(state_->lock_path, false);
  std::optional<Manifest> m = read_manifest(state_->manifest_path);
  if (!m) return out;
  for (const auto& [h, b] : m->bytes) out.push_back({h, b});
  return out;
}

uint64_t DiskStore::trim(uint64_t max_bytes) {
  if (!enabled()) return 0;
  State& s = *state_;
  FileLock lock(s.lock_path, true);
  if (!lock.locked()) return 0;
  std::optional<Manifest> listed = read_manifest(s.manifest_path);
  Manifest m = listed ? *listed : s.scan();
  struct Aged {
    struct timespec mtime;
    uint64_t hash, bytes;
  };
  std::vector<Aged> aged;
  uint64_t total = 0;
  for (auto it = m.bytes.begin(); it != m.bytes.end();) {
    struct stat st;
    if (::lstat(s.path_of(it->first).c_str(), &st) != 0) {  // listed but gone
      it = m.bytes.erase(it);
      continue;
    }
    aged.push_back({st.st_mtim, it->first, it->second});
    total += it->second;
    ++it;
  }
  std::sort(aged.begin(), aged.end(), [](const Aged& a, const Aged& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  uint64_t removed = 0;
  for (const Aged& a : aged) {
    if (total <= max_bytes) break;
    if (::unlink(s.path_of(a.hash).c_str()) == 0 || errno == ENOENT) {
      m.bytes.erase(a.hash);
      total -= a.bytes;
      ++removed;
    }
  }
  s.write_manifest(m);
  s.listed_bytes = total;
  return removed;
}

void DiskStore::rebuild_manifest() {
  if (!enabled()) return;
  FileLock lock(state_->lock_path, true);
  if (lock.locked()) state_->write_manifest(state_->scan());
}

DiskStore::Stats DiskStore::stats() const {
  Stats out;
  if (!state_) return out;
  const State& s = *state_;
  s.counts.fill(out);
  out.location = s.dir;
  for (const Entry& e : entries()) {
    ++out.entries;
    out.bytes += e.bytes;
  }
  return out;
}

}  // namespace fusor
