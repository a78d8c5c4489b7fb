// What the recurrent operators' schema (ir/ops/recurrent.cpp) and their static kernel
// (codegen/static/recurrent.cpp) share: the gates and activations of LSTM, GRU and RNN.
// Layer: ir.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace fusor {

/// ONNX's activation functions of the recurrent operators.
enum class RecurrentActivation { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

/// The activation named `name` (case-insensitive, as ONNX Runtime reads them).
bool parse_recurrent_activation(std::string_view name, RecurrentActivation* out);
inline bool recurrent_activation_known(std::string_view name) {
  RecurrentActivation a;
  return parse_recurrent_activation(name, &a);
}
/// The activations of n, recurrent_activations() per direction: its `activations`
/// attribute's, else the operator's defaults (LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid, Tanh;
/// RNN Tanh) for every direction.
std::vector<std::string> recurrent_activation_names(const Node& n);
/// Gates per direction: LSTM 4 (i, o, f, c), GRU 3 (z, r, h), RNN 1.
int recurrent_gates(OpKind op);
/// Activation functions per direction: LSTM 3 (f, g, h), GRU 2 (f, g), RNN 1 (f).
int recurrent_activations(OpKind op);
/// Outputs: LSTM 3 (Y, Y_h, Y_c), GRU and RNN 2 (Y, Y_h).
int recurrent_outputs(OpKind op);

}  // namespace fusor
