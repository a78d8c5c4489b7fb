#include "engine.h"

#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "arrays.h"
#include "graph.h"
#include "jit/engine.h"
#include "options.h"

namespace fusor::python {

namespace py = pybind11;

namespace {

/// Destroys an Engine without the GIL: its background compiles may be waiting for the GIL
/// to call a Python warn callback, and the destructor joins them.
struct ReleaseGilDelete {
  void operator()(Engine* e) const {
    py::gil_scoped_release release;
    delete e;
  }
};
using EngineHolder = std::unique_ptr<Engine, ReleaseGilDelete>;

/// The mapping `feeds` (name -> array-like) as engine inputs; `keep` holds the arrays read.
TensorMap inputs_of(py::handle feeds, std::vector<Feed>& keep) {
  if (!py::isinstance<py::dict>(feeds) && !py::hasattr(feeds, "items")) {
    throw py::type_error("fusor: feeds must be a mapping of input names to arrays, not " +
                         py::str(py::type::handle_of(feeds).attr("__name__")).cast<std::string>());
  }
  TensorMap inputs;
  py::object items = feeds.attr("items")();
  for (py::handle item : items) {
    auto pair = item.cast<py::tuple>();
    if (!py::isinstance<py::str>(pair[0])) throw py::type_error("fusor: feed names must be str");
    const std::string name = pair[0].cast<std::string>();
    keep.push_back(to_feed(pair[1], name));
    inputs.emplace(name, keep.back().tensor);
  }
  return inputs;
}

py::dict outputs_of(Engine& engine, const TensorMap& outputs) {
  py::dict out;
  for (const auto& [name, t] : outputs) {
    out[py::str(name)] = to_numpy(t.device() == Device::Host ? t : engine.to_host(t));
  }
  return out;
}

py::object json_loads(const std::string& text) { return py::module_::import("json").attr("loads")(text); }

py::dict stats_dict(const EngineStats& s) {
  py::dict d;
  d["plan_hits"] = s.plan_hits;
  d["plan_misses"] = s.plan_misses;
  d["plans"] = s.plans;
  d["plan_evictions"] = s.plan_evictions;
  d["plan_bytes"] = s.plan_bytes;
  d["kernel_hits"] = s.kernel_hits;
  d["kernels_compiled"] = s.kernels_compiled;
  d["kernels_compiled_background"] = s.kernels_compiled_background;
  d["disk_hits"] = s.disk_hits;
  d["disk_writes"] = s.disk_writes;
  d["kernel_evictions"] = s.kernel_evictions;
  d["kernel_bytes"] = s.kernel_bytes;
  d["packed_bytes"] = s.packed_bytes;
  d["compile_ms"] = s.compile_ms;
  py::dict by_backend;
  for (const auto& [backend, ms] : s.compile_ms_by_backend) by_backend[py::str(backend)] = ms;
  d["compile_ms_by_backend"] = by_backend;
  d["load_ms"] = s.load_ms;
  d["background_swaps"] = s.background_swaps;
  d["first_tier_kept"] = s.first_tier_kept;
  d["symbolic_steps"] = s.symbolic_steps;
  d["device_launches"] = s.device_launches;
  d["groups_verified"] = s.groups_verified;
  d["groups_failed"] = s.groups_failed;
  d["groups_unfused"] = s.groups_unfused;
  d["verify_remembered"] = s.verify_remembered;
  d["verify_worst_error"] = s.verify_worst_error;
  d["verify_worst_ratio"] = s.verify_worst_ratio;
  d["disk_dir"] = s.disk_dir;
  d["disk_entries"] = s.disk_entries;
  d["disk_bytes"] = s.disk_bytes;
  d["disk_enabled"] = s.disk_enabled;
  d["remote_url"] = s.remote_url;
  d["remote_enabled"] = s.remote_enabled;
  d["remote_state"] = s.remote_state;
  d["remote_hits"] = s.remote_hits;
  d["remote_misses"] = s.remote_misses;
  d["remote_writes"] = s.remote_writes;
  d["remote_rejected"] = s.remote_rejected;
  d["remote_corrupt"] = s.remote_corrupt;
  d["remote_unavailable"] = s.remote_unavailable;
  d["evictions"] = s.evictions();
  d["bytes"] = s.bytes();
  return d;
}

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<Engine, EngineHolder>(m, "Engine",
                                   "Runs graphs: each new set of input shapes is traced, fused and compiled once, "
                                   "then served from the plan cache. Thread-safe; runs release the GIL.")
      .def(py::init([](const py::kwargs& kwargs) {
             EngineOptions options = engine_options(kwargs);
             py::gil_scoped_release release;
             return EngineHolder(new Engine(std::move(options)));
           }),
           "Engine(**options): one keyword per EngineOptions field (backend='llvm', threads=2, tiering=True, "
           "symbolic_dim='seq', cache_dir=..., verify='warn', precision='auto', fusion={...}, warn=callable, ...)")
      .def(
          "run",
          [](Engine& engine, py::handle graph, py::handle feeds) {
            std::shared_ptr<const Graph> g = graph_of(graph);
            std::vector<Feed> keep;
            keep.reserve(8);
            TensorMap inputs = inputs_of(feeds, keep);
            TensorMap outputs;
            {
              py::gil_scoped_release release;
              engine.run(*g, inputs, outputs);
            }
            return outputs_of(engine, outputs);
          },
          py::arg("graph"), py::arg("feeds"),
          "Runs `graph` (a Graph or a model path) on `feeds` ({input name: array}); returns {output name: ndarray}")
      .def(
          "prepare",
          [](Engine& engine, py::handle graph, const DimBindings& dims) {
            std::shared_ptr<const Graph> g = graph_of(graph);
            py::gil_scoped_release release;
            engine.prepare(*g, dims);
          },
          py::arg("graph"), py::arg("dims") = DimBindings{},
          "Builds and compiles the plan of `graph` with its named input dims bound to `dims`, without running it")
      .def(
          "explain",
          [](Engine& engine, py::handle graph, const DimBindings& dims, bool json) -> py::object {
            std::shared_ptr<const Graph> g = graph_of(graph);
            std::string report;
            {
              py::gil_scoped_release release;
              report = engine.explain(*g, dims, json);
            }
            return json ? json_loads(report) : py::str(report);
          },
          py::arg("graph"), py::arg("dims") = DimBindings{}, py::arg("json") = false,
          "The explain report at `dims`: groups, patterns, declined fusions; text, or a dict with json=True")
      .def("stats", [](const Engine& engine) { return stats_dict(engine.stats()); }, "The engine's cache counters")
      .def(
          "profile",
          [](const Engine& engine) {
            py::list out;
            for (const StepProfile& p : engine.profile()) {
              py::dict d;
              d["step"] = p.step;
              d["calls"] = p.calls;
              d["total_ms"] = p.total_ms;
              out.append(d);
            }
            return out;
          },
          "The steps' times, longest first ([] unless profile=True)")
      .def(
          "verdicts", [](const Engine& engine) { return json_loads(verdicts_json(engine.verdicts())); },
          "The checks of verify mode, oldest first, as dicts")
      .def(
          "drain",
          [](Engine& engine) {
            py::gil_scoped_release release;
            engine.drain();
          },
          "Waits for the background compiles queued so far")
      .def(
          "synchronize",
          [](Engine& engine) {
            py::gil_scoped_release release;
            engine.synchronize();
          },
          "Backend cuda: waits for the work enqueued; elsewhere nothing")
      .def_property_readonly(
          "options", [](const Engine& engine) { return options_dict(engine.options()); }, "The engine's options")
      .def("__repr__", [](const Engine& engine) {
        return "<fusor.Engine backend=" + std::string(backend_name(engine.options().backend)) + ">";
      });
}

}  // namespace fusor::python
