#include "codegen/llvm/emit_winograd.h"

#include <sstream>

#include "codegen/index_math.h"
#include "codegen/llvm/emit_expr.h"
#include "codegen/llvm/emit_tile.h"
#include "codegen/winograd.h"
#include "ir/error.h"

namespace fusor {

using namespace llvm_ir;

int64_t winograd_scratch_bytes(int64_t channels, int64_t mr, int64_t nr) {
  return 4 * (16 * channels * nr + 16 * mr * nr + 2 * mr * 2 * nr);
}

std::string emit_winograd_ir(const KernelSpec& spec, const std::string& symbol, const ContractionTiling& t,
                             const WinogradOperands& ops) {
  const ContractionSpec& c = spec.contraction;
  FUSOR_ASSERT(t.winograd && winograd_applies(c), "emit_winograd_ir: not a Winograd convolution");
  const Conv2dParams& p = c.conv;
  const int64_t mr = t.mr, nr = t.nr, vl = t.vl, nv = t.nv, C = p.c;
  const int64_t tiles_x = ceil_div(p.ow, 2), tiles = winograd_tiles(p);
  const ExprGraph& epi = c.epilogue;
  const std::string vt = vec_type(vl), wide = vec_type(2 * vl);
  std::ostringstream os;
  os << spec_comment(spec) << "; " << t.str() << "\n\n";

  // The micro-kernel (one of the 16 GEMMs: U[ξ] rows x V[ξ] panel over the channels) and the
  // epilogue over staged output rows (row stride 2 * nr: two pixels per tile).
  const std::string mk = symbol + ".mk", ep = symbol + ".epi";
  // bf16: U and V as pairs of channels, ceil(C / 2) steps (Note [Winograd convolutions]).
  const bool bf = t.bf16;
  const int64_t ks = bf ? ceil_div(C, 2) : C;
  BRead br;
  br.ks = ks;
  br.step = nr;
  br.bf16 = bf;
  std::vector<TileAccess> epi_strides;
  for (const WinogradOperands::Epi& a : ops.epi) epi_strides.push_back({a.row, a.col});
  os << emit_microkernel(mk, TileShape{vl, mr, nv, nr}, br, mr) << "\n"
     << emit_tile_epilogue(ep, epi, epi_strides, 2 * nr, 0) << "\n";
  os << "@" << symbol << ".geo = private unnamed_addr constant [" << kWgCount << " x i64] [";
  const int64_t geo[kWgCount] = {C, p.h, p.w, p.pad_t, p.pad_l, tiles_x, ops.sc, ops.sy};
  for (int i = 0; i < kWgCount; ++i) os << (i ? ", " : "") << "i64 " << geo[i];
  os << "]\n\n";

  IrText e("e");
  const std::vector<std::string> base = load_buffer_bases(e, spec.buffers.size());
  e.line("%V = alloca float, i64 " + i64(16 * ks * nr) + ", align 64");  // (bf16: pairs, one float each)
  e.line("%Y = alloca float, i64 " + i64(16 * mr * nr) + ", align 64");
  e.line("%O = alloca float, i64 " + i64(2 * mr * 2 * nr) + ", align 64");
  std::string any = e.op("icmp slt i64 %task_begin, %task_end");
  e.line("br i1 " + any + ", label %task, label %done");
  os << "define void @" << symbol << "(ptr %buffers, i64 %task_begin, i64 %task_end) #0 {\nentry:\n" << e.text();

  // Task: (image, panel of tiles, chunk of output-channel tiles).
  IrText tk("t");
  const int64_t per_batch = t.n_chunks * t.m_chunks;
  std::string bflat = tk.op("udiv i64 %t, " + i64(per_batch));
  std::string rem = tk.op("urem i64 %t, " + i64(per_batch));
  std::string panel = tk.op("udiv i64 " + rem + ", " + i64(t.m_chunks));
  std::string mc = tk.op("urem i64 " + rem + ", " + i64(t.m_chunks));
  const std::vector<int64_t> batch_dims{p.n, p.group};
  std::vector<std::string> bidx = split_index(tk, bflat, batch_dims);
  auto batch_ptr = [&](const std::string& type, const std::string& b, int64_t offset, const std::vector<int64_t>& strides) {
    std::string off = i64(offset);
    for (size_t d = 0; d < strides.size(); ++d) {
      if (strides[d] == 0 || batch_dims[d] == 1) continue;
      off = tk.op("add nsw i64 " + off + ", " + tk.op("mul nsw i64 " + bidx[d] + ", " + i64(strides[d])));
    }
    return tk.op("getelementptr " + type + ", ptr " + b + ", i64 " + off);
  };
  std::string image = batch_ptr("float", base[size_t(ops.image)], ops.image_offset, ops.image_batch);
  std::vector<std::string> e_b;
  for (size_t x = 0; x < epi.accesses.size(); ++x) {
    const StridedAccess& a = epi.accesses[x];
    e_b.push_back(batch_ptr(access_type(a), base[size_t(a.buffer)], a.offset, ops.epi[x].batch));
  }
  std::string t0 = tk.op("mul i64 " + panel + ", " + i64(nr));
  std::string left = tk.op("sub i64 " + i64(tiles) + ", " + t0);
  std::string count = tk.op("select i1 " + tk.op("icmp sgt i64 " + left + ", " + i64(nr)) + ", i64 " + i64(nr) +
                            ", i64 " + left);
  const std::string input = bf ? "fusor_rt_winograd_input_bf16" : "fusor_rt_winograd_input";
  tk.line("call void @" + input + "(ptr " + image + ", ptr @" + symbol + ".geo, i64 " + t0 + ", i64 " + count + ", i64 " +
          i64(nr) + ", ptr %V)");
  std::string m_lo = tk.op("mul i64 " + mc + ", " + i64(t.tiles_per_chunk));
  std::string m_end = tk.op("add i64 " + m_lo + ", " + i64(t.tiles_per_chunk));
  std::string m_hi = tk.op("select i1 " + tk.op("icmp sgt i64 " + m_end + ", " + i64(t.m_tiles)) + ", i64 " +
                           i64(t.m_tiles) + ", i64 " + m_end);
  os << "task:\n  %t = phi i64 [ %task_begin, %entry ], [ %t.next, %task.end ]\n" << tk.text() << "  br label %mt\n";

  // Per tile of output channels: the 16 GEMMs into Y[ξ][mr][nr].
  IrText g("g");
  std::string ublk = g.op("getelementptr inbounds float, ptr " + base[size_t(ops.weights)] + ", i64 " +
                          g.op("mul i64 " + g.op("add i64 " + g.op("mul i64 %xi, " + i64(t.m_tiles)) + ", %x") + ", " +
                               i64(ks * mr)));
  std::string call = "call void @" + mk + "(";
  for (int64_t i = 0; i < mr; ++i) call += "ptr " + g.op("getelementptr inbounds float, ptr " + ublk + ", i64 " + i64(i)) + ", ";
  std::string vp = g.op("getelementptr inbounds float, ptr %V, i64 " + g.op("mul i64 %xi, " + i64(ks * nr)));
  std::string yp = g.op("getelementptr inbounds float, ptr %Y, i64 " + g.op("mul i64 %xi, " + i64(mr * nr)));
  g.line(call + "ptr " + vp + ", ptr " + yp + ")");
  os << "mt:\n  %x = phi i64 [ " << m_lo << ", %task ], [ %x.next, %mt.end ]\n  br label %gemm\ngemm:\n"
     << "  %xi = phi i64 [ 0, %mt ], [ %xi.next, %gemm ]\n" << g.text()
     << "  %xi.next = add nuw nsw i64 %xi, 1\n  %ximore = icmp ult i64 %xi.next, 16\n"
     << "  br i1 %ximore, label %gemm, label %otr\n";

  // Output transform, row by row: Aᵀ M A of 16 tiles per vector, the two pixels of each
  // tile row interleaved into the staging rows O[a][row][2 * nr].
  IrText o("o");
  for (int64_t v = 0; v < nv; ++v) {
    std::string m[16];
    for (int xi = 0; xi < 16; ++xi) {
      std::string ptr = o.op("getelementptr inbounds float, ptr %Y, i64 " +
                             o.op("add i64 " + o.op("mul i64 %r, " + i64(nr)) + ", " + i64(xi * mr * nr + v * vl)));
      m[xi] = o.op("load " + vt + ", ptr " + ptr + ", align 4");
    }
    auto add = [&](const std::string& a, const std::string& b) { return o.op("fadd " + vt + " " + a + ", " + b); };
    auto sub = [&](const std::string& a, const std::string& b) { return o.op("fsub " + vt + " " + a + ", " + b); };
    std::string r0[4], r1[4];
    for (int b = 0; b < 4; ++b) {
      r0[b] = add(add(m[b], m[4 + b]), m[8 + b]);
      r1[b] = sub(sub(m[4 + b], m[8 + b]), m[12 + b]);
    }
    const std::string out[2][2] = {{add(add(r0[0], r0[1]), r0[2]), sub(sub(r0[1], r0[2]), r0[3])},
                                   {add(add(r1[0], r1[1]), r1[2]), sub(sub(r1[1], r1[2]), r1[3])}};
    std::string mask = "<";
    for (int64_t l = 0; l < vl; ++l) mask += (l ? ", i32 " : "i32 ") + i64(l) + ", i32 " + i64(vl + l);
    mask += ">";
    for (int a = 0; a < 2; ++a) {
      std::string pair = o.op("shufflevector " + vt + " " + out[a][0] + ", " + vt + " " + out[a][1] + ", <" + i64(2 * vl) +
                              " x i32> " + mask);
      std::string dst = o.op("getelementptr inbounds float, ptr %O, i64 " +
                             o.op("add i64 " + o.op("mul i64 %r, " + i64(2 * nr)) + ", " + i64(a * mr * 2 * nr + 2 * v * vl)));
      o.line("store " + wide + " " + pair + ", ptr " + dst + ", align 4");
    }
  }
  os << "otr:\n  %r = phi i64 [ 0, %gemm ], [ %r.next, %otr ]\n" << o.text()
     << "  %r.next = add nuw nsw i64 %r, 1\n  %rmore = icmp ult i64 %r.next, " << mr
     << "\n  br i1 %rmore, label %otr, label %segs\n";

  // The epilogue, per run of the panel's tiles within one tile row and per pixel row.
  IrText sp("s");
  std::string row0 = sp.op("mul i64 %x, " + i64(mr));
  std::string rows_left = sp.op("sub i64 " + i64(p.m) + ", " + row0);
  std::string rows = sp.op("select i1 " + sp.op("icmp sgt i64 " + rows_left + ", " + i64(mr)) + ", i64 " + i64(mr) +
                           ", i64 " + rows_left);
  IrText sg("q");
  std::string tt = sg.op("add i64 " + t0 + ", %j");
  std::string ty = sg.op("udiv i64 " + tt + ", " + i64(tiles_x));
  std::string tx = sg.op("urem i64 " + tt + ", " + i64(tiles_x));
  std::string in_row = sg.op("sub i64 " + i64(tiles_x) + ", " + tx);
  std::string in_panel = sg.op("sub i64 " + count + ", %j");
  std::string len = sg.op("select i1 " + sg.op("icmp slt i64 " + in_row + ", " + in_panel) + ", i64 " + in_row + ", i64 " +
                          in_panel);
  std::string x0 = sg.op("mul i64 " + tx + ", 2");
  std::string px_left = sg.op("sub i64 " + i64(p.ow) + ", " + x0);
  std::string two_len = sg.op("mul i64 " + len + ", 2");
  std::string cols = sg.op("select i1 " + sg.op("icmp slt i64 " + two_len + ", " + px_left) + ", i64 " + two_len +
                           ", i64 " + px_left);
  std::string y0 = sg.op("mul i64 " + ty + ", 2");
  auto epilogue = [&](IrText& ir, int a) {
    std::string pix = ir.op("add i64 " + ir.op("mul i64 " + ir.op("add i64 " + y0 + ", " + i64(a)) + ", " + i64(p.ow)) +
                            ", " + x0);
    std::string stage = ir.op("getelementptr inbounds float, ptr %O, i64 " +
                              ir.op("add i64 " + ir.op("mul i64 %j, 2") + ", " + i64(a * mr * 2 * nr)));
    std::string s = "call void @" + ep + "(ptr " + stage + ", ";
    for (size_t x = 0; x < epi.accesses.size(); ++x) {
      std::string off = ir.op("add i64 " + ir.op("mul i64 " + row0 + ", " + i64(ops.epi[x].row)) + ", " +
                              ir.op("mul i64 " + pix + ", " + i64(ops.epi[x].col)));
      s += "ptr " + ir.op("getelementptr " + access_type(epi.accesses[x]) + ", ptr " + e_b[x] + ", i64 " + off) + ", ";
    }
    ir.line(s + "i64 " + rows + ", i64 " + cols + ")");
  };
  epilogue(sg, 0);
  std::string second = sg.op("icmp slt i64 " + sg.op("add i64 " + y0 + ", 1") + ", " + i64(p.oh));
  sg.line("br i1 " + second + ", label %seg.row1, label %seg.end");
  IrText s1("u");
  epilogue(s1, 1);
  os << "segs:\n" << sp.text() << "  br label %seg\nseg:\n  %j = phi i64 [ 0, %segs ], [ %j.next, %seg.end ]\n"
     << sg.text() << "seg.row1:\n" << s1.text() << "  br label %seg.end\nseg.end:\n"
     << "  %j.next = add nuw nsw i64 %j, " << len << "\n  %jmore = icmp slt i64 %j.next, " << count
     << "\n  br i1 %jmore, label %seg, label %mt.end\nmt.end:\n"
     << "  %x.next = add nuw nsw i64 %x, 1\n  %xmore = icmp slt i64 %x.next, " << m_hi
     << "\n  br i1 %xmore, label %mt, label %task.end\ntask.end:\n"
     << "  %t.next = add nuw nsw i64 %t, 1\n  %tmore = icmp slt i64 %t.next, %task_end\n"
     << "  br i1 %tmore, label %task, label %done\ndone:\n  ret void\n}\n\n";

  os << kDeclarations << fma_declarations(vl) << "declare void @" << input << "(ptr, ptr, i64, i64, i64, ptr)\n"
     << "\nattributes #0 = { nounwind }\nattributes #1 = { alwaysinline nounwind }\n";
  return os.str();
}

}  // namespace fusor
