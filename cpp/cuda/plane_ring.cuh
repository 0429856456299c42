#pragma once
// Input planes of one CTA's footprint, streamed along R into a ring of shared-memory slots.
// Slot layout: (C_in + 1 channels, foot_p rows, pitch columns); the extra channel stays zero
// and is where padded k reads. Elements outside x are zero-filled.
// The Hopper kernels of the TMA ring load planes by TMA instead (wgmma_kernel.cuh); they
// use this ring only for its slots and zero channel (init with sources = false).
// 32-bit elements use cp.async (4 B, zero-fill). 16-bit ones use cp.async by 4-byte pairs
// when x's rows allow it (`pairs`: unit stride along Q, even element strides and Q extent, a
// 4-byte aligned base, so that a pair lies wholly inside or wholly outside x); otherwise
// they go through registers, split in fetch (issue the global loads) and store (write the
// slot) so that their latency hides behind the caller's MMAs.
#include <cute/arch/copy_sm80.hpp>
#include <cute/tensor.hpp>
#include <cutlass/fast_math.h>

namespace fusedconv::fused {

template <class Element, int kThreads>
struct PlaneRing {
  static constexpr bool kAsync = sizeof(Element) == 4;
  static constexpr int kStaged = 8;  // 16-bit elements per thread held in registers
  static constexpr int kOwn = 4;     // source offsets per thread kept in registers
  // Elements a slot must hold at least: load_async writes the first kOwn units (elements or
  // pairs) of each thread always.
  static constexpr int kMinSlotElems = kOwn * kThreads * (kAsync ? 1 : 2);

  const Element* xb;     // x at (b, c = 0, r = 0, p0, q0)
  int64_t xs_r;          // element stride along R
  const int64_t* sSrc;   // (C_in * foot_p * pitch) source offsets, -1 outside x
  Element* sPlanes;      // (slots, plane_stride)
  int plane_stride;      // elements per slot
  int elems;             // C_in * foot_p * pitch: loaded elements per plane (even)
  bool pairs;            // 16-bit: copy by 4-byte pairs (set before init)
  // This thread's first kOwn elements i = tid + j * kThreads (pairs: elements 2i, 2i + 1):
  // source offsets (0 outside x, where the copy zero-fills) and bit masks, so that a copy
  // costs no index math.
  int64_t own[kOwn];
  uint32_t own_inside;   // bit j: element (pair) j lies inside x
  uint32_t own_valid;    // bit j: i < elems (pairs: i < elems / 2)
  Element staged[kStaged];

  // Source offsets of the footprint (c, ip, iq), the same for every plane: the index
  // arithmetic runs once per CTA (sources = false: none, planes come by TMA). Zeroes the
  // padding channel of every slot. by_foot_pq divides by foot_p * pitch.
  __device__ void init(int tid, int c_in, int foot_p, int pitch, const cutlass::FastDivmod& by_foot_pq,
                       int p_left, int q_left, int64_t xs_c, int64_t xs_p, int64_t xs_q, int slots,
                       bool sources = true) {
    const int foot_pq = foot_p * pitch;
    auto source = [&](int i) {  // offset of footprint element i in a plane, -1 outside x
      int c, rem;
      by_foot_pq(c, rem, i);
      const int ip = rem / pitch;
      const int iq = rem - ip * pitch;
      const bool inside = ip < p_left && iq < q_left;
      return inside ? c * xs_c + int64_t(ip) * xs_p + int64_t(iq) * xs_q : int64_t(-1);
    };
    own_inside = 0;
    own_valid = 0;
    if (sources) {
      int64_t* src = const_cast<int64_t*>(sSrc);
      for (int i = tid; i < elems; i += kThreads) src[i] = source(i);
      const bool by_pairs = !kAsync && pairs;
      const int units = by_pairs ? elems / 2 : elems;
      CUTE_UNROLL
      for (int j = 0; j < kOwn; ++j) {
        const int i = tid + j * kThreads;
        // (src[i] was written by this thread above; a pair's elements were not all)
        const int64_t off = i >= units ? int64_t(-1) : by_pairs ? source(2 * i) : src[i];
        own[j] = off >= 0 ? off : 0;
        own_inside |= uint32_t(off >= 0) << j;
        own_valid |= uint32_t(i < units) << j;
      }
    }
    for (int s = 0; s < slots; ++s)
      for (int i = tid; i < foot_pq; i += kThreads)
        sPlanes[s * plane_stride + c_in * foot_pq + i] = Element(0.0f);
  }

  // Whether planes go by cp.async (load_async) rather than through registers (fetch, store).
  __device__ bool copies_async() const { return kAsync || pairs; }
  __device__ Element* slot(int s) const { return sPlanes + s * plane_stride; }
  __device__ const Element* plane(int r) const { return xb + int64_t(r) * xs_r; }

  // 32-bit, and 16-bit by pairs: asynchronous copy of the plane at src_plane into dst in
  // 4-byte units (one element or a pair; the caller fences, waits). The first kOwn units of
  // each thread are copied without a branch: past `elems` they zero-fill the zero channel
  // and the slot's padding (kMinSlotElems), which nobody reads while the slot is loading.
  __device__ void load_async(int tid, const Element* src_plane, Element* dst) const {
    constexpr int kUnit = 4 / int(sizeof(Element));  // elements per 4-byte copy
    auto copy = [&](int i, const Element* src, bool inside) {  // unit i: elements kUnit * i..
      cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>::copy(
          *reinterpret_cast<const uint32_t*>(src), *reinterpret_cast<uint32_t*>(dst + kUnit * i), inside);
    };
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) copy(tid + j * kThreads, src_plane + own[j], own_inside & (1u << j));
    for (int i = tid + kOwn * kThreads; i < elems / kUnit; i += kThreads) {
      const int64_t off = sSrc[kUnit * i];
      copy(i, src_plane + (off >= 0 ? off : 0), off >= 0);
    }
  }

  // 16-bit: synchronous copy (prologue only).
  __device__ void load_sync(int tid, const Element* src_plane, Element* dst) const {
    for (int i = tid; i < elems; i += kThreads) {
      const int64_t off = sSrc[i];
      dst[i] = off >= 0 ? src_plane[off] : Element(0.0f);
    }
  }

  // 16-bit: the first kStaged elements of this thread into registers.
  __device__ void fetch(int tid, const Element* src_plane) {
    CUTE_UNROLL
    for (int j = 0; j < kStaged; ++j) {
      if (j < kOwn) {
        if (own_valid & (1u << j))
          staged[j] = (own_inside & (1u << j)) ? src_plane[own[j]] : Element(0.0f);
      } else {
        const int i = tid + j * kThreads;
        if (i < elems) {
          const int64_t off = sSrc[i];
          staged[j] = off >= 0 ? src_plane[off] : Element(0.0f);
        }
      }
    }
  }

  // 16-bit: the staged registers (and any remainder, directly) into dst.
  __device__ void store(int tid, const Element* src_plane, Element* dst) const {
    CUTE_UNROLL
    for (int j = 0; j < kStaged; ++j) {
      const int i = tid + j * kThreads;
      if (i < elems) dst[i] = staged[j];
    }
    for (int i = tid + kStaged * kThreads; i < elems; i += kThreads) {
      const int64_t off = sSrc[i];
      dst[i] = off >= 0 ? src_plane[off] : Element(0.0f);
    }
  }
};

}  // namespace fusedconv::fused
