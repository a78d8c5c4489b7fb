// Tests of the cache keys (cache/plan_key.h, cache/kernel_key.h): every field changes the
// key's hash, its equality and (for kernel keys) its serialized bytes; names do not.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cache/kernel_key.h"
#include "cache/plan_key.h"
#include "cache/version.h"

using namespace fusor;

namespace {

PlanKey base_plan_key() {
  PlanKey k;
  k.graph_fingerprint = 0x1234;
  k.inputs = {TensorType{DType::F32, Shape{2, 128, 768}}, TensorType{DType::I64, Shape{2, 128}}};
  k.device = Device::Host;
  k.options_hash = 77;
  return k;
}

// A small pointwise kernel: out = relu(a + b) over [4, 8].
KernelKey base_kernel_key() {
  KernelKey k;
  KernelSpec& s = k.spec;
  s.kind = KernelKind::Pointwise;
  s.name = "add_relu";
  s.tasks = 4;
  s.buffers = {{"a", DType::F32, 32, false, false},
               {"b", DType::F32, 8, false, true},
               {"out", DType::F32, 32, true, false}};
  s.pointwise.shape = {4, 8};
  ExprGraph& g = s.pointwise.body;
  g.accesses = {{0, DType::F32, {8, 1}, 0}, {1, DType::F32, {0, 1}, 0}, {2, DType::F32, {8, 1}, 0}};
  g.nodes.resize(4);
  g.nodes[0].op = ScalarOp::Load;
  g.nodes[0].load = 0;
  g.nodes[1].op = ScalarOp::Load;
  g.nodes[1].load = 1;
  g.nodes[2].op = ScalarOp::Add;
  g.nodes[2].args[0] = 0;
  g.nodes[2].args[1] = 1;
  g.nodes[3].op = ScalarOp::Relu;
  g.nodes[3].args[0] = 2;
  g.stores = {{3, 2}};
  k.backend = "llvm";
  k.target = "x86-64 +avx2,+fma";
  k.compiler = "LLVM 16.0.6";
  return k;
}

template <class Key>
using Mutations = std::vector<std::pair<const char*, std::function<void(Key&)>>>;

void check_plan_mutations(const Mutations<PlanKey>& mutations) {
  const PlanKey base = base_plan_key();
  CHECK(base == base_plan_key());
  CHECK(base.hash() == base_plan_key().hash());
  for (const auto& row : mutations) {
    const auto& field = std::get<0>(row);
    const auto& mutate = std::get<1>(row);
    PlanKey k = base_plan_key();
    mutate(k);
    INFO("field: ", field);
    CHECK(k != base);
    CHECK(k.hash() != base.hash());
    CHECK(PlanKeyHash()(k) != PlanKeyHash()(base));
  }
}

void check_kernel_mutations(const Mutations<KernelKey>& mutations) {
  const KernelKey base = base_kernel_key();
  CHECK(base == base_kernel_key());
  CHECK(base.hash() == base_kernel_key().hash());
  CHECK(base.serialize() == base_kernel_key().serialize());
  for (const auto& row : mutations) {
    const auto& field = std::get<0>(row);
    const auto& mutate = std::get<1>(row);
    KernelKey k = base_kernel_key();
    mutate(k);
    INFO("field: ", field);
    CHECK(!(k == base));
    CHECK(k.hash() != base.hash());
    CHECK(KernelKeyHash()(k) != KernelKeyHash()(base));
    CHECK(k.serialize() != base.serialize());
  }
}

}  // namespace

TEST_SUITE("cache/keys") {
  TEST_CASE("every field of a plan key changes the key") {
    check_plan_mutations({
        {"graph_fingerprint", [](PlanKey& k) { k.graph_fingerprint ^= 1; }},
        {"input dtype", [](PlanKey& k) { k.inputs[1].dtype = DType::I32; }},
        {"input shape", [](PlanKey& k) { k.inputs[0].shape = Shape{2, 129, 768}; }},
        {"input rank", [](PlanKey& k) { k.inputs[0].shape = Shape{2, 128, 768, 1}; }},
        {"input count", [](PlanKey& k) { k.inputs.pop_back(); }},
        {"input order", [](PlanKey& k) { std::swap(k.inputs[0], k.inputs[1]); }},
        {"device", [](PlanKey& k) { k.device = Device::Cuda; }},
        {"options_hash", [](PlanKey& k) { k.options_hash = 78; }},
    });
  }

  TEST_CASE("every field of a kernel key changes the key") {
    check_kernel_mutations({
        {"backend", [](KernelKey& k) { k.backend = "asmjit"; }},
        {"target", [](KernelKey& k) { k.target = "x86-64 +avx512f"; }},
        {"compiler", [](KernelKey& k) { k.compiler = "LLVM 17.0.1"; }},
        {"engine_version", [](KernelKey& k) { k.engine_version = "0.0.0+codegen.0"; }},
        {"spec.kind", [](KernelKey& k) { k.spec.kind = KernelKind::RowReduction; }},
        {"spec.tasks", [](KernelKey& k) { k.spec.tasks = 8; }},
        {"buffer dtype", [](KernelKey& k) { k.spec.buffers[0].dtype = DType::F16; }},
        {"buffer elements", [](KernelKey& k) { k.spec.buffers[0].elements = 33; }},
        {"buffer output", [](KernelKey& k) { k.spec.buffers[1].output = true; }},
        {"buffer constant", [](KernelKey& k) { k.spec.buffers[1].constant = false; }},
        {"buffer count", [](KernelKey& k) { k.spec.buffers.pop_back(); }},
        {"pointwise shape", [](KernelKey& k) { k.spec.pointwise.shape = {8, 4}; }},
        {"node op", [](KernelKey& k) { k.spec.pointwise.body.nodes[2].op = ScalarOp::Mul; }},
        {"node dtype", [](KernelKey& k) { k.spec.pointwise.body.nodes[3].dtype = DType::F16; }},
        {"node args", [](KernelKey& k) { k.spec.pointwise.body.nodes[2].args[1] = 0; }},
        {"node load", [](KernelKey& k) { k.spec.pointwise.body.nodes[1].load = 0; }},
        {"node value", [](KernelKey& k) { k.spec.pointwise.body.nodes[3].value = 1.5; }},
        {"access strides", [](KernelKey& k) { k.spec.pointwise.body.accesses[1].strides = {1, 0}; }},
        {"access offset", [](KernelKey& k) { k.spec.pointwise.body.accesses[0].offset = 4; }},
        {"access buffer", [](KernelKey& k) { k.spec.pointwise.body.accesses[1].buffer = 0; }},
        {"access dtype", [](KernelKey& k) { k.spec.pointwise.body.accesses[0].dtype = DType::BF16; }},
        {"store", [](KernelKey& k) { k.spec.pointwise.body.stores[0].node = 2; }},
    });
  }

  TEST_CASE("each kernel kind's own fields change the kernel key") {
    auto with_kind = [](KernelKind kind) {
      return [kind](KernelKey& k) { k.spec.kind = kind; };
    };
    for (KernelKind kind : {KernelKind::RowReduction, KernelKind::Contraction, KernelKind::Attention}) {
      KernelKey base = base_kernel_key();
      with_kind(kind)(base);
      Mutations<KernelKey> m;
      if (kind == KernelKind::RowReduction) {
        m = {{"reduction.kind", [](KernelKey& k) { k.spec.reduction.kind = RowReductionSpec::Kind::LayerNorm; }},
             {"reduction.epsilon", [](KernelKey& k) { k.spec.reduction.epsilon = 1e-5; }},
             {"reduction.shape", [](KernelKey& k) { k.spec.reduction.shape = {4, 8}; }},
             {"reduction.epilogue", [](KernelKey& k) { k.spec.reduction.epilogue.nodes.resize(1); }}};
      } else if (kind == KernelKind::Contraction) {
        m = {{"contraction.m", [](KernelKey& k) { k.spec.contraction.m = 16; }},
             {"contraction.kind", [](KernelKey& k) { k.spec.contraction.kind = ContractionSpec::Kind::Conv2d; }},
             {"contraction.batch", [](KernelKey& k) { k.spec.contraction.batch = {2}; }},
             {"contraction.b", [](KernelKey& k) { k.spec.contraction.b.strides = {1, 64}; }},
             {"contraction.conv", [](KernelKey& k) { k.spec.contraction.conv.pad_r = 1; }}};
      } else {
        m = {{"attention.tq", [](KernelKey& k) { k.spec.attention.tq = 128; }},
             {"attention.dv", [](KernelKey& k) { k.spec.attention.dv = 64; }},
             {"attention.k", [](KernelKey& k) { k.spec.attention.k.offset = 3; }},
             {"attention.score", [](KernelKey& k) { k.spec.attention.score.nodes.resize(2); }}};
      }
      for (const auto& row : m) {
        const auto& field = std::get<0>(row);
        const auto& mutate = std::get<1>(row);
        KernelKey k = base;
        mutate(k);
        INFO("field: ", field);
        CHECK(!(k == base));
        CHECK(k.hash() != base.hash());
        CHECK(k.serialize() != base.serialize());
      }
    }
  }

  TEST_CASE("names do not change a kernel key") {
    KernelKey a = base_kernel_key(), b = base_kernel_key();
    b.spec.name = std::string("another_group");
    b.spec.buffers[0].name = std::string("x");
    CHECK(a == b);
    CHECK(a.hash() == b.hash());
    CHECK(a.serialize() == b.serialize());
  }

  TEST_CASE("a kernel key carries the engine version by default") {
    KernelKey k;
    CHECK(k.engine_version == kFusorVersion);
    CHECK(!kFusorVersion.empty());
  }

  TEST_CASE("serialized kernel keys do not run fields together") {
    KernelKey a = base_kernel_key(), b = base_kernel_key();
    a.backend = std::string("llvm");  // std::string(): GCC 12 warns falsely on assign(const char*)
    a.target = std::string("x");
    b.backend = std::string("llvmx");
    b.target = std::string();
    CHECK(a.serialize() != b.serialize());
    CHECK(a.hash() != b.hash());
  }
}
