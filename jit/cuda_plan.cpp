#include "jit/cuda_plan.h"

#include <algorithm>

#include "codegen/cuda/render_cuda.h"
#include "codegen/lower.h"
#include "jit/arena.h"

namespace fusor {

namespace {

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

}  // namespace fusor
