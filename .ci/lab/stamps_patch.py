"""Lab (not shipped): writes copies of the package's shifted-kernel headers with time stamps.

Thread 0 of each CTA (and thread 128, warpgroup 1, at the end) records %globaltimer and clock64
into device arrays at the kernel's steps; shifted_alone.cu built with -I <dir> ahead of -I cpp
and -DH_STAMPS=1 prints them per step over the CTAs (the weights' prologue, the first item,
the end). No printf in the kernel: session 35's printf stamps slowed the kernel to 223 µs.
Usage: python3 .ci/lab/stamps_patch.py <dir> [<src>]   (writes <dir>/cuda/hopper/shifted_{kernel,weights}.cuh from\n<src>/cuda/hopper's copies, an edited variant's, or else the package's)
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2] / "cpp" / "cuda" / "hopper"
STAMP_DEFS = r'''
// ---- lab stamps (stamps_patch.py) ----
#define LAB_STAMPS 10
__device__ unsigned long long lab_stamp_ns[2048][LAB_STAMPS], lab_stamp_clk[2048][LAB_STAMPS];
__device__ __forceinline__ void lab_stamp(int i) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  lab_stamp_ns[blockIdx.x][i] = t;
  lab_stamp_clk[blockIdx.x][i] = clock64();
}
#define LAB_STAMP(i) do { if (threadIdx.x == 0) lab_stamp(i); } while (0)
'''


def patch(text, old, new, count=1):
    assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


def main(out, src=None):
    src = pathlib.Path(src) / "cuda" / "hopper" if src else ROOT
    dst = pathlib.Path(out) / "cuda" / "hopper"
    dst.mkdir(parents=True, exist_ok=True)
    w = (src / "shifted_weights.cuh").read_text()
    w = patch(w, "namespace fusedconv::fused::hopper {\n", "namespace fusedconv::fused::hopper {\n" + STAMP_DEFS)
    w = patch(w, "    if (pass == rank) cute::cluster_wait();",
              "    if (pass == rank) LAB_STAMP(2);\n    if (pass == rank) cute::cluster_wait();\n"
              "    if (pass == rank) LAB_STAMP(3);")
    w = patch(w, "    }\n    __syncthreads();\n  }\n", "    }\n    __syncthreads();\n    LAB_STAMP(4);\n  }\n")
    w = patch(w, "  cute::cluster_sync();  // every CTA's tiles are whole\n",
              "  cute::cluster_sync();  // every CTA's tiles are whole\n  LAB_STAMP(5);\n")
    (dst / "shifted_weights.cuh").write_text(w)
    k = (src / "shifted_kernel.cuh").read_text()
    k = patch(k, "  cluster_arrive_relaxed();", "  LAB_STAMP(0);\n  cluster_arrive_relaxed();")
    at = k.index("\n", k.index("= __syncthreads_or(bias_nonfinite);")) + 1  # the bias check's end, wherever it is
    k = k[:at] + "  LAB_STAMP(1);\n" + k[at:]
    k = patch(k, "    rest_of_ring();\n", "    rest_of_ring();\n    if (item == int(blockIdx.x) * Cfg::kWarpgroups) LAB_STAMP(6);\n")
    k = patch(k, "      for (int n = 0; n < p.c_out; ++n) dst[n * plane_out] = Element(col[n * Cfg::kLdC] * inv);\n    }\n",
              "      for (int n = 0; n < p.c_out; ++n) dst[n * plane_out] = Element(col[n * Cfg::kLdC] * inv);\n    }\n"
              "    if (item == int(blockIdx.x) * Cfg::kWarpgroups) LAB_STAMP(7);\n")
    k = patch(k, "  }\n#endif\n}\n", "  }\n  LAB_STAMP(8);\n  if (threadIdx.x == 128) lab_stamp(9);\n#endif\n}\n")
    (dst / "shifted_kernel.cuh").write_text(k)


if __name__ == "__main__":
    main(*sys.argv[1:3])
