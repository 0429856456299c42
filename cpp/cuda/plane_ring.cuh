#pragma once
// Input planes of one CTA's footprint, streamed along R into a ring of shared-memory slots.
// Slot layout: (C_in + 1 channels, foot_p rows, pitch columns); the extra channel stays zero
// and is where padded k reads. Elements outside x are zero-filled.
// 32-bit elements use cp.async (4 B, zero-fill); 16-bit ones go through registers, split in
// fetch (issue the global loads) and store (write the slot) so that their latency hides
// behind the caller's MMAs.
#include <cute/tensor.hpp>

namespace fusedconv::fused {

template <class Element, int kThreads>
struct PlaneRing {
  static constexpr bool kAsync = sizeof(Element) == 4;
  static constexpr int kStaged = 8;  // 16-bit elements per thread held in registers
  static constexpr int kOwn = 4;     // source offsets per thread kept in registers

  const Element* xb;     // x at (b, c = 0, r = 0, p0, q0)
  int64_t xs_r;          // element stride along R
  const int64_t* sSrc;   // (C_in * foot_p * pitch) source offsets, -1 outside x
  Element* sPlanes;      // (slots, plane_stride)
  int plane_stride;      // elements per slot
  int elems;             // C_in * foot_p * pitch: loaded elements per plane
  int64_t own[kOwn];     // sSrc[tid + j * kThreads]: this thread's first sources
  Element staged[kStaged];

  // Source offset of element i = tid + j * kThreads (registers for j < kOwn).
  __device__ int64_t source(int j, int i) const { return j < kOwn ? own[j] : sSrc[i]; }

  // Source offsets of the footprint (c, ip, iq), the same for every plane: the index
  // arithmetic runs once per CTA. Zeroes the padding channel of every slot.
  __device__ void init(int tid, int c_in, int foot_p, int pitch, int p_left, int q_left,
                       int64_t xs_c, int64_t xs_p, int64_t xs_q, int slots) {
    const int foot_pq = foot_p * pitch;
    int64_t* src = const_cast<int64_t*>(sSrc);
    for (int i = tid; i < elems; i += kThreads) {
      const int c = i / foot_pq;
      const int rem = i - c * foot_pq;
      const int ip = rem / pitch;
      const int iq = rem - ip * pitch;
      const bool inside = ip < p_left && iq < q_left;
      src[i] = inside ? c * xs_c + int64_t(ip) * xs_p + int64_t(iq) * xs_q : int64_t(-1);
    }
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      const int i = tid + j * kThreads;
      own[j] = i < elems ? src[i] : int64_t(-1);  // written by this thread above
    }
    for (int s = 0; s < slots; ++s)
      for (int i = tid; i < foot_pq; i += kThreads)
        sPlanes[s * plane_stride + c_in * foot_pq + i] = Element(0.0f);
  }

  __device__ Element* slot(int s) const { return sPlanes + s * plane_stride; }

  // 32-bit: asynchronous copy of plane r into slot s (the caller fences and waits).
  __device__ void load_async(int tid, int r, int s) const {
    const Element* src_plane = xb + int64_t(r) * xs_r;
    Element* dst = slot(s);
    auto copy = [&](int i, int64_t off) {
      const bool inside = off >= 0;
      const Element* src = inside ? src_plane + off : xb;
      cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint32_t>::copy(
          *reinterpret_cast<const uint32_t*>(src), *reinterpret_cast<uint32_t*>(dst + i), inside);
    };
    CUTE_UNROLL
    for (int j = 0; j < kOwn; ++j) {
      const int i = tid + j * kThreads;
      if (i < elems) copy(i, own[j]);
    }
    for (int i = tid + kOwn * kThreads; i < elems; i += kThreads) copy(i, sSrc[i]);
  }

  // 16-bit: synchronous copy (prologue only).
  __device__ void load_sync(int tid, int r, int s) const {
    const Element* src_plane = xb + int64_t(r) * xs_r;
    Element* dst = slot(s);
    for (int i = tid; i < elems; i += kThreads) {
      const int64_t off = sSrc[i];
      dst[i] = off >= 0 ? src_plane[off] : Element(0.0f);
    }
  }

  // 16-bit: the first kStaged elements of this thread into registers.
  __device__ void fetch(int tid, int r) {
    const Element* src_plane = xb + int64_t(r) * xs_r;
    CUTE_UNROLL
    for (int j = 0; j < kStaged; ++j) {
      const int i = tid + j * kThreads;
      if (i < elems) {
        const int64_t off = source(j, i);
        staged[j] = off >= 0 ? src_plane[off] : Element(0.0f);
      }
    }
  }

  // 16-bit: the staged registers (and any remainder, directly) into slot s.
  __device__ void store(int tid, int r, int s) const {
    const Element* src_plane = xb + int64_t(r) * xs_r;
    Element* dst = slot(s);
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
