#include "options.h"

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "codegen/backends.h"
#include "codegen/precision.h"
#include "ir/error.h"

namespace fusor::python {

namespace py = pybind11;

namespace {

/// One keyword: how it sets its field, and how the field reads back.
struct Keyword {
  const char* name;
  std::function<void(EngineOptions&, py::handle)> set;
  std::function<py::object(const EngineOptions&)> get;
};

template <class T>
const char* python_type() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T>) return "int";
  else if constexpr (std::is_floating_point_v<T>) return "float";
  else return "str";
}

template <class T>
T as(py::handle value, const char* name) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string("fusor.Engine: ") + name + " takes " + python_type<T>() + ", not " +
                         py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>());
  }
}

/// A field of type T at `member` of EngineOptions.
template <class T, class M>
Keyword field(const char* name, M member) {
  return {name, [name, member](EngineOptions& o, py::handle v) { o.*member = as<T>(v, name); },
          [member](const EngineOptions& o) { return py::cast(o.*member); }};
}

/// A callable shared with C++ threads: called and released with the GIL held.
std::function<void(const std::string&)> python_sink(py::handle callable) {
  if (!PyCallable_Check(callable.ptr())) throw py::type_error("fusor.Engine: warn takes a callable");
  auto fn = std::shared_ptr<py::object>(new py::object(py::reinterpret_borrow<py::object>(callable)),
                                        [](py::object* p) {
                                          py::gil_scoped_acquire gil;
                                          delete p;
                                        });
  return [fn](const std::string& message) {
    py::gil_scoped_acquire gil;
    try {
      (*fn)(message);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("fusor warning callback");
    }
  };
}

/// Sets the fields `mapping` names (a dict) through `list`; TypeError naming the unknown
/// keys and the known ones, `what` saying which keywords.
void apply(const std::vector<Keyword>& list, py::handle mapping, const char* what, EngineOptions& o) {
  std::string unknown;
  for (auto [k, v] : py::reinterpret_borrow<py::dict>(mapping)) {
    const std::string key = py::str(k);
    bool found = false;
    for (const Keyword& kw : list) {
      if (key == kw.name) {
        kw.set(o, v);
        found = true;
        break;
      }
    }
    if (!found) unknown += (unknown.empty() ? "" : ", ") + key;
  }
  if (unknown.empty()) return;
  std::string known;
  for (const Keyword& kw : list) known += (known.empty() ? "" : ", ") + std::string(kw.name);
  throw py::type_error(std::string("fusor.Engine: unknown ") + what + " " + unknown + " (known: " + known + ")");
}

const std::vector<Keyword>& fusion_keywords();

FusionOptions fusion_from(py::handle value) {
  if (!py::isinstance<py::dict>(value)) throw py::type_error("fusor.Engine: fusion takes a dict of FusionOptions fields");
  EngineOptions o;
  apply(fusion_keywords(), value, "fusion option(s)", o);
  return o.fusion;
}

template <class T>
Keyword fusion_field(const char* name, T FusionOptions::*member) {
  return {name, [name, member](EngineOptions& o, py::handle v) { o.fusion.*member = as<T>(v, name); },
          [member](const EngineOptions& o) { return py::cast(o.fusion.*member); }};
}

const std::vector<Keyword>& fusion_keywords() {
  static const std::vector<Keyword> list{
      fusion_field("fold_batchnorm", &FusionOptions::fold_batchnorm),
      fusion_field("bn_variance_floor", &FusionOptions::bn_variance_floor),
      fusion_field("recognize_patterns", &FusionOptions::recognize_patterns),
      fusion_field("merge_parallel_matmuls", &FusionOptions::merge_parallel_matmuls),
      fusion_field("normalize_exports", &FusionOptions::normalize_exports),
      fusion_field("group", &FusionOptions::group),
      fusion_field("max_group_ops", &FusionOptions::max_group_ops),
  };
  return list;
}

Keyword threads_keyword(const char* name) {
  return field<int>(name, &EngineOptions::num_threads);
}

/// Every keyword, in the order of EngineOptions' fields.
const std::vector<Keyword>& keywords() {
  static const std::vector<Keyword> list{
      {"backend", [](EngineOptions& o, py::handle v) { o.backend = parse_backend(as<std::string>(v, "backend")); },
       [](const EngineOptions& o) { return py::cast(std::string(backend_name(o.backend))); }},
      field<int>("cuda_device", &EngineOptions::cuda_device),
      threads_keyword("threads"),
      threads_keyword("num_threads"),
      field<bool>("fuse", &EngineOptions::fuse),
      {"fusion", [](EngineOptions& o, py::handle v) { o.fusion = fusion_from(v); },
       [](const EngineOptions& o) {
         py::dict d;
         for (const Keyword& kw : fusion_keywords()) d[kw.name] = kw.get(o);
         return py::object(d);
       }},
      field<std::string>("dump_dir", &EngineOptions::dump_dir),
      field<bool>("disk_cache", &EngineOptions::disk_cache),
      {"cache_dir", [](EngineOptions& o, py::handle v) {
         o.cache_dir = py::str(py::module_::import("os").attr("fspath")(v)).cast<std::string>();
       },
       [](const EngineOptions& o) { return py::cast(o.cache_dir); }},
      field<std::string>("remote_store", &EngineOptions::remote_store),
      {"remote_trust",
       [](EngineOptions& o, py::handle v) { o.remote.trust = parse_remote_trust(as<std::string>(v, "remote_trust")); },
       [](const EngineOptions& o) { return py::cast(std::string(remote_trust_name(o.remote.trust))); }},
      {"remote_namespace",
       [](EngineOptions& o, py::handle v) { o.remote.key_namespace = as<std::string>(v, "remote_namespace"); },
       [](const EngineOptions& o) { return py::cast(o.remote.key_namespace); }},
      {"remote_key_file",
       [](EngineOptions& o, py::handle v) {
         o.remote.key_file = py::str(py::module_::import("os").attr("fspath")(v)).cast<std::string>();
       },
       [](const EngineOptions& o) { return py::cast(o.remote.key_file); }},
      {"remote_timeout_ms",
       [](EngineOptions& o, py::handle v) { o.remote.timeout_ms = o.remote.connect_timeout_ms = as<int>(v, "remote_timeout_ms"); },
       [](const EngineOptions& o) { return py::cast(o.remote.timeout_ms); }},
      field<uint64_t>("plan_cache_bytes", &EngineOptions::plan_cache_bytes),
      field<uint64_t>("kernel_cache_bytes", &EngineOptions::kernel_cache_bytes),
      field<uint64_t>("packed_cache_bytes", &EngineOptions::packed_cache_bytes),
      {"warn", [](EngineOptions& o, py::handle v) { o.warn = v.is_none() ? nullptr : python_sink(v); },
       [](const EngineOptions& o) { return py::cast(bool(o.warn)); }},
      field<bool>("profile", &EngineOptions::profile),
      field<bool>("background_compile", &EngineOptions::background_compile),
      field<bool>("tiering", &EngineOptions::tiering),
      field<std::string>("symbolic_dim", &EngineOptions::symbolic_dim),
      field<bool>("specialize", &EngineOptions::specialize),
      {"verify", [](EngineOptions& o, py::handle v) { o.verify = parse_verify_mode(as<std::string>(v, "verify")); },
       [](const EngineOptions& o) { return py::cast(std::string(verify_mode_name(o.verify))); }},
      field<double>("verify_tolerance_scale", &EngineOptions::verify_tolerance_scale),
      {"precision",
       [](EngineOptions& o, py::handle v) { o.precision = parse_precision(as<std::string>(v, "precision")); },
       [](const EngineOptions& o) { return py::cast(std::string(precision_name(o.precision))); }},
      field<bool>("tune", &EngineOptions::tune),
  };
  return list;
}

}  // namespace

EngineOptions engine_options(const py::kwargs& kwargs) {
  EngineOptions o;
  apply(keywords(), kwargs, "keyword argument(s)", o);
  return o;
}

py::dict options_dict(const EngineOptions& o) {
  py::dict d;
  for (const Keyword& kw : keywords()) {
    if (std::string(kw.name) != "threads") d[kw.name] = kw.get(o);
  }
  return d;
}

}  // namespace fusor::python
