#include "cache/store_key.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ir/error.h"

namespace fusor {

std::optional<StoreKey> StoreKey::load(const std::string& path, std::string* why) {
  auto refuse = [&](const std::string& what) -> std::optional<StoreKey> {
    *why = "the store key file " + path + " " + what;
    return std::nullopt;
  };
  if (path.empty()) {
    *why = "no store key file was given (RemoteStoreOptions::key_file or $FUSOR_STORE_KEY_FILE)";
    return std::nullopt;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return refuse(std::string("cannot be opened: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return refuse(std::string("cannot be read: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return refuse("is not a regular file");
  if (st.st_uid != ::geteuid())
    return refuse("is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
                  std::to_string(::geteuid()) + "); only a key private to this user is used");
  if (st.st_mode & (S_IRWXG | S_IRWXO)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return refuse(std::string("has mode ") + mode +
                  ": group or others may read or write it, so they could forge entries (fix: chmod 600 " + path + ")");
  }
  if (st.st_size < off_t(kMinKeyBytes) || st.st_size > off_t(kMaxKeyBytes))
    return refuse("holds " + std::to_string(st.st_size) + " bytes; a key has " + std::to_string(kMinKeyBytes) +
                  " to " + std::to_string(kMaxKeyBytes) + " (e.g. head -c 32 /dev/urandom > " + path + ")");
  std::string key(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return refuse("changed while it was read");
    got += size_t(n);
  }
  return StoreKey(std::move(key));
}

StoreKey StoreKey::from_bytes(std::string_view bytes) {
  FUSOR_CHECK(bytes.size() >= kMinKeyBytes && bytes.size() <= kMaxKeyBytes, InvalidArgument, "a store key has ",
              kMinKeyBytes, " to ", kMaxKeyBytes, " bytes, not ", bytes.size());
  return StoreKey(std::string(bytes));
}

StoreKey::Tag StoreKey::tag(std::span<const uint8_t> data) const {
  Tag t{};
  unsigned len = 0;
  // HMAC() fails only for an unknown digest or an allocation failure: both are bugs or OOM.
  if (!HMAC(EVP_sha256(), key_.data(), int(key_.size()), data.data(), data.size(), t.data(), &len) ||
      len != kTagBytes)
    fail(ErrorCode::Internal, "HMAC-SHA256 failed in libcrypto");
  return t;
}

bool StoreKey::verify(std::span<const uint8_t> data, std::span<const uint8_t> tag) const {
  if (tag.size() != kTagBytes) return false;
  const Tag expect = this->tag(data);
  return CRYPTO_memcmp(expect.data(), tag.data(), kTagBytes) == 0;
}

std::string sha256_hex(std::string_view data, size_t hex_digits) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (!EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr))
    fail(ErrorCode::Internal, "SHA-256 failed in libcrypto");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len && s.size() < hex_digits; ++i) {
    s.push_back(kHex[md[i] >> 4]);
    s.push_back(kHex[md[i] & 15]);
  }
  s.resize(std::min(s.size(), hex_digits));
  return s;
}

}  // namespace fusor
