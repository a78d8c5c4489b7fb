// External data: tensors whose bytes live in files next to the model (location, offset,
// length). What a model may point at is untrusted: only regular files inside the model's
// folder, no "..", no absolute paths, no symbolic links, sizes checked; a FIFO never blocks.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

// A tensor whose data is at `location` (offset, length: -1 leaves the key out).
onnx::TensorProto external_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::string& location,
                                  int64_t offset = -1, int64_t length = -1) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* key, const std::string& value) {
    auto* kv = t.add_external_data();
    kv->set_key(key);
    kv->set_value(value);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
  return t;
}

// y = x + a + b with a, b external.
OnnxBuilder model_with(const onnx::TensorProto& a, const onnx::TensorProto& b) {
  OnnxBuilder m(17);
  m.input("x", kFloat, {2});
  m.initializer(a);
  m.initializer(b);
  m.node("Add", {"x", a.name()}, {"s"});
  m.node("Add", {"s", b.name()}, {"y"});
  m.output("y");
  return m;
}

void write_floats(const std::string& path, const std::vector<float>& v) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

// Loading `model` saved in `dir` must fail with `code` and name the tensor and `part`.
void check_load_error(const TempDir& dir, const OnnxBuilder& model, ErrorCode code, const std::string& part) {
  model.save(dir.file("model.onnx"));
  std::string msg;
  ErrorCode got = error_of([&] { load_onnx(dir.file("model.onnx")); }, &msg);
  INFO("message: " << msg);
  CHECK(got == code);
  CHECK(msg.find(dir.file("model.onnx")) != std::string::npos);
  CHECK(msg.find("initializer 'a'") != std::string::npos);
  CHECK(msg.find(part) != std::string::npos);
}

}  // namespace

TEST_SUITE("onnx/external data") {
  TEST_CASE("tensors at offsets of one file, and in a subfolder") {
    TempDir dir("onnx-ext");
    write_floats(dir.file("weights.bin"), {9, 9, 1, 2, 10, 20});
    std::filesystem::create_directories(dir.path() / "sub");
    write_floats(dir.file("sub/b.bin"), {100, 200});
    OnnxBuilder m = model_with(external_tensor("a", {2}, "weights.bin", 8, 8), external_tensor("b", {2}, "sub/b.bin"));
    m.save(dir.file("model.onnx"));
    Graph g = load_onnx(dir.file("model.onnx"));
    Engine engine(EngineOptions{.num_threads = 1, .disk_cache = false});
    Tensor y = engine.run(g, {{"x", make(DType::F32, {2}, {0.5, 0.25})}}).at("y");
    CHECK(y.at(0) == 101.5);
    CHECK(y.at(1) == 202.25);
    // The same model loaded from bytes reads its data from the folder it is given.
    OnnxOptions o;
    o.base_dir = dir.path().string();
    CHECK(load_onnx_bytes(m.bytes(), o).constants().size() == 2);
  }

  TEST_CASE("missing external data") {
    TempDir dir("onnx-ext-missing");
    write_floats(dir.file("b.bin"), {1, 2});
    check_load_error(dir, model_with(external_tensor("a", {2}, "absent.bin"), external_tensor("b", {2}, "b.bin")),
                     ErrorCode::Io, "absent.bin");
    // Given as bytes without a folder, external data cannot be read.
    std::string msg;
    CHECK(error_of([&] {
            load_onnx_bytes(model_with(external_tensor("a", {2}, "b.bin"), external_tensor("b", {2}, "b.bin")).bytes());
          }, &msg) == ErrorCode::Io);
    CHECK(msg.find("without a folder") != std::string::npos);
  }

  TEST_CASE("a location that leaves the folder is refused") {
    TempDir outer("onnx-ext-outer");
    std::filesystem::create_directories(outer.path() / "model");
    write_floats(outer.file("secret.bin"), {1, 2});
    TempDir& dir = outer;
    auto check = [&](const std::string& location, ErrorCode code, const std::string& part) {
      OnnxBuilder m = model_with(external_tensor("a", {2}, location), external_tensor("b", {2}, location));
      m.save(dir.file("model/model.onnx"));
      std::string msg;
      ErrorCode got = error_of([&] { load_onnx(dir.file("model/model.onnx")); }, &msg);
      INFO("location " << location << ": " << msg);
      CHECK(got == code);
      CHECK(msg.find(part) != std::string::npos);
    };
    check("../secret.bin", ErrorCode::ParseError, "'..' leaves the model's folder");
    check("sub/../../secret.bin", ErrorCode::ParseError, "'..'");
    check("/etc/passwd", ErrorCode::ParseError, "an absolute path");
    check("", ErrorCode::ParseError, "empty");
    check("./", ErrorCode::ParseError, "names no file");
    // Symbolic links: to a file outside, to a folder outside, and even one inside.
    std::filesystem::create_symlink(outer.file("secret.bin"), outer.file("model/link.bin"));
    check("link.bin", ErrorCode::Io, "symbolic link");
    std::filesystem::create_symlink(outer.path(), outer.path() / "model" / "up");
    check("up/secret.bin", ErrorCode::Io, "symbolic link");
    write_floats(outer.file("model/real.bin"), {1, 2});
    std::filesystem::create_symlink("real.bin", outer.file("model/inside.bin"));
    check("inside.bin", ErrorCode::Io, "symbolic link");
    check("real.bin/x", ErrorCode::Io, "real.bin");  // a file used as a folder
  }

  TEST_CASE("a FIFO, a folder or a device as external data is refused without blocking") {
    TempDir dir("onnx-ext-fifo");
    REQUIRE(::mkfifo(dir.file("pipe").c_str(), 0600) == 0);
    write_floats(dir.file("b.bin"), {1, 2});
    check_load_error(dir, model_with(external_tensor("a", {2}, "pipe"), external_tensor("b", {2}, "b.bin")),
                     ErrorCode::Io, "a FIFO");
    std::filesystem::create_directories(dir.path() / "folder");
    check_load_error(dir, model_with(external_tensor("a", {2}, "folder"), external_tensor("b", {2}, "b.bin")),
                     ErrorCode::Io, "a folder");
  }

  TEST_CASE("sizes are checked against the shape") {
    TempDir dir("onnx-ext-size");
    write_floats(dir.file("w.bin"), {1, 2, 3});
    auto with = [&](const onnx::TensorProto& a) { return model_with(a, external_tensor("b", {2}, "w.bin")); };
    check_load_error(dir, with(external_tensor("a", {2}, "w.bin", 0, 12)), ErrorCode::ParseError, "length 12");
    check_load_error(dir, with(external_tensor("a", {2}, "w.bin", 8)), ErrorCode::Io, "the file has 12 bytes");
    check_load_error(dir, with(external_tensor("a", {4}, "w.bin")), ErrorCode::Io, "fewer than");
    check_load_error(dir, with(external_tensor("a", {1 << 20, 1 << 20}, "w.bin")), ErrorCode::Io, "fewer than");
    onnx::TensorProto bad_offset = external_tensor("a", {2}, "w.bin");
    auto* kv = bad_offset.add_external_data();
    kv->set_key("offset");
    kv->set_value("-4");
    check_load_error(dir, with(bad_offset), ErrorCode::ParseError, "offset '-4'");
    onnx::TensorProto no_location = external_tensor("a", {2}, "w.bin");
    no_location.mutable_external_data(0)->set_key("path");
    check_load_error(dir, with(no_location), ErrorCode::ParseError, "without a location");
  }
}
