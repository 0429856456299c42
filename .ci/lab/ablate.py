# Copies the Hopper kernel and config into DIR (argument) with the ablation switches (LAB_*)
# patched in; kernel_lab.cu compiled with -I DIR before -I cpp then times the patched kernel.
# Each switch removes one part of the kernel (results are then wrong, only the time counts).
# Since v33 the TMA kernels run persistent CTAs past one wave (several items each): there
# LAB_NOEPI returns after a CTA's first item and LAB_NOLOOP leaves the next item's TMA loads
# unwaited, so time those two on grids of one wave (or on the v32 code, as session 17 did).
import os
import sys
out = sys.argv[1]
os.makedirs(f'{out}/cuda/hopper', exist_ok=True)
s = open('cpp/cuda/hopper/wgmma_kernel.cuh').read()
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
rep("        gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, t), a);\n",
    "#if !LAB_NOWG\n        gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, t), a);\n#endif\n")
rep("        if constexpr (Cfg::kSplit3x) {  // the cross terms (bf16) first: the small sums; small * small dropped",
    "        if constexpr (Cfg::kSplit3x && !LAB_NOWG) {  // the cross terms (bf16) first")
# LAB_XORDER: "highest" issues a k-step's cross-term wgmmas for every kr first, then its TF32
# ones (the SASS pairs each cross term with the TF32 wgmma of the same accumulator back to back).
rep("#if !LAB_NOWG\n        gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, t), a);\n#endif\n      }\n    }\n",
    "#if !LAB_NOWG\n        if (!(LAB_XORDER && Cfg::kSplit3x)) gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, t), a);\n#endif\n      }\n"
    "#if !LAB_NOWG\n      if constexpr (LAB_XORDER && Cfg::kSplit3x) {\n        tiled_mma.accumulate_ = GMMA::ScaleOut::One;\n"
    "        CUTE_UNROLL\n        for (int kr = 0; kr < KR; ++kr)\n"
    "          gemm(tiled_mma, rA[0](_, _, s), rB(_, _, 0, kr * k_steps + kstep), acc[((u - kr) % kAcc + kAcc) % kAcc]);\n"
    "      }\n#endif\n    }\n")
# LAB_NOSPLIT, LAB_SPLITBATCH and LAB_SPLITPLANES (v55-v57's split pass) went with it in session
# 43; commit ef4722b has them (LAB_SPLITDENSE: commit d526165).
rep("      if (loads_next(i)) ring.load_async(",
    "      if (!LAB_NOLOAD && loads_next(i)) ring.load_async(")
# By TMA, LAB_NOLOAD issues no plane load and waits for none (the ring keeps whatever shared
# memory held): until session 40 it removed only the cp.async ring's loads, so the TMA
# kernels' "no loads" rows had timed the whole kernel.
rep("  auto load_tma_at = [&](int s, int r, int bb, int pp0, int qq0) {  // the ring's thread 0 only\n",
    "  auto load_tma_at = [&](int s, int r, int bb, int pp0, int qq0) {  // the ring's thread 0 only\n"
    "    if (LAB_NOLOAD) return;\n")
rep("  auto wait_tma = [&](int s, int i) {\n", "  auto wait_tma = [&](int s, int i) {\n    if (LAB_NOLOAD) return;\n")
# LAB_AOFF16: the fast path's A byte offsets (< 64 KB) two per register.
rep("  int a_off[kChunk][kValsA];\n",
    "#if LAB_AOFF16\n  uint32_t a_off2[kChunk][(kValsA + 1) / 2] = {};\n"
    "  auto a_off_at = [&](int s, int v) { return int((a_off2[s][v / 2] >> (16 * (v % 2))) & 0xffffu); };\n"
    "#else\n  int a_off[kChunk][kValsA];\n  auto a_off_at = [&](int s, int v) { return a_off[s][v]; };\n#endif\n")
rep("      a_off[s][v] = Cfg::kOneChunk ? a_thread + sKoff[a_k(v, s)] : 0;\n",
    "#if LAB_AOFF16\n      a_off2[s][v / 2] |= uint32_t(Cfg::kOneChunk ? a_thread + sKoff[a_k(v, s)] : 0) << (16 * (v % 2));\n"
    "#else\n      a_off[s][v] = Cfg::kOneChunk ? a_thread + sKoff[a_k(v, s)] : 0;\n#endif\n")
rep("      for (int v = 0; v < kValsA; ++v) off[v] = a_off[s][v] + a_row_bytes(v, s);\n      put_step(rA, s, slot, off);\n",
    "      for (int v = 0; v < kValsA; ++v) off[v] = a_off_at(s, v) + a_row_bytes(v, s);\n"
    "      if (LAB_NOGATHER) {  // offsets as values: the wgmmas still wait on them\n"
    "        for (int q = 0; q < kParts; ++q)\n"
    "          for (int v = 0; v < kValsA; ++v) rA[q](v, 0, s) = ValA(__int_as_float(off[v] + v));\n"
    "      } else {\n        put_step(rA, s, slot, off);\n      }\n")
# LAB_FOLDFIRST: one A buffer (3xTF32 in one chunk) folds right after its step's wait, before
# the gather and the wgmmas, instead of after them.
rep("""      if constexpr (kABuf == 1) warpgroup_wait<0>();  // the buffer's last reader is done
      gather_fast(rA, slot_of(u));""", """      if constexpr (kABuf == 1) warpgroup_wait<0>();  // the buffer's last reader is done
      if (LAB_FOLDFIRST && kABuf == 1 && d_fold >= d_begin) fold(a_fold, d_fold);
      gather_fast(rA, slot_of(u));""")
rep("""      else if constexpr (kABuf == 2) warpgroup_wait<1>();  // plane i - 1 is done
      if (d_fold >= d_begin) fold(a_fold, d_fold);""", """      else if constexpr (kABuf == 2) warpgroup_wait<1>();  // plane i - 1 is done
      if (!(LAB_FOLDFIRST && kABuf == 1))
      if (d_fold >= d_begin) fold(a_fold, d_fold);""")
assert s.count("      if (d_fold >= d_begin) fold(a_fold, d_fold);\n") == 3
s = s.replace("      if (d_fold >= d_begin) fold(a_fold, d_fold);\n",
              "      if (!LAB_NOFOLD && d_fold >= d_begin) fold(a_fold, d_fold);\n")
rep("    ring_sync();  // plane i + kLead is in its slot for every thread\n",
    "    if (!LAB_NOSYNC) ring_sync();\n")
# LAB_NOLOOP: no plane loop; LAB_NOEPI: no softmax or stores (one store kept so that the
# loop is not dead code): with the other switches they split the per-CTA skeleton.
rep("  {  // the plane loop: whole periods of kSlots planes, then the partial last one\n",
    "  if (!LAB_NOLOOP) {  // the plane loop\n")
rep("  // ---- epilogue: softmax over the channels of each position (one quad holds a row) ------\n",
    "#if LAB_NOEPI\n  if (tCrMin(0) == -1.2345f) static_cast<float*>(p.y)[tid] = tCrMin(1);\n  return;\n#endif\n"
    "  // ---- epilogue: softmax over the channels of each position (one quad holds a row) ------\n")
# LAB_TIMELINE: thread 0 of each CTA records its start and end (%globaltimer, before the
# output stores) and its SM in lab_timeline (kernel_lab.cu prints the summary).
rep("  const int tid = threadIdx.x;\n",
    "  const int tid = threadIdx.x;\n#if LAB_TIMELINE\n  const unsigned long long lab_t0 = lab_clock();\n#endif\n")
rep("  if (r_rank != 0) return;\n",
    "#if LAB_TIMELINE\n  if (tid == 0 && blockIdx.x < kLabTimelineCtas) {\n"
    "    unsigned sm;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
    "    lab_timeline[3 * blockIdx.x] = lab_t0;\n    lab_timeline[3 * blockIdx.x + 1] = lab_clock();\n"
    "    lab_timeline[3 * blockIdx.x + 2] = sm;\n  }\n#endif\n  if (r_rank != 0) return;\n")
# LAB_STEPS: thread 0 of the first kLabStepCtas CTAs records the SM clock at five points
# of each one-chunk plane step (start, after the wgmma issue, after the next plane's
# barrier, after the wgmma wait, after the gather) in lab_steps; kernel_lab.cu prints the
# median phase lengths.
rep("      issue(tCrA[u % kABuf], u_c, 0, Int<kChunk>{});\n",
    "      LAB_MARK(0);\n      issue(tCrA[u % kABuf], u_c, 0, Int<kChunk>{});\n      LAB_MARK(1);\n")
rep("      if (more) advance(u_c, i);\n      static_assert",
    "      if (more) advance(u_c, i);\n      LAB_MARK(2);\n      static_assert")
rep("      else warpgroup_wait<1>();                // plane i - 1 is done: its A buffer is free\n",
    "      else warpgroup_wait<1>();                // plane i - 1 is done: its A buffer is free\n      LAB_MARK(3);\n")
rep("      if (more) gather_fast(tCrA[(u + 1) % kABuf], slot_of((u + 1) % kSlots));\n",
    "      if (more) gather_fast(tCrA[(u + 1) % kABuf], slot_of((u + 1) % kSlots));\n      LAB_MARK(4);\n")
# The retiring kernels' step (session 47): start, after the wgmma issue, after the next plane's
# wait and barrier (advance), after the wgmma wait, after the fold and the gather.
rep("      issue(tCrA[0], u_c, 0, Int<kChunk>{});\n      if (more) advance(u_c, i);\n",
    "      LAB_MARK(0);\n      issue(tCrA[0], u_c, 0, Int<kChunk>{});\n      LAB_MARK(1);\n      if (more) advance(u_c, i);\n"
    "      LAB_MARK(2);\n")
rep("      warpgroup_wait<0>();\n      // kAcc = KR here,", "      warpgroup_wait<0>();\n      LAB_MARK(3);\n      // kAcc = KR here,")
# LAB_GATHERFIRST: the retiring step gathers the next plane before it folds the completed one,
# so that the fold's min instructions run while the gather's loads are in flight (session 47:
# a tie for TF32 and bf16, 1-3% lost for 3xTF32).
rep("      if (d_fold + 1 >= d_begin) fold(a_fold, d_fold + 1);\n      if (more) gather_fast(tCrA[0], slot_of((u + 1) % kSlots));\n",
    "      if (!LAB_GATHERFIRST && d_fold + 1 >= d_begin) fold(a_fold, d_fold + 1);\n"
    "      if (more) gather_fast(tCrA[0], slot_of((u + 1) % kSlots));\n"
    "      if (LAB_GATHERFIRST && d_fold + 1 >= d_begin) fold(a_fold, d_fold + 1);\n      LAB_MARK(4);\n")
# LAB_ITEMS: thread 0 of the first kLabStepCtas CTAs records the SM clock at its start and, for
# each of its first kLabItems work items, at the item's start, after its plane loop and at its
# end (before the next item); kernel_lab.cu prints the median prologue, loop, epilogue and gap.
rep("  const int tid = threadIdx.x;\n",
    "  const int tid = threadIdx.x;\n  [[maybe_unused]] int lab_item = 0;\n"
    "  if (LAB_ITEMS && tid == 0 && blockIdx.x < kLabStepCtas) {\n"
    "    unsigned c_; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(c_) :: \"memory\"); lab_items[blockIdx.x][0][3] = c_;\n  }\n")
rep("  for (;;) {  // work items (one unless the grid is persistent)\n",
    "  for (;;) {  // work items (one unless the grid is persistent)\n    LAB_IMARK(0);\n")
rep("    warpgroup_wait<0>();\n    cp_async_wait<0>();\n",
    "    warpgroup_wait<0>();\n    cp_async_wait<0>();\n    LAB_IMARK(1);\n")
rep("    if (!has_next) break;\n", "    LAB_IMARK(2);\n    if (!has_next) break;\n    ++lab_item;\n")
# LAB_SKIPDEAD: a plane's wgmmas into output planes outside [d_begin, d_end) (an item's first
# k_r - 1 and last k_r - 1 planes feed some; 6 of 72 plane-taps at the reference, 6 of 15 at
# B = 1's R split) are skipped by a warp-uniform branch instead of computed and never folded.
rep("  auto issue = [&](FragA* rA, auto u_c, int kstep0, auto k_steps) __attribute__((always_inline)) {\n",
    "  int lab_plane = 0;  // (LAB_SKIPDEAD) the plane step() issues\n"
    "  auto issue = [&](FragA* rA, auto u_c, int kstep0, auto k_steps) __attribute__((always_inline)) {\n")
rep("        Acc& a = acc[((u - kr) % kAcc + kAcc) % kAcc];  // output plane i - kr\n",
    "        Acc& a = acc[((u - kr) % kAcc + kAcc) % kAcc];  // output plane i - kr\n"
    "        if (LAB_SKIPDEAD && (lab_plane - kr < d_begin || lab_plane - kr >= d_end)) continue;\n")
rep("    const int d_fold = i - KR;           // completed by plane i - 1\n",
    "    lab_plane = i;\n    const int d_fold = i - KR;           // completed by plane i - 1\n")
defs = "".join(f"#ifndef LAB_{n}\n#define LAB_{n} 0\n#endif\n" for n in
               ["NOWG", "NOLOAD", "NOGATHER", "NOFOLD", "NOSYNC", "NOWEIGHTS", "TIMELINE", "AOFF16", "NOLOOP", "NOEPI",
                "STEPS", "FOLDFIRST", "XORDER", "ITEMS", "GATHERFIRST", "SKIPDEAD", "SKIPFRONT"])
defs += ("constexpr int kLabStepCtas = 512, kLabSteps = 32;\n"
         "__device__ unsigned lab_steps[kLabStepCtas][kLabSteps][5];\n"
         "#define LAB_MARK(k) do { if (LAB_STEPS && tid == 0 && blockIdx.x < kLabStepCtas && i - i_begin < kLabSteps) {"
         " unsigned c_; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(c_) :: \"memory\");"
         " lab_steps[blockIdx.x][i - i_begin][k] = c_; } } while (0)\n"
         "constexpr int kLabItems = 8;\n__device__ unsigned lab_items[kLabStepCtas][kLabItems][4];\n"
         "#define LAB_IMARK(k) do { if (LAB_ITEMS && tid == 0 && blockIdx.x < kLabStepCtas && lab_item < kLabItems) {"
         " unsigned c_; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(c_) :: \"memory\");"
         " lab_items[blockIdx.x][lab_item][k] = c_; } } while (0)\n")
defs += ("#if LAB_TIMELINE\nconstexpr int kLabTimelineCtas = 1 << 16;\n"
         "__device__ unsigned long long lab_timeline[3 * kLabTimelineCtas];\n"
         "__device__ __forceinline__ unsigned long long lab_clock() {\n"
         "  unsigned long long t;\n  asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n  return t;\n}\n#endif\n")
# LAB_NOWEIGHTS: no weight loads or stores (the B tiles stay as shared memory left them).
rep("    early.load(g, sWoff, 0);\n", "    if (!LAB_NOWEIGHTS) early.load(g, sWoff, 0);\n")
rep("    early.store(g, tid, sB, sBH, 0);\n    for (int t0 = kBatch; t0 < g.b_tiles;",
    "    if (!LAB_NOWEIGHTS) early.store(g, tid, sB, sBH, 0);\n    for (int t0 = kBatch; t0 < (LAB_NOWEIGHTS ? 0 : g.b_tiles);")
rep("    for (int t0 = 0; t0 < g.b_tiles; t0 += kBatch) {",
    "    for (int t0 = 0; t0 < (LAB_NOWEIGHTS ? 0 : g.b_tiles); t0 += kBatch) {")
# LAB_SKIPFRONT: the plane loop's first period (whole) is its own unrolled copy, whose wgmmas
# into output planes before d_begin (kr > u: an item's first k_r - 1 planes) are left out at
# compile time: no branch, so no arrive injected (LAB_SKIPDEAD's C7519), and the last k_r - 1
# planes' dead wgmmas stay. Applied after the other patches (it rewrites their call sites).
rep("  auto issue = [&](FragA* rA, auto u_c, int kstep0, auto k_steps) __attribute__((always_inline)) {\n",
    "  auto issue = [&](FragA* rA, auto u_c, int kstep0, auto k_steps, auto first_c) __attribute__((always_inline)) {\n")
rep("        Acc& a = acc[((u - kr) % kAcc + kAcc) % kAcc];  // output plane i - kr\n",
    "        Acc& a = acc[((u - kr) % kAcc + kAcc) % kAcc];  // output plane i - kr\n"
    "        if (LAB_SKIPFRONT && decltype(first_c)::value && kr > u) continue;  // (compile-time)\n")
assert s.count("u_c, 0, Int<kChunk>{});") == 3 and s.count("g.k_steps);") == 3
s = s.replace("u_c, 0, Int<kChunk>{});", "u_c, 0, Int<kChunk>{}, first_c);")
s = s.replace("g.k_steps);", "g.k_steps, cute::false_type{});")
rep("  auto step = [&](auto u_c, int i, auto tail_c) __attribute__((always_inline)) {\n",
    "  auto step = [&](auto u_c, int i, auto tail_c, auto first_c) __attribute__((always_inline)) {\n")
rep("      for (; i0 + kSlots <= i_end; i0 += kSlots) {\n"
    "        [&]<int... U>(cute::integer_sequence<int, U...>) __attribute__((always_inline)) {\n"
    "          (step(Int<U>{}, i0 + U, cute::false_type{}), ...);\n",
    "      if constexpr (LAB_SKIPFRONT) {\n"
    "        if (i0 + kSlots <= i_end) {\n"
    "          [&]<int... U>(cute::integer_sequence<int, U...>) __attribute__((always_inline)) {\n"
    "            (step(Int<U>{}, i0 + U, cute::false_type{}, cute::true_type{}), ...);\n"
    "          }(cute::make_integer_sequence<int, kSlots>{});\n"
    "          i0 += kSlots;\n"
    "        }\n"
    "      }\n"
    "      for (; i0 + kSlots <= i_end; i0 += kSlots) {\n"
    "        [&]<int... U>(cute::integer_sequence<int, U...>) __attribute__((always_inline)) {\n"
    "          (step(Int<U>{}, i0 + U, cute::false_type{}, cute::false_type{}), ...);\n")
rep("step(Int<U>{}, i0 + U, cute::true_type{}) : void()",
    "step(Int<U>{}, i0 + U, cute::true_type{}, cute::false_type{}) : void()")
s = s.replace("#include <cooperative_groups.h>", defs + "#include <cooperative_groups.h>", 1)
open(f'{out}/cuda/hopper/wgmma_kernel.cuh', 'w').write(s)
c = open('cpp/cuda/hopper/wgmma_config.cuh').read()
def lab_override(switch, old, new):
    """Replaces the declaration `old` (once in the config) by `new` where `switch` is defined."""
    global c
    assert c.count(old) == 1, old
    body = old.rstrip("\n")  # a trailing newline stays after the #endif
    c = c.replace(old, f"#ifdef {switch}\n{new}\n#else\n{body}\n#endif{old[len(body):]}")
def declaration(start):  # the declaration from `start` up to its ';'
    i = c.index(start)
    return c[i:c.index(";", i) + 1]
# LAB_RAWBIG=0 (v56's split with its TF32 big plane, rawbig.runs) was removed once v57 was kept;
# commit d6a3844 has it.
# LAB_GUW (session 47's kGatherUnderWgmma: a retiring kernel with two A buffers gathers plane
# i + 1 before the wgmma wait) lost 8-18% in session 48 and was removed; commit bd7bdd9 has it.
# LAB_MINB: CTAs per SM the registers must allow.
lab_override("LAB_MINB", declaration("  static constexpr int kMinBlocks ="),
             "  static constexpr int kMinBlocks = LAB_MINB;")
# LAB_LEAN3X: "highest"'s lean kernel (retiring, no argmin; with LAB_RETIRE=1, LAB_NOARG=1) at
# any N, not only 32 (at N = 24 it lost to the kept one in v41, beside the split pass).
lab_override("LAB_LEAN3X", declaration("  static constexpr bool kRetire3x ="),
             "  static constexpr bool kRetire3x = kSplit3x_ && !kArgmin_ && kKR_ == 3 && kTma_;")
# LAB_TILEP: output rows per tile of every kernel the lab builds (4: 4 x 16, 2: 2 x 32).
lab_override("LAB_TILEP",
             "  static constexpr int kWgTileP = kTileP_, kTileQ = 64 / kTileP_;  // one warpgroup's rows, columns\n"
             "  static constexpr int kTileP = kTileP_ * kWarpgroups_ / kItemsPerCta;  // a work item's rows\n",
             "  static constexpr int kWgTileP = LAB_TILEP, kTileQ = 64 / LAB_TILEP;\n"
             "  static constexpr int kTileP = LAB_TILEP * kWarpgroups_ / kItemsPerCta;")
# LAB_PITCH: the TMA kernels' footprint row pitch (elements; a TMA box row: 16-byte multiples).
lab_override("LAB_PITCH", declaration("  static constexpr int kRowPitch ="),
             "  static constexpr int kRowPitch = kTma_ ? LAB_PITCH : kTileQ + kMaxKQ - 1;")
# LAB_PREFETCH: planes in flight beyond the one in use (kPrefetch).
lab_override("LAB_PREFETCH", declaration("  static constexpr int kPrefetch ="),
             "  static constexpr int kPrefetch = LAB_PREFETCH;")
# LAB_MAXSPLIT: the largest R split (CTAs per tile and channel group).
lab_override("LAB_MAXSPLIT", "  static constexpr int kMaxSplit = 4;", "  static constexpr int kMaxSplit = LAB_MAXSPLIT;")
# LAB_REBUILDB: 1 rebuilds the B descriptors in every step, 0 holds them (kRebuildB).
lab_override("LAB_REBUILDB", "  static constexpr bool kRebuildB = kSplit3x;",
             "  static constexpr bool kRebuildB = LAB_REBUILDB;")
# LAB_ABUF2: "highest" in one chunk with two A buffers and its wgmmas issued first (as TF32's
# kernel), so that the gather of plane i + 1 runs under plane i's wgmmas.
# LAB_IF16: 16-bit operands' non-retiring one-chunk kernels issue first too (their two A
# buffers exist already; the config keeps gather-first for them).
for a, b in [("  static constexpr int kABuffers = ((kSplit3x && kOneChunk) || kRetireEachPlane) ? 1 : 2;",
              "  static constexpr int kABuffers = ((kSplit3x && kOneChunk && !LAB_ABUF2) || kRetireEachPlane) ? 1 : 2;"),
             ("  static constexpr bool kIssueFirst = kOneChunk && (kRetireEachPlane || (!kSplit3x && sizeof(ValA) == 4));",
              "  static constexpr bool kIssueFirst = kOneChunk && (kRetireEachPlane || ((LAB_ABUF2 || !kSplit3x) && (sizeof(ValA) == 4 || LAB_IF16)));")]:
    assert a in c
    c = c.replace(a, b)
c = c.replace("#include", "#ifndef LAB_ABUF2\n#define LAB_ABUF2 0\n#endif\n#ifndef LAB_IF16\n#define LAB_IF16 0\n#endif\n#include", 1)
open(f'{out}/cuda/hopper/wgmma_config.cuh', 'w').write(c)
