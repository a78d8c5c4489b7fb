// Helpers of the CUDA plan tests (jit/cuda_plan.h): the example graphs, the structural
// check of a plan, a plan executed on the host (launch by launch, in a host arena laid out as
// the device's) and the static engine's outputs to compare with.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>

#include "ir/text_format.h"
#include "jit/cuda_plan.h"
#include "jit/engine.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

namespace fusor::test {

/// The text of examples/graphs/<name>.
inline std::string example_text(const std::string& name) {
  std::ifstream in(source_path("examples/graphs/" + name));
  REQUIRE_MESSAGE(in.good(), "no example graph ", name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using PlaceKind = CudaPlace::Kind;

/// The place whose bytes p uses (an alias's root).
inline int base_of(const CudaPlan& plan, int p) {
  const CudaPlace& pl = plan.places[size_t(p)];
  return pl.kind == PlaceKind::Alias ? pl.root : p;
}

/// Every structural promise of a plan: buffers read were written before, every place and
/// alias offset aligned, no two buffers live at the same launch overlap in the arena, and
/// outputs are buffers of their own.
inline void check_plan(const CudaPlan& plan) {
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
      CHECK(pl.kind != PlaceKind::Unused);
      CHECK(plan.places[size_t(b)].kind != PlaceKind::Alias);
      if (l.spec.buffers[j].output) {
        CHECK(pl.kind == PlaceKind::Arena);
        CHECK(first[size_t(p)] == -1);  // written once
        first[size_t(p)] = int(i);
      } else if (plan.places[size_t(b)].kind == PlaceKind::Arena) {
        CHECK_MESSAGE(first[size_t(b)] >= 0, "place ", b, " read before any launch writes it");
      }
      // The buffer holds at least what the kernel addresses.
      CHECK(pl.bytes >= l.spec.buffers[j].elements * int64_t(dtype_size(l.spec.buffers[j].dtype)));
      last[size_t(b)] = std::max(last[size_t(b)], int(i));
    }
  }
  std::vector<char> is_output(np, 0);
  for (int p : plan.output_places) {
    CHECK(plan.places[size_t(p)].kind == PlaceKind::Arena);
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
    if (pl.kind == PlaceKind::Alias) CHECK(pl.offset % kCudaBufferAlignment == 0);
    const bool staged = pl.kind == PlaceKind::Input && pl.offset >= 0;
    if (pl.kind != PlaceKind::Arena && !staged) continue;
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

/// Runs launch i of a plan on its buffers (one host tensor per spec buffer).
using LaunchRunner = std::function<void(size_t i, const CudaLaunch& l, std::vector<Tensor>& buffers)>;

/// The spec interpreter as a LaunchRunner.
inline void interpret_launch(size_t, const CudaLaunch& l, std::vector<Tensor>& buffers) { interpret(l.spec, buffers); }

/// Runs `plan` on the host: one host arena laid out as the device's, every launch by `run`
/// in order. Arena bytes start as 0xff (NaN), so a read of something never written shows.
/// Returns the graph outputs in order.
inline std::vector<Tensor> run_on_host(const CudaPlan& plan, const std::map<std::string, Tensor>& inputs,
                                       const LaunchRunner& run = interpret_launch) {
  const Graph& g = plan.fused.graph;
  std::vector<double> storage(size_t(plan.arena_bytes) / sizeof(double) + 1);
  char* arena = reinterpret_cast<char*>(storage.data());
  std::memset(arena, 0xff, size_t(plan.arena_bytes));
  std::vector<char*> base(plan.places.size(), nullptr);
  for (size_t p = 0; p < plan.places.size(); ++p) {
    const CudaPlace& pl = plan.places[p];
    if (pl.kind == PlaceKind::Input && pl.offset >= 0) {
      const Tensor& t = inputs.at(g.value(g.inputs()[size_t(pl.input)]).name);
      base[p] = arena + pl.offset;
      std::memcpy(base[p], t.raw(), t.nbytes());
    } else if (pl.kind == PlaceKind::Constant) {
      base[p] = static_cast<char*>(const_cast<void*>(g.constant_data(pl.value)->raw()));
    } else if (pl.kind == PlaceKind::Arena) {
      base[p] = arena + pl.offset;
    }
  }
  for (size_t p = 0; p < plan.places.size(); ++p)
    if (plan.places[p].kind == PlaceKind::Alias) base[p] = base[size_t(plan.places[p].root)] + plan.places[p].offset;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const CudaLaunch& l = plan.launches[i];
    std::vector<Tensor> bufs;
    for (size_t j = 0; j < l.places.size(); ++j)
      bufs.push_back(Tensor::borrow(base[size_t(l.places[j])], l.spec.buffers[j].dtype, Shape{l.spec.buffers[j].elements}));
    run(i, l, bufs);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const TensorType& t = plan.fused.types[size_t(g.outputs()[i])];
    out.push_back(Tensor::borrow(base[size_t(plan.output_places[i])], t.dtype, t.shape).clone());
  }
  return out;
}

/// The static engine's outputs (unfused), in graph output order.
inline std::vector<Tensor> run_static(const std::string& text, const std::map<std::string, Tensor>& inputs) {
  Graph g = parse_graph(text);
  Engine e(EngineOptions{.backend = BackendKind::Static, .num_threads = 1, .fuse = false, .disk_cache = false});
  TensorMap in(inputs.begin(), inputs.end());
  TensorMap out = e.run(g, in);
  std::vector<Tensor> r;
  for (ValueId o : g.outputs()) r.push_back(out.at(g.value(o).name));
  return r;
}

}  // namespace fusor::test
