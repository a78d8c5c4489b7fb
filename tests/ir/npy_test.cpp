// Tests of .npy reading and writing: round trips per dtype and shape, headers as NumPy
// writes them (versions 1.0 to 3.0, Python 2 spellings), and one test per kind of bad file.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ir/npy.h"
#include "ir/random.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// An npy file of the given version with `dict` as its header (padded to 64 bytes, '\n'
// ended) followed by `data`.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  size_t pre = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((pre + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + '\0';
  size_t n = header.size();
  out += char(n & 0xff);
  out += char((n >> 8) & 0xff);
  if (major != 1) {
    out += char((n >> 16) & 0xff);
    out += char((n >> 24) & 0xff);
  }
  return out + header + data;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Reading `path` must throw an Error of `code` that names the file and says `what`.
void check_read_error(const std::string& path, ErrorCode code, const std::string& what) {
  try {
    read_npy(path);
  } catch (const Error& e) {
    INFO("error: " << e.what());
    CHECK(e.code() == code);
    CHECK(e.message().find(path) != std::string::npos);
    CHECK(e.message().find(what) != std::string::npos);
    return;
  }
  FAIL("read without an error: " << path);
}

}  // namespace

TEST_SUITE("ir/npy") {
  TEST_CASE("write then read gives the same tensor for every dtype and shape") {
    test::TempDir dir("npy-rt");
    std::vector<Shape> shapes = {Shape{}, Shape{5}, Shape{2, 3}, Shape{0}, Shape{2, 0, 3}, Shape{1, 1, 1, 1},
                                 Shape{3, 1, 7}};
    int seed = 0;
    for (DType t : {DType::F32, DType::F16, DType::I64, DType::I32, DType::Bool}) {
      for (const Shape& s : shapes) {
        INFO(dtype_name(t) << s.str());
        Tensor want = make_random(t, s, RandomRecipe::normal(uint64_t(++seed), 50.0));
        std::string path = dir.file("t.npy");
        write_npy(path, want);
        std::string bytes = read_file(path);
        REQUIRE(bytes.size() >= 10 + want.nbytes());
        CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
        CHECK((bytes.size() - want.nbytes()) % 64 == 0);  // data starts 64-byte aligned
        CHECK(bytes[bytes.size() - want.nbytes() - 1] == '\n');
        Tensor got = read_npy(path);
        CHECK(got.dtype() == want.dtype());
        CHECK(got.shape() == want.shape());
        CHECK(std::memcmp(got.raw(), want.raw(), want.nbytes()) == 0);
      }
    }
  }

  TEST_CASE("the header is the one NumPy writes") {
    test::TempDir dir("npy-header");
    struct Case {
      Tensor t;
      std::string dict;
    } cases[] = {
        {Tensor::zeros(DType::F32, Shape{2, 3}), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {Tensor::zeros(DType::I64, Shape{5}), "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"},
        {Tensor::zeros(DType::Bool, Shape{}), "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"},
        {Tensor::zeros(DType::F16, Shape{0, 4}), "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 4), }"},
        {Tensor::zeros(DType::I32, Shape{1}), "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }"},
    };
    for (const Case& c : cases) {
      INFO(c.dict);
      write_npy(dir.file("h.npy"), c.t);
      std::string bytes = read_file(dir.file("h.npy"));
      size_t header_len = (10 + c.dict.size() + 1 + 63) / 64 * 64 - 10;  // padded to 64 bytes in all
      REQUIRE(bytes.size() == 10 + header_len + c.t.nbytes());
      CHECK(uint8_t(bytes[8]) + 256u * uint8_t(bytes[9]) == header_len);  // little-endian
      std::string header = bytes.substr(10, header_len);
      CHECK(header.substr(0, c.dict.size()) == c.dict);
      CHECK(header.find_first_not_of(' ', c.dict.size()) == header_len - 1);
      CHECK(header.back() == '\n');
    }
  }

  TEST_CASE("versions 2.0 and 3.0 and header spellings are read") {
    test::TempDir dir("npy-versions");
    std::string data = floats({1, 2, 3, 4, 5, 6});
    struct Case {
      const char* dict;
      int major;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 2},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 3},
        {"{\"shape\": (2, 3), \"descr\": \"<f4\", \"fortran_order\": False}", 1},
        {"{'descr':'<f4','fortran_order':False,'shape':(2L, 3L)}", 1},
        {"{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }", 1},
    };
    for (const Case& c : cases) {
      INFO(c.dict << " v" << c.major);
      write_file(dir.file("v.npy"), npy_bytes(c.dict, data, c.major));
      Tensor t = read_npy(dir.file("v.npy"));
      CHECK(t.dtype() == DType::F32);
      CHECK(t.shape() == Shape{2, 3});
      CHECK(t.data<float>()[5] == 6.0f);
    }
  }

  TEST_CASE("bool data other than 0 and 1 reads as true") {
    test::TempDir dir("npy-bool");
    write_file(dir.file("b.npy"), npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                            std::string("\x00\x01\x07", 3)));
    Tensor t = read_npy(dir.file("b.npy"));
    CHECK(t.data<uint8_t>()[0] == 0);
    CHECK(t.data<uint8_t>()[1] == 1);
    CHECK(t.data<uint8_t>()[2] == 1);
  }

  TEST_CASE("bf16 cannot be written") {
    test::TempDir dir("npy-bf16");
    try {
      write_npy(dir.file("x.npy"), Tensor::zeros(DType::BF16, Shape{2}));
      FAIL("wrote bf16");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Unsupported);
      CHECK(e.message().find("bf16") != std::string::npos);
    }
    CHECK_FALSE(std::filesystem::exists(dir.file("x.npy")));
  }

  TEST_CASE("unwritable and unreadable paths are Io errors") {
    test::TempDir dir("npy-io");
    try {
      write_npy(dir.file("no/such/folder/x.npy"), Tensor::zeros(DType::F32, Shape{2}));
      FAIL("wrote");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK(e.message().find("No such file") != std::string::npos);
    }
    check_read_error(dir.file("missing.npy"), ErrorCode::Io, "No such file");
    check_read_error(dir.path().string(), ErrorCode::Io, "");
  }

  TEST_CASE("truncated files are parse errors") {
    test::TempDir dir("npy-trunc");
    std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats({1, 2, 3, 4, 5, 6}));
    write_file(dir.file("t.npy"), good.substr(0, good.size() - 1));
    check_read_error(dir.file("t.npy"), ErrorCode::ParseError, "truncated");
    write_file(dir.file("t.npy"), good.substr(0, 40));  // inside the header
    check_read_error(dir.file("t.npy"), ErrorCode::ParseError, "truncated");
    write_file(dir.file("t.npy"), good.substr(0, 7));
    check_read_error(dir.file("t.npy"), ErrorCode::ParseError, "truncated");
    write_file(dir.file("t.npy"), "");
    check_read_error(dir.file("t.npy"), ErrorCode::ParseError, "truncated");
    // Every prefix of a good file fails cleanly.
    for (size_t n = 0; n < good.size(); ++n) {
      write_file(dir.file("t.npy"), good.substr(0, n));
      CHECK_THROWS_AS(read_npy(dir.file("t.npy")), Error);
    }
    write_file(dir.file("t.npy"), good + "xx");
    check_read_error(dir.file("t.npy"), ErrorCode::ParseError, "holds 26 bytes of data");
  }

  TEST_CASE("bad magic is a parse error") {
    test::TempDir dir("npy-magic");
    std::string good = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}));
    std::string bad = good;
    bad[1] = 'M';
    write_file(dir.file("m.npy"), bad);
    check_read_error(dir.file("m.npy"), ErrorCode::ParseError, "bad magic");
    write_file(dir.file("m.npy"), "PK\x03\x04 this is a zip file, not an npy file");
    check_read_error(dir.file("m.npy"), ErrorCode::ParseError, "bad magic");
  }

  TEST_CASE("malformed headers are parse errors") {
    test::TempDir dir("npy-dict");
    const char* dicts[] = {
        "",
        "garbage",
        "{'descr': '<f4', 'fortran_order': False}",                            // no shape
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",     // unknown key
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
        "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
    };
    for (const char* d : dicts) {
      INFO(d);
      write_file(dir.file("h.npy"), npy_bytes(d, floats({1})));
      check_read_error(dir.file("h.npy"), ErrorCode::ParseError, "header");
    }
  }

  TEST_CASE("a huge declared shape in a small file is a parse error") {
    test::TempDir dir("npy-huge");
    write_file(dir.file("h.npy"),
               npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 1000), }", floats({1})));
    check_read_error(dir.file("h.npy"), ErrorCode::ParseError, "truncated");
    write_file(dir.file("h.npy"),
               npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", floats({1})));
    check_read_error(dir.file("h.npy"), ErrorCode::ParseError, "overflows");
    // A header length beyond the end of the file.
    std::string bytes = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}), 2);
    bytes[10] = '\xff';
    bytes[11] = '\x7f';
    write_file(dir.file("h.npy"), bytes);
    check_read_error(dir.file("h.npy"), ErrorCode::ParseError, "truncated");
  }

  TEST_CASE("fortran order big-endian and other dtypes are unsupported") {
    test::TempDir dir("npy-unsupported");
    struct Case {
      const char* dict;
      const char* what;
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", "Fortran order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "big-endian"},
        {"{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", "'|u1'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", "'<f8'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured"},
    };
    for (const Case& c : cases) {
      INFO(c.dict);
      write_file(dir.file("u.npy"), npy_bytes(c.dict, floats({1})));
      check_read_error(dir.file("u.npy"), ErrorCode::Unsupported, c.what);
    }
    std::string v4 = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", floats({1}), 2);
    v4[6] = 4;
    write_file(dir.file("u.npy"), v4);
    check_read_error(dir.file("u.npy"), ErrorCode::Unsupported, "version 4.0");
  }
}
