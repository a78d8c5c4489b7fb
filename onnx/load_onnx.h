// The ONNX front end: an ONNX model file (a serialized ModelProto, as the PyTorch exporters
// write it) becomes a fusor Graph. Layer: onnx (ir/ and, in its .cpp files only, protobuf
// and Debian's libonnx protobuf types).
//
//   std::vector<std::string> notes;
//   fusor::Graph g = fusor::load_onnx("bert.onnx", {.warn = [&](const std::string& m) { notes.push_back(m); }});
//   fusor::Engine engine;
//   auto out = engine.run(g, {{"input_ids", ids}, {"attention_mask", mask}});
//
// What the loader does (Note [ONNX import] in onnx/build_graph.cpp has the details):
// - default-domain opsets 13 to 18 (both PyTorch exporters: TorchScript at 17, torch.export
//   at 18); older opsets for the operators whose semantics did not change since
//   (onnx_operators() lists the first opset of each);
// - initializers and Constant nodes become constants; Identity and inference Dropout are
//   removed; the input-or-attribute forms of the opsets (Squeeze/Unsqueeze/Reduce* axes,
//   Split's split, Clip's min/max, Pad's pads, ...) become what fusor's operator takes;
// - a graph input's dim_param becomes a named dim (bound with --dim NAME=SIZE); a dynamic
//   dim without a name is named "<input>_d<axis>" and reported through `warn`;
// - external data (location, offset, length) is read from the model's folder only: no
//   absolute paths, no "..", no symbolic links, regular files only, sizes checked.
// Every failure is a fusor::Error whose message starts with the model's name and names the
// node and the tensor: ParseError (not a model, truncated, bad field values), Io (files),
// Unsupported (operators, dtypes, opsets fusor lacks: all the operators at once),
// InvalidGraph (cycles, duplicate or dangling names), DTypeMismatch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace fusor {

/// How to load an ONNX model.
struct OnnxOptions {
  /// The folder external data locations are relative to. load_onnx: empty means the model
  /// file's folder. load_onnx_bytes: empty refuses external data.
  std::string base_dir;
  /// The model's name in messages. Empty: the path (load_onnx) or "<onnx bytes>".
  std::string source;
  /// Receives each warning: generated names of unnamed dynamic dims, graph inputs and
  /// outputs renamed to fit fusor's names. Unset: standard error.
  std::function<void(const std::string&)> warn;
  /// Graph inputs to make constants with these values, by ONNX name: an input whose value
  /// is fixed, such as a shape or axes fusor needs as a constant (Reshape's shape, Slice's
  /// starts). Each must be a graph input of that dtype and rank, its fixed dims equal;
  /// InvalidArgument / DTypeMismatch / ShapeMismatch otherwise.
  std::map<std::string, Tensor, std::less<>> constant_inputs;
};

/// Loads the ONNX model at `path` and returns its graph, verified. The file is opened
/// without blocking (a FIFO or a device is refused) and must be a regular file under 2 GiB
/// (larger models keep their weights in external data).
Graph load_onnx(const std::string& path, const OnnxOptions& options = {});

/// Loads an ONNX model from the bytes of a serialized ModelProto.
Graph load_onnx_bytes(std::string_view bytes, const OnnxOptions& options = {});

/// Reads a serialized ONNX TensorProto (the input_0.pb / output_0.pb files of the ONNX
/// test data) into a tensor. `name`, when given, receives the tensor's name field. External
/// data is refused.
Tensor read_onnx_tensor(const std::string& path, std::string* name = nullptr);

/// True when `path` names an ONNX model: it ends in ".onnx", or it starts as a ModelProto
/// does (field 1, ir_version) where a text graph cannot. Does not validate the file.
bool is_onnx_file(const std::string& path);

/// Loads the graph at `path`: an ONNX model when is_onnx_file says so (load_onnx, with
/// `options`), else a graph in fusor's text format (load_graph). What the command-line
/// tool and the Python package take wherever they take a model.
Graph load_model(const std::string& path, const OnnxOptions& options = {});

/// One operator a model uses: its domain ("" for the default domain), op_type and how many
/// nodes use it.
struct OnnxOperatorUse {
  std::string domain;
  std::string op_type;
  int64_t nodes = 0;
};

/// The operators of the model at `path`, in order of first use, without converting it (no
/// weights are read). Throws what load_onnx throws for a file that is not a model.
std::vector<OnnxOperatorUse> onnx_operators_used(const std::string& path);

/// One operator the loader takes: its ONNX op_type and the lowest default-domain opset at
/// which fusor implements its semantics (the model's opset may be anything from there to
/// 18). `note`: what the loader makes of an operator it resolves itself ("removed"), or
/// what sets the operator apart; empty for most.
struct OnnxOperator {
  std::string op_type;
  int64_t since_opset = 13;
  std::string note;
};

/// Every operator the loader takes, sorted by op_type: those of ir/ops.def (the one list of
/// fusor's operators), those the loader writes as fusor's (onnx/compositions.h: LogSoftmax,
/// Elu, PRelu, ...; and 1-D Conv and pooling, noted on those rows) and those it resolves
/// itself (Constant, Identity, Dropout).
std::vector<OnnxOperator> onnx_operators();

/// The default-domain opsets load_onnx accepts for a model: [kOnnxMinOpset, kOnnxMaxOpset]
/// (below, per operator: onnx_operators()). Above 18, every operator fusor loads changed only
/// by new element types (float8, int4, float4, int2, ...: refused as dtypes) and by
/// attributes the loader reads or drops (AveragePool's dilations at 19; Cast's saturate and
/// round_mode, Range's stash_type: op_forms.cpp): checked against ONNX 1.23's schemas of each
/// version (Note [ONNX opsets] in op_forms.cpp). PyTorch's dynamo exporter writes 20.
inline constexpr int64_t kOnnxMinOpset = 13;
inline constexpr int64_t kOnnxMaxOpset = 28;

}  // namespace fusor
