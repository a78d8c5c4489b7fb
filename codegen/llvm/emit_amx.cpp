#include "codegen/llvm/emit_amx.h"

#include <sstream>

#include "codegen/llvm/emit_expr.h"
#include "codegen/llvm/emit_tile.h"
#include "ir/error.h"

namespace fusor::llvm_ir {

// Note [AMX contractions]
// ~~~~~~~~~~~~~~~~~~~~~~~
// On a CPU with AMX-BF16 (Xeon since Sapphire Rapids) whose OS grants the process the tile
// data state (HostBf16::amx_bf16: arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA) on Linux), the
// llvm backend computes the bf16 GEMM forms (Note [bf16 contractions], codegen/precision.h:
// Linear and MatMul layers, batched products of two activations, 1x1 convolutions) with
// tdpbf16ps instead of vdpbf16ps. Eight tile registers of 16 rows x 64 bytes hold, per step
// of 16 pairs of k (32 values):
//   tmm4, tmm5  A: rows 0-15 and 16-31 of the tile, 16 pairs each (tileloadd from the rows
//               the kernel converted to pairs on the stack, rows past m zeros, in the order
//               the tiles load them: fusor_rt_pack_a_bf16_amx puts each step's 16 rows of 16
//               pairs in one contiguous KiB, where the [rows][k/2] layout vdpbf16ps
//               broadcasts from had a tile load touch 16 rows a whole row of pairs apart. The
//               same floats; MatMul + bias 128 x 768 x 2304 in bf16, one thread, on the Xeon
//               model 207: 0.570-0.574 -> 0.537-0.554 ms, the BERT layer at seq 384 10.7-10.9
//               -> 10.4-10.6 ms, `fusor run` medians, old and new binaries alternated);
//   tmm6, tmm7  B: columns 0-15 and 16-31 of a panel, 16 pair rows each (tileloadd with
//               the panel's row stride from the same packed panels, PackKind::Bf16Panels:
//               [k/2][NR] pairs is the layout tdpbf16ps reads, each row a pair of k per
//               column);
//   tmm0-tmm3   C: the 2 x 2 tiles of f32 sums, kept across the steps;
// four tdpbf16ps per step (16 x 16 x 32 multiply-adds each), each A and B tile used twice.
// The tile is 32 x 32 (16 x 32 where m <= 16), so the panel width is fixed at 32 columns for
// every shape and the prepacked weights are shared by them. After the last step the four C
// tiles are stored to the tile array on the stack and the epilogue runs on them as on any
// other tile (Note [Contraction kernels]). Every tile has one shape, so one configuration
// (ldtilecfg) serves every kernel: each call of a kernel loads it at its start and releases
// the tiles (tilerelease) at its end, so a thread's tile state is idle between kernels and
// the OS saves none of it.
// Steps are whole: AMX is taken where k/2 (rounded up) is a multiple of 16 (k = 64, 768,
// 3072, ...); other k keep vdpbf16ps.
// A task converts its rows of A to pairs once and reuses them over its panels; that pass
// costs about what four panels' tile products do, so with panels outer a task takes at
// least 16 panels (512 columns; contraction_tiling), even where fewer than 16 tasks are
// left: the BERT layer at seq 128 in bf16 on a 2-vCPU Xeon (model 207), one thread, `fusor
// run --repeat 60` medians over three rounds: 3.98-4.85 -> 3.51-3.56 ms (two threads
// 1.89-2.37 against 2.05-2.66: within this host's noise).
// The fused attention's products would be vdpbf16ps, which that Xeon runs at half the f32
// FLOP rate, so there bf16 attention is split into its parts (Note [Declined attention],
// jit/plan.cpp; LlvmBackend::splits_bf16_attention) where the head and the key count fill
// whole steps: Q·Kᵀ and P·V become AMX GEMMs, the softmax a row reduction between them. The
// BERT layer at seq 384, one thread: attention 3.93 ms fused in f32 -> 2.94 ms as parts
// (Q·Kᵀ 1.18, softmax 0.93, P·V 0.83), the layer 12.5 -> 11.7 ms; at seq 128 0.48 -> 0.40.
// Measured ceiling of the loop on that core: four tdpbf16ps with their four tile loads per
// step run at 2.5-2.7 TFLOP/s from L1; with B streamed from L3 and A from L2 as here, a C
// model of this kernel's loops reaches 1.1 TFLOP/s (MatMul 128 x 768 x 3072 in 0.51 ms), the
// kernel with its bias epilogue 0.59-0.85 ms. Rounding: the products of two bf16 are exact in f32
// and tdpbf16ps adds them in f32 (denormals flushed), so the error bound is that of Note
// [bf16 contractions]; the order of the sums differs from vdpbf16ps's, so the two paths
// differ by f32 rounding.

std::string emit_amx_microkernel(const std::string& name, int64_t mr, int64_t ksteps, int64_t prefetch_bytes,
                                 bool prefetch_to_l2) {
  FUSOR_ASSERT(mr == kAmxTileRows || mr == 2 * kAmxTileRows, "an AMX tile has 16 or 32 rows, not ", mr);
  FUSOR_ASSERT(ksteps > 0 && ksteps % kAmxStepPairs == 0, "AMX steps are whole: ", ksteps, " pairs");
  const int64_t row_tiles = mr / kAmxTileRows;
  const int64_t a_stride = ksteps * 4, b_stride = kAmxCols * 4;  // bytes between rows
  std::ostringstream os;
  os << "define internal void @" << name << "(ptr noalias %a, ptr noalias %b, ptr noalias %tile) #1 {\nentry:\n";
  for (int64_t c = 0; c < row_tiles * 2; ++c) os << "  call void @llvm.x86.tilezero(i8 " << c << ")\n";
  os << "  br label %step\nstep:\n  %s = phi i64 [ 0, %entry ], [ %s.next, %step ]\n";
  IrText st("s");
  // Step s reads A's pairs [16 s, 16 s + 16) of each row, one contiguous 1 KiB block per 16
  // rows (fusor_rt_pack_a_bf16_amx), and B's pair rows of the same range.
  const std::string ap =
      st.op("getelementptr inbounds i8, ptr %a, i64 " + st.op("mul i64 %s, " + i64(kAmxTileRows * kAmxStepPairs * 4)));
  const std::string bp = st.op("getelementptr inbounds i8, ptr %b, i64 " + st.op("mul i64 %s, " + i64(kAmxStepPairs * b_stride)));
  if (prefetch_bytes > 0)
    for (int64_t line = 0; line < kAmxStepPairs * b_stride; line += 64)
      st.line("call void @llvm.prefetch.p0(ptr " + st.op("getelementptr i8, ptr " + bp + ", i64 " + i64(prefetch_bytes + line)) +
              ", i32 0, i32 " + (prefetch_to_l2 ? "2" : "3") + ", i32 1)");
  for (int64_t r = 0; r < row_tiles; ++r) {
    const std::string at = r == 0 ? ap : st.op("getelementptr inbounds i8, ptr " + ap + ", i64 " + i64(kAmxTileRows * a_stride));
    st.line("call void @llvm.x86.tileloadd64(i8 " + i64(4 + r) + ", ptr " + at + ", i64 " + i64(kAmxStepPairs * 4) + ")");
  }
  st.line("call void @llvm.x86.tileloadd64(i8 6, ptr " + bp + ", i64 " + i64(b_stride) + ")");
  st.line("call void @llvm.x86.tileloadd64(i8 7, ptr " + st.op("getelementptr inbounds i8, ptr " + bp + ", i64 64") + ", i64 " +
          i64(b_stride) + ")");
  for (int64_t r = 0; r < row_tiles; ++r)
    for (int64_t c = 0; c < 2; ++c)
      st.line("call void @llvm.x86.tdpbf16ps(i8 " + i64(2 * r + c) + ", i8 " + i64(4 + r) + ", i8 " + i64(6 + c) + ")");
  os << st.text() << "  %s.next = add nuw nsw i64 %s, 1\n  %more = icmp slt i64 %s.next, " << ksteps / kAmxStepPairs
     << "\n  br i1 %more, label %step, label %store\nstore:\n";
  for (int64_t r = 0; r < row_tiles; ++r)
    for (int64_t c = 0; c < 2; ++c) {
      const int64_t offset = (r * kAmxTileRows * kAmxCols + c * kAmxTileRows) * 4;
      os << "  %c" << r << c << " = getelementptr inbounds i8, ptr %tile, i64 " << offset << "\n"
         << "  call void @llvm.x86.tilestored64(i8 " << 2 * r + c << ", ptr %c" << r << c << ", i64 " << b_stride << ")\n";
    }
  os << "  ret void\n}\n";
  return os.str();
}

std::string amx_tile_config(const std::string& symbol) {
  // Byte 0: palette 1; bytes 16-31: colsb of tiles 0-7 (u16, 64 bytes each); bytes 48-55:
  // rows of tiles 0-7 (16 each); the rest zeros (tiles 8-15 unused).
  unsigned char cfg[64] = {};
  cfg[0] = 1;
  for (int t = 0; t < 8; ++t) {
    cfg[16 + 2 * t] = 64;
    cfg[48 + t] = kAmxTileRows;
  }
  std::ostringstream os;
  os << "@" << symbol << ".amxcfg = private unnamed_addr constant [64 x i8] [";
  for (int i = 0; i < 64; ++i) os << (i ? ", " : "") << "i8 " << int(cfg[i]);
  os << "], align 64\n";
  return os.str();
}

std::string amx_declarations() {
  return "declare void @llvm.x86.ldtilecfg(ptr)\n"
         "declare void @llvm.x86.tilerelease()\n"
         "declare void @llvm.x86.tilezero(i8)\n"
         "declare void @llvm.x86.tileloadd64(i8, ptr, i64)\n"
         "declare void @llvm.x86.tilestored64(i8, ptr, i64)\n"
         "declare void @llvm.x86.tdpbf16ps(i8, i8, i8)\n";
}

}  // namespace fusor::llvm_ir
