#pragma once
// Static configuration of the shifted-plane kernel (shifted_kernel.cuh): the GEMM transposed,
// M = 64 output channels (A = the weights), N = 2 output rows x kW positions (B = the input
// plane itself), both read by wgmma from shared memory in a swizzled K-major layout whose
// row is one position's 16 channels (64 bytes of TF32 in the 64-byte swizzle, 32 bytes of
// 16-bit operands in the 32-byte one), so that tap (kp, kq) is the plane at a start
// kp * kW + kq rows further on.
#include <type_traits>

#include <cute/tensor.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

namespace fusedconv::fused::hopper {

template <class Element_, class Op_, int kW_>
struct ShiftedConfig {
  using Element = Element_;                               // x, weight, bias and y element type
  using Op = Op_;                                         // wgmma operand type
  static constexpr int kW = kW_;                          // ring row pitch in positions (q_in <= kW)
  static constexpr int kCin = 16;                         // channels: one swizzle row per position
  static constexpr int kRowBytes = kCin * int(sizeof(Op));  // 64 (TF32) or 32 bytes
  static constexpr int kE = 16 / int(sizeof(Op));         // channels per 16-byte chunk
  static constexpr int kChunks = kCin / kE;               // chunks per row
  static constexpr int kKStep = 32 / int(sizeof(Op));     // wgmma K: 8 (TF32) or 16
  static constexpr int kKSteps = kCin / kKStep;           // wgmmas per tap
  static constexpr int kM = 64;                           // output channels (GEMM M; C_out <= 64)
  static constexpr int kRows = 2;                         // output rows per work item
  static constexpr int kN = kRows * kW;                   // positions per item (GEMM N)
  static constexpr int kInRows = kRows + 2;               // input rows an item reads (k_p = 3)
  static constexpr int kPositions = kInRows * kW;         // positions a slot holds
  static constexpr int kSlack = 8;                        // positions past the slot that shifted taps read
  static constexpr int kSlotElems = (kPositions + kSlack) * kCin;
  static constexpr int kSlotBytes = kSlotElems * int(sizeof(Op));
  static constexpr int kSlots = 3;                        // the k_r = 3 planes of one output plane
  static constexpr int kTaps = 27;
  static constexpr int kTapElems = kM * kCin;             // one tap's (64,16) weights
  static constexpr int kTapBytes = kTapElems * int(sizeof(Op));
  static constexpr int kWeightBytes = kTaps * kTapBytes;
  static constexpr int kWarpgroups = 2, kThreads = 128 * kWarpgroups;
  static constexpr int kRingBytes = kSlots * kSlotBytes;    // one warpgroup's ring
  static constexpr int kLdC = kN + 8;                       // epilogue tile pitch: 2 wavefronts per float2 store
  static constexpr int kTileBytes = 64 * kLdC * 4;          // the (64, N) float epilogue tile, over slots 1, 2
  // Slot 0, then slots 1, 2 or the tile: slot 0 takes the next item's first plane during the epilogue.
  static constexpr int kWgBytes = kSlotBytes + (2 * kSlotBytes > kTileBytes ? 2 * kSlotBytes : kTileBytes);
  static constexpr int kBarrierOffset = kWeightBytes + kWarpgroups * kWgBytes;  // the weights' bulk copy's mbarrier
  static constexpr int kSmemBytes = kBarrierOffset + 16;
  // The weights' prologue (shifted_weights.cuh) stages (output, input channel) rows of 27 taps,
  // as they lie in global memory (Element), in the warpgroups' space, in as few passes of a
  // power-of-two number of rows as fit it, and at least one pass per CTA of a cluster: the
  // cluster's CTAs share the passes and each writes its rows into every CTA's tiles, so L2
  // serves the weights once per cluster, not per CTA.
  static constexpr int kClusterCtas = 2;
  static constexpr int kWeightRows = kM * kCin;
  static constexpr int kFitPasses = kWeightRows * kTaps * int(sizeof(Element)) <= kWarpgroups * kWgBytes ? 1
                                    : kWeightRows * kTaps * int(sizeof(Element)) <= 2 * kWarpgroups * kWgBytes ? 2 : 4;
  static constexpr int kWeightPasses = kFitPasses > kClusterCtas ? kFitPasses : kClusterCtas;
  static_assert(kWeightPasses % kClusterCtas == 0, "each CTA of a cluster takes as many passes");
  static constexpr int kPassRows = kWeightRows / kWeightPasses;
  static_assert(kPassRows * kTaps * int(sizeof(Element)) <= kWarpgroups * kWgBytes, "a pass's rows fit the staging space");
  static constexpr int kUnits = kPositions * kChunks;       // (position, 16-byte chunk) units per plane
  static constexpr int kUnitsPerThread = kUnits / 128;
  static_assert(kUnits % 128 == 0 && kN % 8 == 0 && kN <= 256, "kW: a multiple of 8, at most 128");
  static_assert(kSlotBytes % (8 * kRowBytes) == 0 && kTapBytes % (8 * kRowBytes) == 0 &&
                    kWgBytes % (8 * kRowBytes) == 0 && kWeightBytes % (8 * kRowBytes) == 0,
                "slots and taps start on the swizzle pattern's boundary (8 rows)");

  using MmaOp = decltype(cute::SM90::GMMA::ss_op_selector<Op, Op, float, cute::Shape<cute::_64, cute::Int<kN>, cute::Int<kKStep>>,
                                                          cute::GMMA::Major::K, cute::GMMA::Major::K>());
  using Atom = std::conditional_t<sizeof(Op) == 4, cute::GMMA::Layout_K_SW64_Atom<Op>, cute::GMMA::Layout_K_SW32_Atom<Op>>;
  using SmemLayoutA = decltype(cute::tile_to_shape(Atom{}, cute::Shape<cute::_64, cute::_16>{}));         // one tap
  using SmemLayoutB = decltype(cute::tile_to_shape(Atom{}, cute::Shape<cute::Int<kN>, cute::_16>{}));  // one tap's window

  // Element offset of (row, channel) in a swizzled block: the 16-byte chunk index XOR the byte
  // address bits from 7 up (Swizzle<log2 kChunks, 4, 3>, absolute: slots and taps start on
  // the pattern's boundary).
  __host__ __device__ static constexpr int swizzled(int row, int channel) {
    return row * kCin + (((channel / kE) ^ ((row * kRowBytes >> 7) & (kChunks - 1))) * kE) + channel % kE;
  }
};

// Work of one launch: items = batch x output row pairs.
struct ShiftedGeometry {
  int pairs, items;
};

}  // namespace fusedconv::fused::hopper
