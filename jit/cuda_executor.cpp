#include "jit/cuda_executor.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_set>

#include "cache/constant_keys.h"
#include "cache/kernel_store.h"
#include "cache/keyed_cache.h"
#include "cache/plan_key.h"
#include "codegen/cuda/cuda_backend.h"
#include "codegen/lower.h"
#include "ir/hash.h"
#include "jit/arena.h"
#include "jit/bind_run.h"

namespace fusor {

KernelKey cuda_kernel_key(const KernelSpec& spec, const std::string& arch, const std::string& nvrtc_version) {
  return KernelKey{spec, "cuda", arch, "nvrtc-" + nvrtc_version};
}

// ---- plan_cuda ------------------------------------------------------------------------------

namespace {

// The most any rendered kernel asks of a buffer's address (CudaSource::alignment: 16-byte
// vector loads); device tensors the caller passes in must meet it.
constexpr uint64_t kKernelAlignment = 16;

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Whether the view reads its elements in row-major order from view.offset on.
bool is_contiguous(const StridedView& v) {
  int64_t expect = 1;
  for (size_t d = v.shape.size(); d-- > 0;) {
    if (v.shape[d] == 1) continue;
    if (v.strides[d] != expect) return false;
    expect *= v.shape[d];
  }
  return true;
}

// The node a group is named by in errors: its anchor, else its first node.
const Node& group_node(const Graph& g, const FusionGroup& grp) {
  return g.node(grp.anchor >= 0 ? grp.anchor : grp.nodes.front());
}

class Planner {
 public:
  explicit Planner(CudaPlan& p) : p_(p), f_(p.fused), g_(p.fused.graph) {
    const size_t nv = g_.values().size();
    p_.places.resize(nv);
    for (size_t v = 0; v < nv; ++v) {
      p_.places[v].value = ValueId(v);
      p_.places[v].bytes = f_.types[v].shape.numel() * int64_t(dtype_size(f_.types[v].dtype));
    }
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      CudaPlace& pl = p_.places[size_t(g_.inputs()[i])];
      pl.kind = CudaPlace::Kind::Input;
      pl.input = int(i);
    }
  }

  void run() {
    for (const FusionGroup& grp : f_.groups) {
      if (grp.kind == GroupKind::View) continue;  // placed when something reads them
      const Node& n = group_node(g_, grp);
      FUSOR_CHECK(grp.kind != GroupKind::Opaque, Unsupported, "cuda backend: no CUDA kernel for ", op_name(n.op), " node '",
                  n.name, "' (the cuda engine has no host fallback)");
      std::string why;
      std::optional<KernelSpec> spec = lower_group(f_, grp, &why);
      FUSOR_CHECK(spec.has_value(), Unsupported, "cuda backend: the ", group_kind_name(grp.kind), " group of node '", n.name,
                  "' (", grp.pattern, ") has no kernel: ", why);
      FUSOR_CHECK(cuda_supports(*spec, &why), Unsupported, "cuda backend: the CUDA renderer declines the ",
                  kernel_kind_name(spec->kind), " kernel of node '", n.name, "' (", grp.pattern, "): ", why);
      std::string label = std::string(kernel_kind_name(spec->kind)) + " " + spec->name;
      add_launch(std::move(*spec), std::move(label));
    }
    for (ValueId o : g_.outputs()) p_.output_places.push_back(own_buffer(o));
    layout();
  }

 private:
  using Kind = CudaPlace::Kind;

  void add_launch(KernelSpec spec, std::string label, const std::vector<int>& places = {}) {
    CudaLaunch l;
    l.places = places;
    if (l.places.empty()) {
      for (const BufferSpec& b : spec.buffers) {
        ValueId v = g_.find_value(b.name);
        FUSOR_ASSERT(v != kNoValue, "kernel buffer '", b.name, "' is not a value of the plan");
        l.places.push_back(b.output ? written(v) : readable(v));
      }
    }
    l.spec = std::move(spec);
    l.label = std::move(label);
    p_.launches.push_back(std::move(l));
  }

  int written(ValueId v) {
    CudaPlace& pl = p_.places[size_t(v)];
    FUSOR_ASSERT(pl.kind == Kind::Unused, "value '", g_.value(v).name, "' is written twice");
    pl.kind = Kind::Arena;
    return int(v);
  }

  // The place of v for a launch that reads it: an input, a constant, a value some launch
  // wrote, or a view placed now (an alias, or a copy launch emitted before the reader).
  int readable(ValueId v) {
    CudaPlace& pl = p_.places[size_t(v)];
    if (pl.kind != Kind::Unused) return int(v);
    const Value& val = g_.value(v);
    if (val.kind == ValueKind::Constant) {
      pl.kind = Kind::Constant;
      return int(v);
    }
    FUSOR_ASSERT(val.kind == ValueKind::NodeOutput, "value '", val.name, "' has no buffer");
    place_view(v, false);
    return int(v);
  }

  // Places view v: an alias of its root's bytes when that is contiguous and aligned (and
  // `own` is false), else a copy launch into a buffer of its own.
  void place_view(ValueId v, bool own) {
    auto stop = [this](ValueId u) { return p_.places[size_t(u)].kind != Kind::Unused; };
    ValueId root = kNoValue;
    StridedView view;
    if (!resolve_view(f_, v, stop, &root, &view)) {
      // Strides cannot express the chain: materialize the input of v's producer, then v is
      // one view of that contiguous buffer, which strides always express.
      const Node& producer = g_.node(g_.value(v).producer);
      readable(producer.inputs[0]);
      bool ok = resolve_view(f_, v, stop, &root, &view);
      FUSOR_ASSERT(ok, "view '", g_.value(v).name, "' of a materialized value is not expressible");
    }
    FUSOR_ASSERT(root != v, "value '", g_.value(v).name, "' is read before any launch writes it (producer: ",
                 g_.value(v).kind == ValueKind::NodeOutput ? g_.node(g_.value(v).producer).name : "none", ")");
    int r = readable(root);
    const int64_t esize = int64_t(dtype_size(f_.types[size_t(v)].dtype));
    if (!own && is_contiguous(view)) {
      const CudaPlace& rp = p_.places[size_t(r)];
      const int base = rp.kind == Kind::Alias ? rp.root : r;
      const int64_t offset = view.offset * esize + (rp.kind == Kind::Alias ? rp.offset : 0);
      if (offset % kCudaBufferAlignment == 0) {
        CudaPlace& pl = p_.places[size_t(v)];
        pl.kind = Kind::Alias;
        pl.root = base;
        pl.offset = offset;
        return;
      }
    }
    add_launch(lower_view_copy(f_, v, root, view), "copy " + g_.value(v).name, {r, written(v)});
  }

  // The place graph output o is returned from: written by a launch, never shared with an
  // input, a constant or another value's bytes (the caller owns what it gets).
  int own_buffer(ValueId o) {
    CudaPlace& pl = p_.places[size_t(o)];
    if (pl.kind == Kind::Arena) return int(o);
    if (pl.kind == Kind::Unused) {
      if (g_.value(o).kind == ValueKind::NodeOutput) {
        place_view(o, true);
        return int(o);
      }
      readable(o);  // a constant no launch reads
    }
    // An input, a constant or an alias: copied into a place of its own.
    int src = int(o);
    StridedView view{f_.types[size_t(o)].shape.dims(), f_.types[size_t(o)].shape.strides(), 0};
    if (pl.kind == Kind::Alias) {
      src = pl.root;
      view.offset = pl.offset / int64_t(dtype_size(f_.types[size_t(o)].dtype));
    }
    CudaPlace own = pl;
    own.kind = Kind::Arena;
    own.input = own.root = -1;
    own.offset = 0;
    p_.places.push_back(own);
    const int dst = int(p_.places.size()) - 1;
    add_launch(lower_view_copy(f_, o, p_.places[size_t(src)].value, view), "copy " + g_.value(o).name, {src, dst});
    return dst;
  }

  // Arena offsets by liveness over the launches (jit/arena.h): host inputs are staged from
  // the start, outputs live to the end (copied out after the last launch).
  void layout() {
    const size_t np = p_.places.size();
    const int end = int(p_.launches.size());
    std::vector<int> first(np, -1), last(np, -1);
    for (size_t i = 0; i < p_.launches.size(); ++i) {
      const CudaLaunch& l = p_.launches[i];
      for (size_t j = 0; j < l.places.size(); ++j) {
        const CudaPlace& pl = p_.places[size_t(l.places[j])];
        const size_t base = pl.kind == Kind::Alias ? size_t(pl.root) : size_t(l.places[j]);
        if (l.spec.buffers[j].output && first[base] < 0) first[base] = int(i);
        last[base] = std::max(last[base], int(i));
      }
    }
    std::vector<char> is_output(np, 0);
    for (int p : p_.output_places) is_output[size_t(p)] = 1;
    std::vector<ArenaItem> items;
    std::vector<size_t> placed;
    for (size_t p = 0; p < np; ++p) {
      const CudaPlace& pl = p_.places[p];
      ArenaItem item{round_up(std::max<int64_t>(pl.bytes, 1), kCudaBufferAlignment), 0, 0};
      if (pl.kind == Kind::Input) {
        p_.places[p].offset = -1;  // not staged: no launch reads it
        if (last[p] < 0) continue;
        item.last = last[p];
      } else if (pl.kind == Kind::Arena) {
        FUSOR_ASSERT(first[p] >= 0, "value '", g_.value(pl.value).name, "' has a place but no launch writes it");
        item.first = first[p];
        item.last = is_output[p] ? end : std::max(first[p], last[p]);
      } else {
        continue;
      }
      items.push_back(item);
      placed.push_back(p);
    }
    std::vector<int64_t> offsets;
    p_.arena_bytes = layout_arena(items, &offsets);
    for (size_t i = 0; i < placed.size(); ++i) {
      // Sizes are multiples of the alignment, so are the greedy layout's offsets.
      FUSOR_ASSERT(offsets[i] % kCudaBufferAlignment == 0, "arena offset ", offsets[i], " is not aligned");
      p_.places[placed[i]].offset = offsets[i];
    }
  }

  CudaPlan& p_;
  const FusedGraph& f_;
  const Graph& g_;
};

}  // namespace

CudaPlan plan_cuda(FusedGraph fused) {
  CudaPlan p;
  p.fused = std::move(fused);
  Planner(p).run();
  return p;
}

// ---- CudaExecutor ---------------------------------------------------------------------------

namespace {

// A plan with its kernels loaded, its constants on the device and its arena.
struct CudaExecutable {
  CudaPlan plan;
  std::vector<std::shared_ptr<const CudaKernel>> kernels;       // per launch
  std::vector<std::shared_ptr<const DeviceBuffer>> constants;   // per place (Constant places)
  DeviceBuffer arena;
  // Per-run scratch (the places' addresses, one launch's buffers), touched only under the
  // executor's run lock, so a run on a known shape allocates no host memory for them.
  mutable std::vector<uint64_t> addr, buffers;
};


void check_device_alignment(const Tensor& t, const char* role, const std::string& name) {
  FUSOR_CHECK(t.device_address() % kKernelAlignment == 0, InvalidArgument, role, " '", name, "' (", t.type_str(),
              ") is at device address ", t.device_address(), ", not aligned to ", kKernelAlignment,
              " bytes as the CUDA kernels' vector accesses need");
}

}  // namespace

struct CudaExecutor::Impl {
  explicit Impl(Options o)
      : options(std::move(o)),
        backend(make_cuda_backend(options.device, CudaOptions{options.dump_dir})),
        arch(backend->arch()),
        nvrtc(backend->compiler().nvrtc_version()),
        plans({options.plan_cache_bytes, nullptr, nullptr}),
        kernels({options.kernel_cache_bytes, nullptr, nullptr}),
        constants({options.constant_cache_bytes, nullptr, nullptr}) {}

  // The kernel of `spec`: in memory, else loaded from the store's cubin, else compiled by
  // NVRTC (and its cubin stored).
  std::shared_ptr<const CudaKernel> kernel(const KernelSpec& spec) {
    KernelKey key = cuda_kernel_key(spec, arch, nvrtc);
    return kernels.get_or_build(key, [&] {
      std::shared_ptr<const CudaKernel> k;
      std::string key_bytes;
      if (options.store) {
        key_bytes = key.serialize();
        if (std::optional<std::vector<uint8_t>> cubin = options.store->get(key_bytes)) {
          try {
            k = backend->load(key.spec, std::string(cubin->begin(), cubin->end()));
            disk_hits.fetch_add(1, std::memory_order_relaxed);
            load_us.fetch_add(uint64_t(k->load_us), std::memory_order_relaxed);
          } catch (const Error& e) {
            options.warn(std::string("a cubin from the persistent store in ") + options.store->stats().location +
                         " cannot be loaded; compiling it again (" + e.what() + ")");
          }
        }
      }
      if (!k) {
        k = backend->compile(key.spec);
        compiled.fetch_add(1, std::memory_order_relaxed);
        compile_us.fetch_add(uint64_t(k->binary.compile_us), std::memory_order_relaxed);
        load_us.fetch_add(uint64_t(k->load_us), std::memory_order_relaxed);
        const std::string& cubin = k->binary.cubin;
        if (options.store &&
            options.store->put(key_bytes, std::span(reinterpret_cast<const uint8_t*>(cubin.data()), cubin.size())))
          disk_writes.fetch_add(1, std::memory_order_relaxed);
      }
      return SizedValue<CudaKernel>{k, uint64_t(k->binary.cubin.size()) + sizeof(CudaKernel)};
    });
  }

  std::shared_ptr<const DeviceBuffer> constant(const Tensor& c, bool users) {
    DeviceConstKey key{c, !users, users ? 0 : content_hash(c)};
    return constants.get_or_build(key, [&] {
      auto b = std::make_shared<DeviceBuffer>(backend->alloc(c.nbytes()));
      backend->copy_to_device(*b, c.raw(), c.nbytes());
      return SizedValue<DeviceBuffer>{b, uint64_t(c.nbytes())};
    });
  }

  std::shared_ptr<const CudaExecutable> plan_for(const Graph& g, const PlanKey& key) {
    return plans.get_or_build(key, [&] {
      auto e = std::make_shared<CudaExecutable>();
      e->plan = plan_cuda(options.fuse(g, key.inputs));
      for (const CudaLaunch& l : e->plan.launches) e->kernels.push_back(kernel(l.spec));
      std::unordered_set<const void*> users;  // the storage of the user's constants
      for (const Constant& c : g.constants()) users.insert(c.data.raw());
      const Graph& fg = e->plan.fused.graph;
      e->constants.resize(e->plan.places.size());
      for (size_t p = 0; p < e->plan.places.size(); ++p) {
        const CudaPlace& pl = e->plan.places[p];
        if (pl.kind != CudaPlace::Kind::Constant) continue;
        const Tensor* c = fg.constant_data(pl.value);
        FUSOR_ASSERT(c != nullptr, "constant place '", fg.value(pl.value).name, "' has no data");
        e->constants[p] = constant(*c, users.count(c->raw()) != 0);
      }
      e->arena = backend->alloc(size_t(e->plan.arena_bytes));
      return SizedValue<CudaExecutable>{e, uint64_t(e->plan.arena_bytes) + sizeof(CudaExecutable)};
    });
  }

  PlanKey plan_key(const Graph& g, std::vector<TensorType> inputs) const {
    PlanKey key;
    key.inputs = std::move(inputs);
    key.graph_fingerprint = g.fingerprint();
    key.device = Device::Cuda;
    key.options_hash = options.options_hash;
    return key;
  }

  Options options;
  std::unique_ptr<CudaBackend> backend;
  std::string arch, nvrtc;
  KeyedCache<PlanKey, CudaExecutable, PlanKeyHash> plans;
  KeyedCache<KernelKey, CudaKernel, KernelKeyHash> kernels;
  KeyedCache<DeviceConstKey, DeviceBuffer, DeviceConstKeyHash> constants;
  std::atomic<uint64_t> compiled{0}, disk_hits{0}, disk_writes{0}, compile_us{0}, load_us{0}, launches{0};
  std::mutex run_mu;  // one run at a time: one stream, one arena per plan
};

CudaExecutor::CudaExecutor(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
CudaExecutor::~CudaExecutor() = default;

std::string CudaExecutor::description() const { return impl_->backend->description(); }

void CudaExecutor::prepare(const Graph& graph, const std::vector<TensorType>& input_types) {
  impl_->plan_for(graph, impl_->plan_key(graph, input_types));
}

void CudaExecutor::run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs) {
  Impl& m = *impl_;
  std::vector<const Tensor*> feeds;
  std::vector<TensorType> types = bind_run(graph, inputs, outputs, &feeds);
  bool on_host = true;  // every input on the host: outputs not supplied go to the host too
  for (size_t i = 0; i < feeds.size(); ++i)
    if (feeds[i]->device() != Device::Host) {
      on_host = false;
      check_device_alignment(*feeds[i], "input", graph.value(graph.inputs()[i]).name);
    }
  std::shared_ptr<const CudaExecutable> exe = m.plan_for(graph, m.plan_key(graph, std::move(types)));
  const CudaPlan& plan = exe->plan;
  const Graph& g = plan.fused.graph;

  std::lock_guard<std::mutex> lk(m.run_mu);
  const uint64_t arena = exe->arena.address();
  std::vector<uint64_t>& addr = exe->addr;
  addr.assign(plan.places.size(), 0);
  for (size_t p = 0; p < plan.places.size(); ++p) {
    const CudaPlace& pl = plan.places[p];
    switch (pl.kind) {
      case CudaPlace::Kind::Input: {
        const Tensor& t = *feeds[size_t(pl.input)];
        if (t.device() != Device::Host) {
          addr[p] = t.device_address();
        } else if (pl.offset >= 0) {
          addr[p] = arena + uint64_t(pl.offset);
          m.backend->copy_to_device(addr[p], t.raw(), t.nbytes());
        }
        break;
      }
      case CudaPlace::Kind::Constant: addr[p] = exe->constants[p]->address(); break;
      case CudaPlace::Kind::Arena: addr[p] = arena + uint64_t(pl.offset); break;
      case CudaPlace::Kind::Alias:
      case CudaPlace::Kind::Unused: break;
    }
  }
  // Outputs: supplied ones in place (device tensors written directly, host ones copied
  // into after the run); the others on the host, or in fresh device memory.
  struct HostCopy {
    void* dst;
    int place;
    size_t bytes;
  };
  std::vector<HostCopy> host_copies;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const ValueId o = g.outputs()[i];
    const int p = plan.output_places[i];
    const std::string& name = g.value(o).name;
    const TensorType& want = plan.fused.types[size_t(o)];
    auto it = outputs.find(name);
    if (it != outputs.end()) {
      const Tensor& t = it->second;
      FUSOR_CHECK(t.defined() && t.dtype() == want.dtype && t.shape() == want.shape, ShapeMismatch, "output '", name,
                  "' was supplied as ", t.defined() ? t.type_str() : "an undefined tensor", " but is ", want.str());
      if (t.device() == Device::Host) {
        host_copies.push_back({it->second.raw(), p, t.nbytes()});
      } else {
        check_device_alignment(t, "output", name);
        addr[size_t(p)] = t.device_address();
      }
    } else if (on_host) {
      Tensor t = Tensor::empty(want.dtype, want.shape);
      host_copies.push_back({t.raw(), p, t.nbytes()});
      outputs.emplace(name, std::move(t));
    } else {
      auto buffer = std::make_shared<DeviceBuffer>(m.backend->alloc(size_t(plan.places[size_t(p)].bytes)));
      addr[size_t(p)] = buffer->address();
      outputs.emplace(name, Tensor::wrap_device(buffer->address(), want.dtype, want.shape, std::move(buffer)));
    }
  }
  for (size_t p = 0; p < plan.places.size(); ++p)
    if (plan.places[p].kind == CudaPlace::Kind::Alias) addr[p] = addr[size_t(plan.places[p].root)] + uint64_t(plan.places[p].offset);

  std::vector<uint64_t>& buffers = exe->buffers;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const CudaLaunch& l = plan.launches[i];
    buffers.clear();
    for (int p : l.places) buffers.push_back(addr[size_t(p)]);
    m.backend->launch(*exe->kernels[i], buffers);
  }
  m.launches.fetch_add(plan.launches.size(), std::memory_order_relaxed);
  for (const HostCopy& c : host_copies) m.backend->copy_to_host(c.dst, addr[size_t(c.place)], c.bytes);
}

void CudaExecutor::synchronize() {
  std::lock_guard<std::mutex> lk(impl_->run_mu);
  impl_->backend->synchronize();
}

Tensor CudaExecutor::to_device(const Tensor& t) {
  FUSOR_CHECK(t.defined(), InvalidArgument, "Engine::to_device of an undefined tensor");
  if (t.device() != Device::Host) return t;
  std::lock_guard<std::mutex> lk(impl_->run_mu);
  auto buffer = std::make_shared<DeviceBuffer>(impl_->backend->alloc(t.nbytes()));
  impl_->backend->copy_to_device(*buffer, t.raw(), t.nbytes());
  const uint64_t address = buffer->address();
  return Tensor::wrap_device(address, t.dtype(), t.shape(), std::move(buffer));
}

Tensor CudaExecutor::to_host(const Tensor& t) {
  FUSOR_CHECK(t.defined(), InvalidArgument, "Engine::to_host of an undefined tensor");
  if (t.device() == Device::Host) return t;
  Tensor out = Tensor::empty(t.dtype(), t.shape());
  std::lock_guard<std::mutex> lk(impl_->run_mu);
  impl_->backend->copy_to_host(out.raw(), t.device_address(), t.nbytes());
  return out;
}

void CudaExecutor::add_stats(EngineStats& s) const {
  const Impl& m = *impl_;
  CacheStats p = m.plans.stats(), k = m.kernels.stats(), c = m.constants.stats();
  s.plan_hits += p.hits;
  s.plan_misses += p.misses;
  s.plans += p.entries;
  s.plan_evictions += p.evictions;
  s.plan_bytes += p.bytes;
  s.kernel_hits += k.hits;
  s.kernel_evictions += k.evictions;
  s.kernel_bytes += k.bytes;
  s.packed_bytes += c.bytes;
  s.kernels_compiled += m.compiled.load();
  s.device_launches += m.launches.load();
  s.disk_hits += m.disk_hits.load();
  s.disk_writes += m.disk_writes.load();
  const double ms = double(m.compile_us.load()) / 1000.0;
  if (m.compiled.load()) s.compile_ms_by_backend["cuda"] += ms;
  s.compile_ms += ms;
  s.load_ms += double(m.load_us.load()) / 1000.0;
}

}  // namespace fusor
