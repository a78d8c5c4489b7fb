#include "onnx/load_onnx.h"

#include <algorithm>
#include <cctype>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/error.h"
#include "ir/op_kind.h"
#include "ir/text_format.h"
#include "onnx/build_graph.h"
#include "onnx/compositions.h"
#include "onnx/model_files.h"
#include "onnx/op_forms.h"
#include "onnx/read_model.h"

namespace fusor {

namespace {

Graph build(const onnx_import::ModelReader& reader, const std::string& source, const OnnxOptions& o,
            const std::string& fallback_name) {
  onnx_import::BuildOptions options;
  options.source = source;
  options.fallback_name = fallback_name;
  options.warn = o.warn ? o.warn : warn_to_stderr;
  options.constant_inputs = &o.constant_inputs;
  return onnx_import::build_graph(reader.model(), reader, options);
}

}  // namespace

Graph load_onnx(const std::string& path, const OnnxOptions& options) {
  const std::string source = options.source.empty() ? path : options.source;
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  const std::string stem = std::filesystem::path(path).stem().string();
  std::string bytes = onnx_import::read_regular_file(path, onnx_import::kMaxModelBytes, "ONNX model");
  onnx_import::ExternalFiles external(
      !options.base_dir.empty() ? options.base_dir : folder.empty() ? "." : folder.string(), source);
  onnx_import::ModelReader reader(bytes, source, &external);
  std::string().swap(bytes);  // the parsed message holds what the graph needs: free the file's copy
  return build(reader, source, options, stem.empty() ? std::string("onnx") : stem);
}

Graph load_onnx_bytes(std::string_view bytes, const OnnxOptions& options) {
  const std::string source = options.source.empty() ? "<onnx bytes>" : options.source;
  onnx_import::ExternalFiles external(options.base_dir, source);
  onnx_import::ModelReader reader(bytes, source, &external);
  return build(reader, source, options, "onnx");
}

Tensor read_onnx_tensor(const std::string& path, std::string* name) {
  std::string bytes = onnx_import::read_regular_file(path, onnx_import::kMaxModelBytes, "ONNX tensor file");
  return onnx_import::parse_tensor_proto(bytes, path, name);
}

bool is_onnx_file(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".onnx") return true;
  // A ModelProto starts with field 1 (ir_version, a varint): the byte 0x08, which no text
  // graph starts with.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  unsigned char first = 0;
  bool onnx = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, &first, 1) == 1 && first == 0x08;
  ::close(fd);
  return onnx;
}

Graph load_model(const std::string& path, const OnnxOptions& options) {
  return is_onnx_file(path) ? load_onnx(path, options) : load_graph(path);
}

std::vector<OnnxOperatorUse> onnx_operators_used(const std::string& path) {
  std::string bytes = onnx_import::read_regular_file(path, onnx_import::kMaxModelBytes, "ONNX model");
  onnx_import::ModelReader reader(bytes, path, nullptr);
  std::vector<OnnxOperatorUse> used;
  for (const onnx_import::OnnxNode& n : reader.model().nodes) {
    auto it = std::find_if(used.begin(), used.end(), [&](const OnnxOperatorUse& u) {
      return u.domain == n.domain && u.op_type == n.op_type;
    });
    if (it == used.end()) used.push_back({n.domain, n.op_type, 1});
    else ++it->nodes;
  }
  return used;
}

std::vector<OnnxOperator> onnx_operators() {
  std::vector<OnnxOperator> ops;
  for (int k = 0; k < kNumOpKinds; ++k) {
    std::string name(op_name(OpKind(k)));
    ops.push_back({name, onnx_import::op_since_opset(name), onnx_import::op_note(name)});
  }
  for (const onnx_import::Composition& c : onnx_import::compositions()) {
    if (!c.applies) {
      ops.push_back({std::string(c.op_type), c.since_opset, std::string(c.note)});
      continue;
    }
    for (OnnxOperator& op : ops)  // a form of one of fusor's operators
      if (op.op_type == c.op_type) op.note += (op.note.empty() ? "" : "; ") + std::string(c.note);
  }
  ops.push_back({"Constant", onnx_import::op_since_opset("Constant"), "a constant"});
  ops.push_back({"Identity", onnx_import::op_since_opset("Identity"), "removed"});
  ops.push_back({"Dropout", onnx_import::op_since_opset("Dropout"), "removed (inference)"});
  std::sort(ops.begin(), ops.end(), [](const OnnxOperator& a, const OnnxOperator& b) { return a.op_type < b.op_type; });
  return ops;
}

}  // namespace fusor
