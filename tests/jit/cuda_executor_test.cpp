// The CUDA engine's plans (jit/cuda_executor.h, Note [CUDA plans]), checked without a
// device: the BERT layer and the ResNet bottleneck plan every group as a CUDA launch whose
// spec NVRTC compiles for sm_90 (skips with a reason without NVRTC); a plan's places are
// consistent (read after written, aligned, no two live buffers overlapping); and a plan
// executed on the host (each launch by the spec interpreter, in one host arena laid out as
// the device's) computes what the static engine does, views, aliases and copies included.
// Groups without a CUDA kernel are Error(Unsupported) naming the node.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "ir/text_format.h"
#include "jit/cuda_executor.h"
#include "jit/engine.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

std::string example_text(const std::string& name) {
  std::ifstream in(test::source_path("examples/graphs/" + name));
  REQUIRE_MESSAGE(in.good(), "no example graph ", name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using Kind = CudaPlace::Kind;

// The place whose bytes p uses (an alias's root).
int base_of(const CudaPlan& plan, int p) {
  const CudaPlace& pl = plan.places[size_t(p)];
  return pl.kind == Kind::Alias ? pl.root : p;
}

// Every structural promise of a plan: buffers read were written before, every place and
// alias offset aligned, no two buffers live at the same launch overlap in the arena, and
// outputs are buffers of their own.
void check_plan(const CudaPlan& plan) {
  const size_t np = plan.places.size(), nl = plan.launches.size();
  std::vector<int> first(np, -1), last(np, -1);
  for (size_t i = 0; i < nl; ++i) {
    const CudaLaunch& l = plan.launches[i];
    INFO("launch " << i << ": " << l.label);
    REQUIRE(l.places.size() == l.spec.buffers.size());
    for (size_t j = 0; j < l.places.size(); ++j) {
      const int p = l.places[size_t(j)];
      REQUIRE(p >= 0);
      REQUIRE(size_t(p) < np);
      const CudaPlace& pl = plan.places[size_t(p)];
      const int b = base_of(plan, p);
      CHECK(pl.kind != Kind::Unused);
      CHECK(plan.places[size_t(b)].kind != Kind::Alias);
      if (l.spec.buffers[j].output) {
        CHECK(pl.kind == Kind::Arena);
        CHECK(first[size_t(p)] == -1);  // written once
        first[size_t(p)] = int(i);
      } else if (plan.places[size_t(b)].kind == Kind::Arena) {
        CHECK_MESSAGE(first[size_t(b)] >= 0, "place ", b, " read before any launch writes it");
      }
      // The buffer holds at least what the kernel addresses.
      CHECK(pl.bytes >= l.spec.buffers[j].elements * int64_t(dtype_size(l.spec.buffers[j].dtype)));
      last[size_t(b)] = std::max(last[size_t(b)], int(i));
    }
  }
  std::vector<char> is_output(np, 0);
  for (int p : plan.output_places) {
    CHECK(plan.places[size_t(p)].kind == Kind::Arena);
    CHECK(first[size_t(p)] >= 0);
    CHECK_FALSE(is_output[size_t(p)]);
    is_output[size_t(p)] = 1;
  }
  struct Live {
    int64_t begin, end;
    int first, last;
    size_t place;
  };
  std::vector<Live> live;
  for (size_t p = 0; p < np; ++p) {
    const CudaPlace& pl = plan.places[p];
    if (pl.kind == Kind::Alias) CHECK(pl.offset % kCudaBufferAlignment == 0);
    const bool staged = pl.kind == Kind::Input && pl.offset >= 0;
    if (pl.kind != Kind::Arena && !staged) continue;
    CHECK(pl.offset % kCudaBufferAlignment == 0);
    CHECK(pl.offset + pl.bytes <= plan.arena_bytes);
    const int f = staged ? 0 : first[p];
    const int l = is_output[p] ? int(nl) : std::max(first[p], last[p]);
    live.push_back({pl.offset, pl.offset + pl.bytes, f, l, p});
  }
  for (size_t a = 0; a < live.size(); ++a)
    for (size_t b = a + 1; b < live.size(); ++b) {
      const Live &x = live[a], &y = live[b];
      const bool same_time = x.first <= y.last && y.first <= x.last;
      const bool same_bytes = x.begin < y.end && y.begin < x.end;
      CHECK_MESSAGE(!(same_time && same_bytes), "places ", x.place, " and ", y.place, " overlap while both live");
    }
}

// Runs `plan` on the host: one host arena laid out as the device's, every launch by the
// spec interpreter. Arena bytes start as 0xff (NaN), so a read of something never written
// shows. Returns the graph outputs in order.
std::vector<Tensor> run_on_host(const CudaPlan& plan, const std::map<std::string, Tensor>& inputs) {
  const Graph& g = plan.fused.graph;
  std::vector<double> storage(size_t(plan.arena_bytes) / sizeof(double) + 1);
  char* arena = reinterpret_cast<char*>(storage.data());
  std::memset(arena, 0xff, size_t(plan.arena_bytes));
  std::vector<char*> base(plan.places.size(), nullptr);
  for (size_t p = 0; p < plan.places.size(); ++p) {
    const CudaPlace& pl = plan.places[p];
    if (pl.kind == Kind::Input && pl.offset >= 0) {
      const Tensor& t = inputs.at(g.value(g.inputs()[size_t(pl.input)]).name);
      base[p] = arena + pl.offset;
      std::memcpy(base[p], t.raw(), t.nbytes());
    } else if (pl.kind == Kind::Constant) {
      base[p] = static_cast<char*>(const_cast<void*>(g.constant_data(pl.value)->raw()));
    } else if (pl.kind == Kind::Arena) {
      base[p] = arena + pl.offset;
    }
  }
  for (size_t p = 0; p < plan.places.size(); ++p)
    if (plan.places[p].kind == Kind::Alias) base[p] = base[size_t(plan.places[p].root)] + plan.places[p].offset;
  for (const CudaLaunch& l : plan.launches) {
    std::vector<Tensor> bufs;
    for (size_t j = 0; j < l.places.size(); ++j)
      bufs.push_back(Tensor::borrow(base[size_t(l.places[j])], l.spec.buffers[j].dtype, Shape{l.spec.buffers[j].elements}));
    test::interpret(l.spec, bufs);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const TensorType& t = plan.fused.types[size_t(g.outputs()[i])];
    out.push_back(Tensor::borrow(base[size_t(plan.output_places[i])], t.dtype, t.shape).clone());
  }
  return out;
}

// The static engine's outputs (unfused), in graph output order.
std::vector<Tensor> run_static(const std::string& text, const std::map<std::string, Tensor>& inputs) {
  Graph g = parse_graph(text);
  Engine e(EngineOptions{.backend = BackendKind::Static, .num_threads = 1, .fuse = false, .disk_cache = false});
  TensorMap in(inputs.begin(), inputs.end());
  TensorMap out = e.run(g, in);
  std::vector<Tensor> r;
  for (ValueId o : g.outputs()) r.push_back(out.at(g.value(o).name));
  return r;
}

void check_on_host(const std::string& text, const DimBindings& dims, const std::map<std::string, Tensor>& inputs,
                   double rtol, double atol) {
  CudaPlan plan = plan_cuda(test::fuse_text(text, dims));
  check_plan(plan);
  std::vector<Tensor> got = run_on_host(plan, inputs);
  std::vector<Tensor> want = run_static(text, inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) FUSOR_CHECK_CLOSE(got[i], want[i], rtol, atol);
}

// The launches of `plan` that are not view copies.
size_t group_launches(const CudaPlan& plan) {
  size_t n = 0;
  for (const CudaLaunch& l : plan.launches) n += l.label.rfind("copy ", 0) != 0;
  return n;
}

// Compiles every launch's spec for sm_90 with NVRTC; no warnings.
void compile_all(CudaCompiler& nvrtc, const CudaPlan& plan) {
  int64_t us = 0;
  for (const CudaLaunch& l : plan.launches) {
    INFO(l.label);
    CudaBinary b = nvrtc.compile(l.spec, "sm_90");
    CHECK(b.cubin.compare(0, 4, "\x7f" "ELF") == 0);
    CHECK_MESSAGE(b.log.empty(), "NVRTC warned:\n", b.log);
    us += b.compile_us;
  }
  MESSAGE(plan.launches.size() << " launches compiled for sm_90 in " << us / 1000 << " ms");
}

}  // namespace

TEST_SUITE("cuda/plan") {
  TEST_CASE("the BERT layer plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    const std::string text = example_text("bert_layer");
    for (auto [b, t] : {std::pair<int64_t, int64_t>{8, 37}, {8, 128}}) {
      INFO("B " << b << " T " << t);
      FusedGraph fused = test::fuse_text(text, {{"B", b}, {"T", t}});
      const int kernels = fused.kernels_after();
      CudaPlan plan = plan_cuda(std::move(fused));
      check_plan(plan);
      // One launch per kernel group; the head merge (a transpose strides cannot reshape)
      // is materialized by one copy.
      CHECK(group_launches(plan) == size_t(kernels));
      CHECK(plan.launches.size() - group_launches(plan) <= 1);
      bool attention = false;
      for (const CudaLaunch& l : plan.launches) attention |= l.spec.kind == KernelKind::Attention;
      CHECK(attention);
      if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
    }
  }

  TEST_CASE("the BERT layer in f16 and bf16 plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    for (const char* dt : {"f16", "bf16"}) {
      INFO(std::string(dt));
      const std::string text = test::with(example_text("bert_layer"), {{": f32[", std::string(": ") + dt + "["}});
      FusedGraph fused = test::fuse_text(text, {{"B", 8}, {"T", 128}});
      const int kernels = fused.kernels_after();
      CudaPlan plan = plan_cuda(std::move(fused));
      check_plan(plan);
      CHECK(group_launches(plan) == size_t(kernels));
      for (const CudaLaunch& l : plan.launches)
        for (const BufferSpec& b : l.spec.buffers) CHECK(b.dtype != DType::F32);
      if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
    }
  }

  TEST_CASE("the ResNet bottleneck plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    FusedGraph fused = test::fuse_text(example_text("resnet_bottleneck"), {{"N", 32}, {"H", 56}, {"W", 56}});
    const int kernels = fused.kernels_after();
    CudaPlan plan = plan_cuda(std::move(fused));
    check_plan(plan);
    CHECK(plan.launches.size() == size_t(kernels));
    CHECK(kernels == 3);  // three convolutions, BN, ReLU and the residual in their epilogues
    if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
  }

  TEST_CASE("the BERT layer plan run on the host by the interpreter matches the static engine") {
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 7, 768}, 1)},
                                           {"mask", Tensor::zeros(DType::F32, Shape{2, 1, 1, 7})}};
    check_on_host(example_text("bert_layer"), {{"B", 2}, {"T", 7}}, in, 1e-4, 1e-4);
  }

  TEST_CASE("the bottleneck plan run on the host by the interpreter matches the static engine") {
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{1, 256, 5, 6}, 2)}};
    check_on_host(example_text("resnet_bottleneck"), {{"N", 1}, {"H", 5}, {"W", 6}}, in, 1e-4, 1e-4);
  }

  TEST_CASE("views a kernel reads as buffers are aliases or copies and outputs never alias") {
    // y: a transpose then a reshape strides cannot express (a copy, then an alias); r: a
    // reshape of an input returned as an output (a copy of its own); x itself is an output
    // too (a copy, not the caller's input), and so is the constant c.
    const std::string text =
        "graph g\ninput x: f32[2, 3, 4]\nconst shape: i64[2] = [3, 8]\nconst flat: i64[1] = [24]\n"
        "t = Transpose(x) {perm=[1, 2, 0]}\ny = Reshape(t, shape)\nz = Relu(y)\nr = Reshape(x, flat)\n"
        "e = Exp(z)\nconst c: f32[3] = [1.0, 2.0, 3.0]\noutput e\noutput r\noutput x\noutput z\noutput c\n";
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 3, 4}, 3)}};
    CudaPlan plan = plan_cuda(test::fuse_text(text, {}));
    INFO(test::group_summary(plan.fused));
    check_plan(plan);
    int copies = 0;
    for (const CudaLaunch& l : plan.launches) copies += l.label.rfind("copy ", 0) == 0;
    CHECK(copies == 4);  // t (then y is an alias of it), r, x and c
    check_on_host(text, {}, in, 1e-6, 1e-7);  // copies are exact; Exp is computed in double by the interpreter
  }

  TEST_CASE("an op without a CUDA kernel is Unsupported naming the node") {
    const std::string text = "graph g\ninput a: f32[2, 3]\nb = Relu(a)\ncat = Concat(b, a) {axis=0}\noutput cat\n";
    std::string msg;
    CHECK(test::error_of([&] { plan_cuda(test::fuse_text(text, {})); }, &msg) == ErrorCode::Unsupported);
    CHECK(msg.find("Concat") != std::string::npos);
    CHECK(msg.find("'cat'") != std::string::npos);
  }
}
