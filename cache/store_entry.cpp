#include "cache/store_entry.h"

#include "cache/checksum.h"

namespace fusor {

namespace {

// Reads little-endian fields from a byte range; every read checks the bounds first.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : p_(b.data()), n_(b.size()) {}
  bool u32(uint32_t* v) {
    if (n_ - pos_ < 4) return false;
    *v = get_le32(p_ + pos_);
    pos_ += 4;
    return true;
  }
  bool u64(uint64_t* v) {
    if (n_ - pos_ < 8) return false;
    *v = uint64_t(get_le32(p_ + pos_)) | (uint64_t(get_le32(p_ + pos_ + 4)) << 32);
    pos_ += 8;
    return true;
  }
  bool bytes(uint64_t len, std::string_view* out) {
    if (n_ - pos_ < len) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_ + pos_), size_t(len));
    pos_ += size_t(len);
    return true;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view entry_fault_name(EntryFault fault) {
  switch (fault) {
    case EntryFault::None: return "valid";
    case EntryFault::Truncated: return "truncated";
    case EntryFault::Foreign: return "foreign";
    case EntryFault::Stale: return "stale";
    case EntryFault::Corrupt: return "corrupt";
  }
  return "corrupt";
}

void put_le32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
void put_le64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
}
uint32_t get_le32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}

std::string encode_entry_header(const EntryFormat& format, std::string_view engine_version, std::string_view key,
                                std::span<const uint8_t> payload) {
  std::string header(format.magic);
  put_le32(header, format.version);
  put_le32(header, uint32_t(engine_version.size()));
  header += engine_version;
  put_le64(header, key.size());
  header += key;
  put_le64(header, payload.size());
  put_le64(header, checksum64(payload.data(), payload.size(), checksum64(header.data(), header.size())));
  return header;
}

DecodedEntry decode_entry(std::span<const uint8_t> bytes, const EntryFormat& format,
                          std::string_view engine_version) {
  DecodedEntry e;
  auto fault = [&](EntryFault f, std::string detail) {
    e.fault = f;
    e.detail = std::move(detail);
    return e;
  };
  Reader r(bytes);
  std::string_view magic;
  uint32_t version = 0, version_len = 0;
  uint64_t key_len = 0, payload_len = 0, sum = 0;
  if (!r.bytes(format.magic.size(), &magic)) return fault(EntryFault::Truncated, std::to_string(bytes.size()) + " bytes");
  if (magic != format.magic) return fault(EntryFault::Foreign, "not a fusor entry: bad magic");
  if (!r.u32(&version)) return fault(EntryFault::Truncated, "ends in the header");
  if (version != format.version)
    return fault(EntryFault::Stale, "entry format " + std::to_string(version) + ", this fusor reads " +
                                        std::to_string(format.version));
  if (!r.u32(&version_len) || !r.bytes(version_len, &e.engine_version))
    return fault(EntryFault::Truncated, "ends in the header");
  if (e.engine_version != engine_version)
    return fault(EntryFault::Stale, "written by fusor " + std::string(e.engine_version) + ", this is " +
                                        std::string(engine_version));
  if (!r.u64(&key_len) || !r.bytes(key_len, &e.key) || !r.u64(&payload_len) || !r.u64(&sum))
    return fault(EntryFault::Truncated, "ends in the header");
  const size_t header_end = r.pos() - 8;
  if (r.left() < payload_len)
    return fault(EntryFault::Truncated,
                 std::to_string(r.left()) + " of " + std::to_string(payload_len) + " payload bytes");
  e.payload = bytes.subspan(r.pos(), size_t(payload_len));
  e.end = r.pos() + size_t(payload_len);
  if (sum != checksum64(e.payload.data(), e.payload.size(), checksum64(bytes.data(), header_end)))
    return fault(EntryFault::Corrupt, "checksum mismatch");
  return e;
}

}  // namespace fusor
