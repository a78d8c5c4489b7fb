// The bytes of one entry of a kernel store, written and read the same way by every store
// (the disk store, the remote one): a versioned header, the key, the payload and its
// checksum. Layer: cache (std only).
//
// Note [Store entry]
// ~~~~~~~~~~~~~~~~~~
// An entry, all integers little-endian:
//   magic (8 bytes, one per store), format version u32,
//   engine version: u32 length + bytes, key: u64 length + bytes,
//   payload length u64, checksum u64, payload.
// The checksum is XXH64 (cache/checksum.h) of the payload, seeded with the XXH64 of every
// byte before the checksum, so it covers the header and the key too. A reader compares the
// key bytes in full, so two keys whose names collide never load each other's payload.
// Another magic is a foreign entry; another format or engine version is stale; one that ends
// early is truncated; a checksum mismatch is corrupt: all are faults, never loaded. What
// follows the payload is the store's own (the remote store's authentication tag, Note
// [Remote store entry]); the disk store allows nothing there.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace fusor {

/// Why an entry is not loaded.
enum class EntryFault { None, Truncated, Foreign, Stale, Corrupt };

/// "truncated", "foreign", "stale", "corrupt" ("valid" for None).
std::string_view entry_fault_name(EntryFault fault);

/// What names a store's entries: its 8-byte magic and its format version.
struct EntryFormat {
  std::string_view magic;  ///< exactly 8 bytes
  uint32_t version = 1;
};

/// The header of the entry of `payload` under `key` (Note [Store entry]): everything before
/// the payload, its checksum included. The entry is this followed by the payload.
std::string encode_entry_header(const EntryFormat& format, std::string_view engine_version, std::string_view key,
                                std::span<const uint8_t> payload);

/// An entry read back; the views point into the bytes given to decode_entry.
struct DecodedEntry {
  EntryFault fault = EntryFault::None;
  std::string detail;                ///< why, for a fault ("checksum mismatch")
  std::string_view engine_version;   ///< as written (set once the header reads, also when stale)
  std::string_view key;
  std::span<const uint8_t> payload;
  size_t end = 0;                    ///< where the entry ends: what follows is the store's
};

/// Reads and checks the entry at the start of `bytes` against `format` and
/// `engine_version` (Note [Store entry]). Never throws; every read is bounds-checked.
DecodedEntry decode_entry(std::span<const uint8_t> bytes, const EntryFormat& format,
                          std::string_view engine_version);

/// Little-endian integers, as the entries and their trailers write them.
void put_le32(std::string& s, uint32_t v);
void put_le64(std::string& s, uint64_t v);
/// The u32 at `p` (4 readable bytes), little-endian.
uint32_t get_le32(const uint8_t* p);

}  // namespace fusor
