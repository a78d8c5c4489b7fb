#include "codegen/llvm/emit_tile.h"

#include <algorithm>
#include <sstream>

#include "codegen/index_math.h"
#include "ir/error.h"

namespace fusor::llvm_ir {

std::string vec_type(int64_t vl) {
  std::string s = "<";  // (built in steps: GCC 12 warns falsely on "<" + std::string)
  s += std::to_string(vl);
  s += " x float>";
  return s;
}
std::string i64(int64_t v) { return std::to_string(v); }

// A micro-kernel: @<name>(ptr %a0..., <B args>, ptr %tile). Row i's A element of segment s,
// step kk is at a_i + s * ks * astep + kk * astep; the tile is stored row-major [mr][nr].
// B args: `ptr %b` (a packed panel: s * ks * nr + kk * nr + v * vl) or, for masked_image,
// `ptr %img, i64 %iy0, i64 %ix0` (the tap (ky, kx) reads the image at row iy0 + ky * dil_h,
// columns ix0 + kx * dil_w + lane, channel kk; lanes outside the image read as 0).
std::string emit_microkernel(const std::string& name, const TileShape& t, const BRead& br, int64_t astep) {
  FUSOR_ASSERT(!br.bf16 || (t.vl == 16 && !br.masked_image), "bf16 micro-kernels read a packed B with AVX-512");
  // Where the entry block's values (seg_prefix, known once B's reads are set up) go.
  static constexpr const char* kEntryValues = "  ;entry-values\n";
  const std::string vt = vec_type(t.vl);
  const std::string mt = "<" + i64(t.vl) + " x i1>";
  std::ostringstream os;
  os << "define internal void @" << name << "(";
  for (int64_t i = 0; i < t.mr; ++i) os << "ptr noalias %a" << i << ", ";
  os << (br.masked_image ? (br.flat ? "ptr noalias %img, i64 %p0" : "ptr noalias %img, i64 %iy0, i64 %ix0")
                          : "ptr noalias %b")
     << ", ptr noalias %tile" << (br.runtime_ks ? ", i64 %ks" : "") << (br.next_lines > 0 ? ", ptr %pf" : "")
     << ") #1 {\nentry:\n" << kEntryValues
     << "  br label %seg\nseg:\n"
     << "  %s = phi i64 [ 0, %entry ], [ %s.next, %seg.end ]\n";
  // The next panel's share (Note [Contraction kernels]) is spread evenly over the steps: the
  // loop takes `unroll` steps per iteration and prefetches `per_iter` lines from line
  // %kk * per_iter of the share, where a line index per step (kk * lines / ks) cost a
  // multiply and shifts on the FMA ports every step; the steps past the last whole iteration
  // run in a second loop. The unroll issues the fewest lines past the share: FF2 of the BERT
  // layer at seq 16 (3072 steps, 4608 lines a tile) took 2 lines a step, a quarter of them
  // the last line again, and 12 per 8 steps issue none (16 x 3072 x 768 + bias, one thread,
  // the 2-vCPU Xeon: 0.61-0.62 -> 0.56 ms, `fusor run` medians of 300 over three quiet rounds).
  FUSOR_ASSERT(br.next_lines == 0 || !br.runtime_ks, "a next-panel prefetch needs the step count");
  int64_t unroll = 1;
  if (br.next_lines > 0) {
    // The fewest lines issued past the share (iterations x lines each >= the share), then
    // the most steps per iteration.
    int64_t best = INT64_MAX;
    for (int64_t u = 1; u <= std::min<int64_t>(8, br.ks); ++u) {
      const int64_t it = br.ks / u, issued = it * ceil_div(br.next_lines, it);
      if (issued <= best) best = issued, unroll = u;
    }
  }
  const int64_t iters = br.runtime_ks ? 0 : br.ks / unroll, rest = br.runtime_ks ? 0 : br.ks % unroll;
  const int64_t per_iter = br.next_lines > 0 ? ceil_div(br.next_lines, iters) : 0;
  const char* fin = rest ? "m" : "n";  // the accumulators after the last step
  auto acc = [](int64_t i, int64_t v, const std::string& stage) {
    return "%acc." + std::to_string(i) + "." + std::to_string(v) + "." + stage;
  };
  for (int64_t i = 0; i < t.mr; ++i)
    for (int64_t v = 0; v < t.nv; ++v)
      os << "  " << acc(i, v, "s") << " = phi " << vt << " [ zeroinitializer, %entry ], [ " << acc(i, v, fin)
         << ", %seg.end ]\n";
  IrText sg("g");
  std::string seg_prefix;  // per-call values the segments use (emitted in the entry block)
  FUSOR_ASSERT(!br.runtime_ks || br.segs == 1, "a run-time step count takes one segment");
  std::string aoff = sg.op("mul i64 %s, " + i64(br.ks * astep));
  std::vector<std::string> ap;
  for (int64_t i = 0; i < t.mr; ++i)
    ap.push_back(sg.op("getelementptr inbounds float, ptr %a" + i64(i) + ", i64 " + aoff));
  std::string bs;
  std::vector<std::string> mask;
  if (br.masked_image && br.flat) {
    // Each lane's output row and column (i32: check() bounds the pixels), once per call.
    const Conv2dParams& p = br.conv;
    const std::string vi = "<" + i64(t.vl) + " x i32>";
    auto splat = [&](IrText& ir, const std::string& scalar) {
      std::string ins = ir.op("insertelement " + vi + " poison, i32 " + scalar + ", i64 0");
      return ir.op("shufflevector " + vi + " " + ins + ", " + vi + " poison, <" + i64(t.vl) + " x i32> zeroinitializer");
    };
    auto constant = [&](int64_t c) {
      std::string v = "<";
      for (int64_t l = 0; l < t.vl; ++l) v += (l ? ", i32 " : "i32 ") + i64(c);
      return v + ">";
    };
    IrText lanes("l");
    std::string p0 = splat(lanes, lanes.op("trunc i64 %p0 to i32"));
    std::vector<std::string> oy, ox;
    for (int64_t v = 0; v < t.nv; ++v) {
      std::string seq = "<";
      for (int64_t l = 0; l < t.vl; ++l) seq += (l ? ", i32 " : "i32 ") + i64(v * t.vl + l);
      std::string pix = lanes.op("add " + vi + " " + p0 + ", " + seq + ">");
      oy.push_back(lanes.op("udiv " + vi + " " + pix + ", " + constant(p.ow)));
      ox.push_back(lanes.op("urem " + vi + " " + pix + ", " + constant(p.ow)));
    }
    seg_prefix = lanes.text();
    std::string ky = sg.op("udiv i64 %s, " + i64(p.kw));
    std::string kx = sg.op("urem i64 %s, " + i64(p.kw));
    std::string dy = sg.op("sub i64 " + sg.op("mul i64 " + ky + ", " + i64(p.dil_h)) + ", " + i64(p.pad_t));
    std::string dx = sg.op("sub i64 " + sg.op("mul i64 " + kx + ", " + i64(p.dil_w)) + ", " + i64(p.pad_l));
    std::string off = sg.op("add i64 " + sg.op("add i64 %p0, " + sg.op("mul i64 " + dy + ", " + i64(br.image_row_stride))) +
                            ", " + dx);
    bs = sg.op("getelementptr float, ptr %img, i64 " + off);  // may point outside: only masked lanes use it
    std::string dyv = splat(sg, sg.op("trunc i64 " + dy + " to i32"));
    std::string dxv = splat(sg, sg.op("trunc i64 " + dx + " to i32"));
    for (int64_t v = 0; v < t.nv; ++v) {
      std::string iy = sg.op("add " + vi + " " + oy[size_t(v)] + ", " + dyv);
      std::string ix = sg.op("add " + vi + " " + ox[size_t(v)] + ", " + dxv);
      std::string in_y = sg.op("icmp ult " + vi + " " + iy + ", " + constant(p.h));  // unsigned: also >= 0
      std::string in_x = sg.op("icmp ult " + vi + " " + ix + ", " + constant(p.w));
      mask.push_back(sg.op("and " + mt + " " + in_y + ", " + in_x));
    }
  } else if (br.masked_image) {
    const Conv2dParams& p = br.conv;
    std::string ky = sg.op("udiv i64 %s, " + i64(p.kw));
    std::string kx = sg.op("urem i64 %s, " + i64(p.kw));
    std::string iy = sg.op("add i64 %iy0, " + sg.op("mul i64 " + ky + ", " + i64(p.dil_h)));
    std::string ix = sg.op("add i64 %ix0, " + sg.op("mul i64 " + kx + ", " + i64(p.dil_w)));
    std::string y_lo = sg.op("icmp sge i64 " + iy + ", 0");
    std::string y_hi = sg.op("icmp slt i64 " + iy + ", " + i64(p.h));
    std::string y_ok = sg.op("and i1 " + y_lo + ", " + y_hi);
    std::string off = sg.op("add i64 " + sg.op("mul i64 " + iy + ", " + i64(br.image_row_stride)) + ", " + ix);
    bs = sg.op("getelementptr float, ptr %img, i64 " + off);  // may point outside: only masked lanes use it
    const std::string lanes_t = "<" + i64(t.vl) + " x i64>";
    std::string lanes = "<";
    for (int64_t l = 0; l < t.vl; ++l) lanes += (l ? ", i64 " : "i64 ") + i64(l);
    lanes += ">";
    std::string ins = sg.op("insertelement " + lanes_t + " poison, i64 " + ix + ", i64 0");
    std::string ixs = sg.op("shufflevector " + lanes_t + " " + ins + ", " + lanes_t + " poison, <" + i64(t.vl) +
                            " x i32> zeroinitializer");
    std::string yins = sg.op("insertelement " + mt + " poison, i1 " + y_ok + ", i64 0");
    std::string ys = sg.op("shufflevector " + mt + " " + yins + ", " + mt + " poison, <" + i64(t.vl) +
                           " x i32> zeroinitializer");
    for (int64_t v = 0; v < t.nv; ++v) {
      std::string col = sg.op("add " + lanes_t + " " + ixs + ", " + lanes);
      if (v) col = sg.op("add " + lanes_t + " " + col + ", <" + [&] {
        std::string c;
        for (int64_t l = 0; l < t.vl; ++l) c += (l ? ", i64 " : "i64 ") + i64(v * t.vl);
        return c;
      }() + ">");
      std::string lo = sg.op("icmp sge " + lanes_t + " " + col + ", zeroinitializer");
      std::string hi = sg.op("icmp slt " + lanes_t + " " + col + ", <" + [&] {
        std::string c;
        for (int64_t l = 0; l < t.vl; ++l) c += (l ? ", i64 " : "i64 ") + i64(p.w);
        return c;
      }() + ">");
      mask.push_back(sg.op("and " + mt + " " + sg.op("and " + mt + " " + lo + ", " + hi) + ", " + ys));
    }
  } else {
    std::string bo = sg.op("mul i64 %s, " + i64(br.ks * t.nr));
    bs = sg.op("getelementptr inbounds float, ptr %b, i64 " + bo);
  }
  // One k step: B's vectors, A's broadcasts and the FMAs, from the accumulators of stage
  // `from` to those of stage `to`, at step index `kidx` (an i64 value).
  std::string pair_mask = "<";
  for (int64_t l = 0; l < 32; ++l) pair_mask += (l ? ", i32 " : "i32 ") + i64(l % 2);
  pair_mask += ">";
  auto step_body = [&](IrText& kb, const std::string& kidx, const std::string& from, const std::string& to) {
    std::string kb_off = kb.op("mul i64 " + kidx + ", " + i64(br.step));
    std::vector<std::string> bv;
    for (int64_t v = 0; v < t.nv; ++v) {
      std::string o = v ? kb.op("add i64 " + kb_off + ", " + i64(v * t.vl)) : kb_off;
      if (br.masked_image) {
        std::string p = kb.op("getelementptr float, ptr " + bs + ", i64 " + o);
        bv.push_back(kb.op("call " + vt + " @llvm.masked.load.v" + i64(t.vl) + "f32.p0(ptr " + p + ", i32 4, " + mt +
                           " " + mask[size_t(v)] + ", " + vt + " zeroinitializer)"));
      } else {
        std::string p = kb.op("getelementptr inbounds float, ptr " + bs + ", i64 " + o);
        bv.push_back(kb.op("load " + std::string(br.bf16 ? "<32 x bfloat>" : vt) + ", ptr " + p + ", align 4"));
        if (br.prefetch_floats > 0) {
          std::string pf = kb.op("getelementptr float, ptr " + p + ", i64 " + i64(br.prefetch_floats));
          // (LLVM's locality 3 is prefetcht0, 2 prefetcht1.)
          kb.line("call void @llvm.prefetch.p0(ptr " + pf + ", i32 0, i32 " + (br.prefetch_to_l2 ? "2" : "3") +
                  ", i32 1)");
        }
      }
    }
    std::string ka = astep == 1 ? kidx : kb.op("mul i64 " + kidx + ", " + i64(astep));
    // bf16: each A element is a pair of bf16 broadcast to the 16 lanes, B's vectors 32 bf16.
    // (LLVM 16's VectorCombine recurses forever on a bitcast of an i32 splat to bfloat, so
    // the pair is loaded as <2 x bfloat> and shuffled.)
    for (int64_t i = 0; i < t.mr; ++i) {
      std::string p = kb.op("getelementptr inbounds float, ptr " + ap[size_t(i)] + ", i64 " + ka);
      std::string splat;
      if (br.bf16) {
        std::string x = kb.op("load <2 x bfloat>, ptr " + p + ", align 4");
        splat = kb.op("shufflevector <2 x bfloat> " + x + ", <2 x bfloat> poison, <32 x i32> " + pair_mask);
      } else {
        std::string x = kb.op("load float, ptr " + p + ", align 4");
        std::string ins = kb.op("insertelement " + vt + " poison, float " + x + ", i64 0");
        splat = kb.op("shufflevector " + vt + " " + ins + ", " + vt + " poison, <" + i64(t.vl) +
                      " x i32> zeroinitializer");
      }
      for (int64_t v = 0; v < t.nv; ++v)
        kb.line(acc(i, v, to) +
                (br.bf16 ? " = call <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float> " + acc(i, v, from) +
                               ", <32 x bfloat> " + splat + ", <32 x bfloat> " + bv[size_t(v)] + ")"
                         : " = call " + vt + " @llvm.fma.v" + i64(t.vl) + "f32(" + vt + " " + splat + ", " + vt + " " +
                               bv[size_t(v)] + ", " + vt + " " + acc(i, v, from) + ")"));
    }
  };
  auto phis = [&](const std::string& stage, const std::string& from_label, const std::string& from_stage,
                  const std::string& loop_label, const std::string& loop_stage) {
    for (int64_t i = 0; i < t.mr; ++i)
      for (int64_t v = 0; v < t.nv; ++v)
        os << "  " << acc(i, v, stage) << " = phi " << vt << " [ " << acc(i, v, from_stage) << ", %" << from_label
           << " ], [ " << acc(i, v, loop_stage) << ", %" << loop_label << " ]\n";
  };
  os << sg.text() << "  br label %k\nk:\n  %kk = phi i64 [ 0, %seg ], [ %kk.next, %k ]\n";
  phis("k", "seg", "s", "k", "n");
  IrText kb("q");
  std::string stage = "k";
  for (int64_t u = 0; u < unroll; ++u) {
    std::string kidx = unroll == 1 ? "%kk" : kb.op("add i64 " + kb.op("mul i64 %kk, " + i64(unroll)) + ", " + i64(u));
    std::string to = u + 1 == unroll ? "n" : "u" + std::to_string(u);
    step_body(kb, kidx, stage, to);
    stage = to;
  }
  if (br.next_lines > 0) {
    // (Where the iterations' lines outnumber the share's, the last iterations prefetch its
    // last line again: a hint only, and the neighbours' lines stay theirs.)
    std::string first = per_iter == 1 ? "%kk" : kb.op("mul i64 %kk, " + i64(per_iter));
    for (int64_t j = 0; j < per_iter; ++j) {
      std::string line = j ? kb.op("add i64 " + first + ", " + i64(j)) : first;
      if (iters * per_iter > br.next_lines) {
        std::string last = i64(br.next_lines - 1);
        line = kb.op("select i1 " + kb.op("icmp ult i64 " + line + ", " + last) + ", i64 " + line + ", i64 " + last);
      }
      std::string p = kb.op("getelementptr i8, ptr %pf, i64 " + kb.op("shl i64 " + line + ", 6"));
      kb.line("call void @llvm.prefetch.p0(ptr " + p + ", i32 0, i32 2, i32 1)");
    }
  }
  os << kb.text() << "  %kk.next = add nuw nsw i64 %kk, 1\n  %kdone = icmp eq i64 %kk.next, "
     << (br.runtime_ks ? std::string("%ks") : i64(iters)) << "\n  br i1 %kdone, label %"
     << (rest ? "kt" : "seg.end") << ", label %k\n";
  if (rest) {
    os << "kt:\n  %kr = phi i64 [ " << iters * unroll << ", %k ], [ %kr.next, %kt ]\n";
    phis("t", "k", "n", "kt", "m");
    IrText tb("r");
    step_body(tb, "%kr", "t", "m");
    os << tb.text() << "  %kr.next = add nuw nsw i64 %kr, 1\n  %krdone = icmp eq i64 %kr.next, " << br.ks
       << "\n  br i1 %krdone, label %seg.end, label %kt\n";
  }
  os << "seg.end:\n  %s.next = add nuw nsw i64 %s, 1\n"
     << "  %sdone = icmp eq i64 %s.next, " << br.segs << "\n  br i1 %sdone, label %exit, label %seg\nexit:\n";
  IrText st("w");
  for (int64_t i = 0; i < t.mr; ++i)
    for (int64_t v = 0; v < t.nv; ++v) {
      std::string p = st.op("getelementptr inbounds float, ptr %tile, i64 " + i64(i * t.nr + v * t.vl));
      st.line("store " + vt + " " + acc(i, v, fin) + ", ptr " + p + ", align 4");
    }
  os << st.text() << "  ret void\n}\n";
  std::string out = os.str();
  out.replace(out.find(kEntryValues), std::string(kEntryValues).size(), seg_prefix);
  return out;
}

// Note [Epilogue interleaving]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A full tile's epilogue runs over MR rows of NR = NV vectors. Written as one loop over the
// columns, the vectorizer took it one vector per iteration and the unroller laid the MR * NV
// vectors out one after another, each a dependent chain: GELU's erf is a division and two
// polynomials, ~100 cycles of latency per vector, and a core whose out-of-order window
// holds little more than one such chain (Zen 1's FP scheduler) runs them near their
// latency, as the pointwise loops did (Note [Pointwise interleaving], emit_pointwise.cpp).
// The vectorizer's interleave count would put a row's vectors side by side, instruction by
// instruction, but it takes only powers of two, and NV is often 3 (AVX2's 4 x 3 tile). So
// a full tile's epilogue (emit_tile_epilogue with interleave = NV) writes the body once per
// vector of the row, each copy over its own NR / NV columns with its own pointers, and
// merges the copies' instructions one line from each in turn (zip_lines: the copies are
// independent, so any merge of their in-order lines is the same computation); the loop over
// the NR / NV columns asks the vectorizer for exactly that width. Each copy then becomes one
// vector chain and the NV chains advance together. Edge tiles keep the plain loop over their
// valid columns. Every element is computed by the same operations as before: the floats do
// not change. Measured on a 2-vCPU AMD EPYC Zen 1 (AVX2, tile 4 x 3), MatMul + bias + GELU
// 128 x 768 x 3072, one thread, `fusor run --repeat 100` medians over four interleaved
// rounds: 17.7-18.3 -> 17.4-17.9 ms (2%); at 384 rows the GELU had cost ~8% of the kernel.

namespace {

// The lines of `parts` merged one from each in turn (Note [Epilogue interleaving]).
std::string zip_lines(const std::vector<std::string>& parts) {
  std::vector<std::istringstream> in;
  for (const std::string& p : parts) in.emplace_back(p);
  std::string out, line;
  for (bool any = true; any;) {
    any = false;
    for (std::istringstream& s : in)
      if (std::getline(s, line)) {
        out += line + "\n";
        any = true;
      }
  }
  return out;
}

}  // namespace

std::string emit_tile_epilogue(const std::string& name, const ExprGraph& graph, const std::vector<TileAccess>& strides,
                               int64_t nr, int64_t sink_row_stride, int64_t interleave, int loop_id) {
  FUSOR_ASSERT(strides.size() == graph.accesses.size(), "one stride pair per access");
  // Interleaved: `interleave` copies of the body, each over its own nr / interleave columns.
  const int64_t copies = interleave > 1 && nr % interleave == 0 ? interleave : 1;
  FUSOR_ASSERT(copies == 1 || loop_id > 0, "an interleaved epilogue needs its loop metadata's number");
  const int64_t width = nr / copies;
  ExprGraph g = graph;
  for (size_t x = 0; x < g.accesses.size(); ++x) g.accesses[x].strides = {strides[x].col};
  std::ostringstream os;
  os << "define internal void @" << name << "(ptr noalias %tile, ";
  for (size_t x = 0; x < g.accesses.size(); ++x) os << "ptr noalias %p" << x << ", ";
  if (sink_row_stride) os << "ptr noalias %sink, " << (sink_row_stride < 0 ? "i64 %sinkstride, " : "");
  os << "i64 %rows, i64 %cols) #1 {\nentry:\n  br label %outer\nouter:\n"
     << "  %o = phi i64 [ 0, %entry ], [ %o.next, %outer.end ]\n";
  IrText q("r"), hoisted("h"), head("c");
  std::vector<std::string> row_ptr;
  for (size_t x = 0; x < g.accesses.size(); ++x) {
    std::string off = q.op("mul i64 %o, " + i64(strides[x].row));
    row_ptr.push_back(q.op("getelementptr " + access_type(g.accesses[x]) + ", ptr %p" + i64(int64_t(x)) + ", i64 " + off));
  }
  std::vector<std::string> parts;
  for (int64_t c = 0; c < copies; ++c) {
    IrText body(copies == 1 ? std::string("v") : "v" + std::to_string(c) + "_");
    ExprEnv env;
    for (size_t x = 0; x < g.accesses.size(); ++x)
      env.access_ptr.push_back(c == 0 ? row_ptr[x]
                                      : head.op("getelementptr " + access_type(g.accesses[x]) + ", ptr " + row_ptr[x] +
                                                ", i64 " + i64(c * width * strides[x].col)));
    // Every copy indexes its accesses by %u from pointers c * width columns on; the tile and
    // the sink by the column itself.
    env.index = "%u";
    std::string col = c == 0 ? std::string("%u") : body.op("add nuw nsw i64 %u, " + i64(c * width));
    std::string ti = body.op("add i64 " + body.op("mul i64 %o, " + i64(nr)) + ", " + col);
    std::string tp = body.op("getelementptr inbounds float, ptr %tile, i64 " + ti);
    env.acc = body.op("load float, ptr " + tp + ", align 4");
    std::vector<std::string> values = emit_expr(g, env, hoisted, body);
    emit_stores(g, env, values, body);
    if (sink_row_stride) {
      const std::string stride = sink_row_stride < 0 ? std::string("%sinkstride") : i64(sink_row_stride);
      std::string so = body.op("add i64 " + body.op("mul i64 %o, " + stride) + ", " + col);
      std::string sp = body.op("getelementptr inbounds float, ptr %sink, i64 " + so);
      body.line("store float " + (values.empty() ? env.acc : values.back()) + ", ptr " + sp + ", align 4");
    }
    parts.push_back(body.text());
  }
  const std::string trip = copies == 1 ? std::string("%cols") : i64(width);
  os << q.text() << head.text() << hoisted.text() << "  br label %inner\ninner:\n  %u = phi i64 [ 0, %outer ], [ %u.next, %inner ]\n"
     << zip_lines(parts) << "  %u.next = add nuw nsw i64 %u, 1\n  %udone = icmp eq i64 %u.next, " << trip << "\n"
     << "  br i1 %udone, label %outer.end, label %inner"
     << (copies > 1 ? ", !llvm.loop !" + std::to_string(loop_id) : std::string()) << "\nouter.end:\n"
     << "  %o.next = add nuw nsw i64 %o, 1\n  %odone = icmp eq i64 %o.next, %rows\n"
     << "  br i1 %odone, label %exit, label %outer"
     << (copies > 1 ? ", !llvm.loop !" + std::to_string(loop_id + 3) : std::string()) << "\nexit:\n  ret void\n}\n";
  // The loop over rows is never vectorized: once the columns' loop is unrolled, a tile of
  // many rows (AMX's 32) was vectorized across them, each vector a gather of one column of
  // 16 rows and a scatter to the output (MatMul + bias in bf16 128 x 768 x 3072 on a Xeon,
  // one thread: 3.2 ms, against 1.2 ms with GELU, whose rows stayed scalar).
  if (copies > 1)
    os << "!" << loop_id << " = distinct !{!" << loop_id << ", !" << loop_id + 1 << ", !" << loop_id + 2 << "}\n!"
       << loop_id + 1 << " = !{!\"llvm.loop.vectorize.width\", i32 " << width << "}\n!" << loop_id + 2
       << " = !{!\"llvm.loop.vectorize.enable\", i1 true}\n!" << loop_id + 3 << " = distinct !{!" << loop_id + 3
       << ", !" << loop_id + 4 << "}\n!" << loop_id + 4 << " = !{!\"llvm.loop.vectorize.enable\", i1 false}\n";
  return os.str();
}

bool tile_fits(int64_t vector_floats, int64_t mr, int64_t nv) {
  const int64_t registers = vector_floats >= 16 ? 32 : 16;
  const int64_t budget = vector_floats >= 16 ? 24 : 12, max_mr = vector_floats >= 16 ? 14 : 8;
  // A k step holds the accumulators, the step's NV vectors of B and one broadcast at once:
  // AVX2's 3 x 4 (17) spilled an accumulator to the stack on every step.
  return mr >= 1 && nv >= 1 && nv <= 4 && mr <= max_mr && mr * nv <= budget && mr * nv + nv + 1 <= registers;
}

std::vector<TileShape> ranked_tiles(int64_t vector_floats, int64_t rows,
                                    const std::function<int64_t(int64_t nr)>& panels, int64_t fixed_nv,
                                    double within) {
  struct Ranked {
    double cost;
    TileShape t;
  };
  std::vector<Ranked> all;
  for (int64_t nv = fixed_nv > 0 ? fixed_nv : 1; nv <= (fixed_nv > 0 ? fixed_nv : 4); ++nv)
    for (int64_t mr = 1; tile_fits(vector_floats, mr, nv); ++mr) {
      const int64_t nr = nv * vector_floats;
      const double cost = double((rows + mr - 1) / mr) * double(panels(nr)) * (double(mr * nv) + 1.5);
      all.push_back({cost, TileShape{vector_floats, mr, nv, nr}});
    }
  // Stable: among equal costs and sizes, the order of the loops (fewer vectors first).
  std::stable_sort(all.begin(), all.end(), [](const Ranked& a, const Ranked& b) {
    if (a.cost != b.cost) return a.cost < b.cost;
    return a.t.mr * a.t.nv > b.t.mr * b.t.nv;
  });
  std::vector<TileShape> out;
  out.reserve(all.size());
  for (const Ranked& r : all)
    if (within <= 0 || r.cost <= within * all.front().cost) out.push_back(r.t);
  return out;
}

void choose_tile(int64_t vector_floats, int64_t rows, const std::function<int64_t(int64_t nr)>& panels, TileShape* t,
                 int64_t fixed_nv) {
  *t = ranked_tiles(vector_floats, rows, panels, fixed_nv).front();
}

std::string fma_declarations(int64_t vl) {
  const std::string vt = vec_type(vl);
  return "declare " + vt + " @llvm.fma.v" + i64(vl) + "f32(" + vt + ", " + vt + ", " + vt + ")\n" + "declare " + vt +
         " @llvm.masked.load.v" + i64(vl) + "f32.p0(ptr, i32, <" + i64(vl) + " x i1>, " + vt + ")\n" +
         "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)\n" +
         (vl == 16 ? "declare <16 x float> @llvm.x86.avx512bf16.dpbf16ps.512(<16 x float>, <32 x bfloat>, <32 x bfloat>)\n" : "");
}

}  // namespace fusor::llvm_ir
