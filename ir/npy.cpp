// Reading and writing .npy files. Every length in a file is checked against the file's size
// before it is used, so a corrupt or hostile file gives an Error, never a wild read or a huge
// allocation.
#include "ir/npy.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>
#include <vector>

#include "ir/input_file.h"

namespace fusor {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyType {
  std::string_view descr;
  DType dtype;
};
constexpr NpyType kNpyTypes[] = {{"<f4", DType::F32}, {"<f2", DType::F16}, {"<i8", DType::I64},
                                 {"<i4", DType::I32}, {"|b1", DType::Bool}};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// The header dict as read: descr, fortran_order and shape.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the Python dict literal of an npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!try_take('}')) {
      std::string key = string();
      expect(':');
      int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (k < 0) bad("unknown key '" + key + "'");
      if (seen[k]) bad("key '" + key + "' appears twice");
      seen[k] = true;
      if (k == 0) {
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == '[')
          fail(ErrorCode::Unsupported, "npy file '", path_, "': structured dtypes are not supported");
        h.descr = string();
      } else if (k == 1) {
        h.fortran_order = boolean();
      } else {
        h.shape = tuple();
      }
      if (!try_take(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) bad("text after the closing '}'");
    for (int k = 0; k < 3; ++k)
      if (!seen[k]) bad(std::string("missing key '") + (k == 0 ? "descr" : k == 1 ? "fortran_order" : "shape") + "'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    std::string shown;
    for (char c : s_.substr(0, 200)) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    fail(ErrorCode::ParseError, "npy file '", path_, "': malformed header (", what, " at offset ", pos_,
         "): ", shown);
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool try_take(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!try_take(c)) bad(std::string("expected '") + c + "'");
  }

  std::string string() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) bad("expected a quoted string");
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }

  bool boolean() {
    skip_space();
    for (auto [word, v] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return v;
      }
    }
    bad("expected True or False");
  }

  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!try_take(')')) {
      skip_space();
      size_t start = pos_;
      int64_t d = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        int digit = s_[pos_++] - '0';
        if (d > (kMaxElements - digit) / 10) bad("dimension too large");
        d = d * 10 + digit;
      }
      if (pos_ == start) bad("expected a dimension");
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 longs: (3L, 4L)
      dims.push_back(d);
      if (!try_take(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::string& path_;
};

uint32_t read_le(const unsigned char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  if constexpr (std::endian::native != std::endian::little)
    fail(ErrorCode::Unsupported, "npy files are read only on little-endian hosts");
  uint64_t size = 0;
  InputFile f = open_input_file(path, "npy file", &size);
  auto read = [&](void* dst, size_t n) {
    if (n && std::fread(dst, 1, n, f.get()) != n) {
      if (std::ferror(f.get())) fail(ErrorCode::Io, "cannot read npy file '", path, "': ", std::strerror(errno));
      fail(ErrorCode::ParseError, "npy file '", path, "' is truncated");
    }
  };

  unsigned char pre[12];
  if (size < 10) fail(ErrorCode::ParseError, "npy file '", path, "' is truncated (", size, " bytes)");
  read(pre, 10);
  if (std::memcmp(pre, kMagic, kMagicSize) != 0)
    fail(ErrorCode::ParseError, "'", path, "' is not an npy file (bad magic)");
  int major = pre[6], minor = pre[7];
  if ((major < 1 || major > 3) || minor != 0)
    fail(ErrorCode::Unsupported, "npy file '", path, "' has format version ", major, ".", minor,
         " (1.0, 2.0 and 3.0 are supported)");
  size_t preamble = major == 1 ? 10 : 12;
  if (size < preamble) fail(ErrorCode::ParseError, "npy file '", path, "' is truncated (", size, " bytes)");
  if (major != 1) read(pre + 10, 2);
  uint64_t header_len = read_le(pre + 8, major == 1 ? 2 : 4);
  if (header_len > size - preamble)
    fail(ErrorCode::ParseError, "npy file '", path, "' is truncated: the header claims ", header_len,
         " bytes but the file has ", size - preamble, " after the preamble");
  std::string text(size_t(header_len), '\0');
  read(text.data(), text.size());

  Header h = HeaderParser(text, path).parse();
  const NpyType* type = nullptr;
  for (const NpyType& t : kNpyTypes)
    if (t.descr == h.descr) type = &t;
  if (!type) {
    bool big = !h.descr.empty() && h.descr[0] == '>';
    fail(ErrorCode::Unsupported, "npy file '", path, "' has dtype '", h.descr, "'",
         big ? " (big-endian data is not supported)" : "", "; supported: <f4, <f2, <i8, <i4, |b1");
  }
  if (h.fortran_order)
    fail(ErrorCode::Unsupported, "npy file '", path, "' is in Fortran order; save it C-contiguous");
  int64_t numel = 0;
  try {
    numel = checked_numel(h.shape, "npy file '" + path + "' shape " + Shape(h.shape).str());
  } catch (const Error& e) {
    fail(ErrorCode::ParseError, e.message());
  }
  uint64_t want = uint64_t(numel) * dtype_size(type->dtype);
  uint64_t have = size - preamble - header_len;
  if (have != want)
    fail(ErrorCode::ParseError, "npy file '", path, "' holds ", have, " bytes of data but its header declares ",
         dtype_name(type->dtype), Shape(h.shape).str(), " (", want, " bytes)",
         have < want ? ": the file is truncated" : "");
  Tensor t = Tensor::empty(type->dtype, Shape(h.shape));
  read(t.raw(), t.nbytes());
  if (type->dtype == DType::Bool) {  // numpy writes 0/1; anything else still means true
    uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < numel; ++i) p[i] = p[i] != 0;
  }
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  FUSOR_CHECK(t.defined(), InvalidArgument, "write_npy('", path, "'): the tensor is undefined");
  FUSOR_CHECK(t.device() == Device::Host, Unsupported, "write_npy('", path, "'): the tensor is not in host memory");
  if constexpr (std::endian::native != std::endian::little)
    fail(ErrorCode::Unsupported, "npy files are written only on little-endian hosts");
  const NpyType* type = nullptr;
  for (const NpyType& n : kNpyTypes)
    if (n.dtype == t.dtype()) type = &n;
  if (!type)
    fail(ErrorCode::Unsupported, "write_npy('", path, "'): ", dtype_name(t.dtype()),
         " has no NumPy dtype (convert to f32 first)");

  std::string dict = "{'descr': '" + std::string(type->descr) + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < t.rank(); ++i) dict += (i ? ", " : "") + std::to_string(t.shape()[i]);
  dict += t.rank() == 1 ? ",), }" : "), }";
  // Version 1.0: 10 bytes of preamble, then the dict padded with spaces and ended by '\n' so
  // that the data starts 64-byte aligned.
  size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  size_t header_len = total - 10;
  FUSOR_CHECK(header_len <= 0xffff, Unsupported, "write_npy('", path, "'): the header of ", t.type_str(),
              " does not fit npy format 1.0");
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';
  unsigned char pre[10];
  std::memcpy(pre, kMagic, kMagicSize);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = uint8_t(header_len & 0xff);
  pre[9] = uint8_t(header_len >> 8);

  File f(std::fopen(path.c_str(), "wb"));
  if (!f) fail(ErrorCode::Io, "cannot create npy file '", path, "': ", std::strerror(errno));
  bool ok = std::fwrite(pre, 1, sizeof(pre), f.get()) == sizeof(pre) &&
            std::fwrite(dict.data(), 1, dict.size(), f.get()) == dict.size() &&
            (t.nbytes() == 0 || std::fwrite(t.raw(), 1, t.nbytes(), f.get()) == t.nbytes());
  int err = errno;
  if (std::fclose(f.release()) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) fail(ErrorCode::Io, "cannot write npy file '", path, "': ", std::strerror(err));
}

}  // namespace fusor
