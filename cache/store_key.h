// StoreKey: the secret that authenticates the entries of a store other processes can write
// (the remote store, Note [Remote store entry]): HMAC-SHA256 from OpenSSL's libcrypto,
// which stays behind this file. Layer: cache.
//
// Note [Store key file]
// ~~~~~~~~~~~~~~~~~~~~~
// The operator gives the key as a file (RemoteStoreOptions::key_file, else
// $FUSOR_STORE_KEY_FILE): its bytes, as they are, are the HMAC key (e.g. `head -c 32
// /dev/urandom > key`, or `openssl rand -hex 32 > key`). The file must be private to the
// user who runs fusor, as the disk store's folder must be: a regular file (a link to one is
// followed) owned by this user, with no permission for group or others (mode 0600 or 0400),
// of 16 to 4096 bytes. Anything else is refused with the reason and the fix, and the store
// that wanted the key is not used: someone who can read the key can forge entries, and
// someone who can write it can replace it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace fusor {

/// An HMAC-SHA256 key (Note [Store key file]).
class StoreKey {
 public:
  static constexpr size_t kTagBytes = 32;
  static constexpr size_t kMinKeyBytes = 16;
  static constexpr size_t kMaxKeyBytes = 4096;
  using Tag = std::array<uint8_t, kTagBytes>;

  /// The key in the file at `path`, or nullopt with *why set (naming the file, what is wrong
  /// and the fix) when the file is missing, unreadable, not private or of a bad size.
  static std::optional<StoreKey> load(const std::string& path, std::string* why);
  /// A key from bytes (at least kMinKeyBytes); for tests and tools.
  static StoreKey from_bytes(std::string_view bytes);

  /// HMAC-SHA256 of `data` under this key.
  Tag tag(std::span<const uint8_t> data) const;
  /// Whether `tag` is the tag of `data`, compared in constant time.
  bool verify(std::span<const uint8_t> data, std::span<const uint8_t> tag) const;

 private:
  explicit StoreKey(std::string key) : key_(std::move(key)) {}
  std::string key_;
};

/// The first `hex_digits` hex digits (at most 64) of SHA-256 of `data`: names that a
/// chosen key cannot collide.
std::string sha256_hex(std::string_view data, size_t hex_digits = 64);

}  // namespace fusor
