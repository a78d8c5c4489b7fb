// DiskStore: the persistent, content-addressed blob store (compiled objects, cubins) in a
// directory that outlives the process and may be shared by several processes of one user.
// Layer: cache (std and POSIX only).
//
// Note [Disk store]
// ~~~~~~~~~~~~~~~~~
// Directory: Options::dir, else $FUSOR_CACHE_DIR, else $XDG_CACHE_HOME/fusor, else
// ~/.cache/fusor. A missing directory is created with mode 0700; an existing one must be
// empty or a store already (`--cache-dir /` does not spread files over /). The store is disabled
// (every load misses, every save is a no-op, nothing throws) with a warning and a
// reason_disabled() when the directory cannot be created, is not writable, is not owned by
// this user, or is writable by group or others, sticky or not (someone else could plant
// files under the names the store opens). Inside, an entry file that another user owns or may
// write is never loaded either, and every file is opened without blocking and checked to be
// a regular file of at most kMaxEntryBytes (256 MiB) before it is read: a FIFO, a folder or
// a sparse giant at an entry's name is a bad entry, removed, never a hang or a bad_alloc.
//
// Layout:
//   <dir>/entries/<16 hex digits>   one entry per key, named by the key's 64-bit hash
//   <dir>/manifest                  the versioned list of entries and their sizes
//   <dir>/lock                      flock'd while the manifest changes
//
// Writes are atomic: an entry is written to a temp file in entries/ (named by pid, thread
// and a counter, so no two writers share one), fsync'd, then renamed over its name; a
// reader sees the old entry, the new one, or none, never part of one. Entries are
// immutable once renamed: a second writer of the same key replaces the file whole.
// Loading validates everything (Note [Disk store entry]); an entry that fails is a miss,
// warned about once, and removed, so the next save rebuilds it. A load that hits touches the
// file's mtime, which trim() uses as its LRU order; a save that takes the listed entries
// past Options::max_bytes trims them to 90% of it. Whatever sits at an entry's name and is
// not a valid entry, a folder included, is removed.
//
// Note [Disk store entry]
// ~~~~~~~~~~~~~~~~~~~~~~~
// An entry file is one entry of Note [Store entry] (cache/store_entry.h), with the magic
// "FUSORBLB" and format kEntryFormatVersion, and nothing after the payload. Two keys whose
// hashes collide share a file name: the later save of either replaces the file, and a load
// of the other is a miss. Every fault (foreign, stale, truncated, corrupt, bytes after the
// payload) is a miss with a warning, and the file is removed.
//
// Note [Disk store manifest]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A text file: the line "fusor-disk-store-manifest <kManifestVersion>", then records
// "put <hash> <bytes>" and "del <hash>", appended under the flock of <dir>/lock. Replaying
// the records gives the live entries and their sizes (warmup summaries, trim). A torn last
// line is ignored (the next record starts on a line of its own); a missing manifest or
// another version is rebuilt by scanning entries/. open() compacts a manifest that has
// grown past twice its live records. The entry files are the truth; the manifest is their
// index, so a crash between an entry's rename and its record loses only the record
// (rebuild_manifest() finds it again).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/kernel_store.h"

namespace fusor {

/// A persistent blob store keyed by serialized keys (see Note [Disk store]); the kernel
/// store of one machine.
class DiskStore final : public KernelStore {
 public:
  /// Version of the entry file layout (Note [Disk store entry]).
  static constexpr uint32_t kEntryFormatVersion = 1;
  /// Version of the manifest layout (Note [Disk store manifest]).
  static constexpr uint32_t kManifestVersion = 1;

  /// How to open a store.
  struct Options {
    /// The directory; empty: $FUSOR_CACHE_DIR, $XDG_CACHE_HOME/fusor or ~/.cache/fusor.
    std::string dir;
    /// Written into every entry; entries of another version are stale. Empty: kFusorVersion.
    std::string engine_version;
    /// Receives each warning (a full sentence); each is given once per store. Unset: stderr.
    std::function<void(const std::string&)> warn;
    /// fsync each entry and its folder before put() returns (off: faster, but a power cut
    /// may lose recent entries; never corrupts one, since loads validate).
    bool sync = true;
    /// The most bytes the entries may take: a save that passes it trims the least recently
    /// used entries down to 90% of it. 0: $FUSOR_CACHE_MAX_BYTES, else 2 GiB.
    uint64_t max_bytes = 0;
  };

  /// Counters of this process's use of the store and what it holds now (location: dir()).
  using Stats = StoreStats;

  /// One entry listed in the manifest.
  struct Entry {
    uint64_t key_hash = 0;
    uint64_t bytes = 0;  ///< the entry file's size
  };

  /// Opens (creating if needed) the store. Never throws for a bad directory: the store
  /// comes back disabled, with the reason and a warning.
  static DiskStore open(Options options);
  /// Opens the store in the default directory (default_dir()).
  static DiskStore open();
  /// The directory open() would use with no Options::dir, from the environment ("" when
  /// there is no home directory either).
  static std::string default_dir();

  DiskStore(DiskStore&&) noexcept;
  DiskStore& operator=(DiskStore&&) noexcept;
  ~DiskStore() override;

  /// True when loads and saves reach the directory.
  bool enabled() const;
  /// Why the store is disabled, naming the directory and the fix ("" when enabled).
  std::string reason_disabled() const;
  /// The directory (also when disabled).
  std::string dir() const;

  /// The payload saved under key_bytes, or nullopt when there is none or the entry is not
  /// valid (warned about and removed). Thread-safe; never throws for a bad entry.
  std::optional<std::vector<uint8_t>> get(std::string_view key_bytes) override;
  /// Saves payload under key_bytes, replacing any previous entry atomically. False when
  /// disabled (warned at open) or when the write failed (warned once). Thread-safe; never
  /// throws.
  bool put(std::string_view key_bytes, std::span<const uint8_t> payload) override;

  /// The entries the manifest lists (empty when disabled).
  std::vector<Entry> entries() const;

  /// What one entry file is, found by check_all().
  struct Checked {
    uint64_t key_hash = 0;  ///< from its file name
    uint64_t bytes = 0;
    std::string kind;       ///< "valid", "foreign", "stale", "truncated", "corrupt", "misnamed", "unreadable"
    std::string detail;     ///< why, when not valid
  };
  /// Reads and checks every entry file in entries/ without loading any (`fusor store
  /// verify`); with remove_bad, removes each that is not valid (`fusor store prune`).
  std::vector<Checked> check_all(bool remove_bad);
  /// Removes least recently used entries until the listed entries take at most max_bytes;
  /// returns how many were removed.
  uint64_t trim(uint64_t max_bytes);
  /// Rewrites the manifest from the entry files on disk (after a crash between an entry's
  /// rename and its manifest record, or to drop records of removed files).
  void rebuild_manifest();

  /// This process's counters, and the entries the manifest lists now (none when disabled).
  Stats stats() const override;

  /// The hash that names the entry of key_bytes.
  static uint64_t key_hash(std::string_view key_bytes);
  /// The file that holds (or would hold) the entry of key_bytes.
  std::string entry_path(std::string_view key_bytes) const;

 private:
  struct State;
  explicit DiskStore(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace fusor
