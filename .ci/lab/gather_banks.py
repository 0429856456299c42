# A bank model of the Hopper kernel's gather (cpp/cuda/hopper/wgmma_kernel.cuh, gather_fast):
# shared-memory wavefronts per LDS, averaged over a one-chunk plane, for a tile, a footprint
# row pitch and a geometry. Each LDS reads one A value per lane (wgmma's register A layout,
# the same as mma.sync's: lane = 4 g + t holds rows g and g + 8 of its warp's 16; TF32 k = t
# and t + 4, 16-bit operands k = 2t, 2t + 1, 2t + 8, 2t + 9) at the ring slot's element
#   c * foot_p * pitch + (kp + row) * pitch + kq + col   (k = (c, kp, kq); padded k: channel C_in)
# and lanes that read distinct words of one bank (word mod 32) take one wavefront each.
#   python3 .ci/lab/gather_banks.py            # the reference geometry, pitches by tile
#   python3 .ci/lab/gather_banks.py 4 3 3      # C_in = 4, k_p = k_q = 3
# Session 23 (BENCHMARKS.md, v42): the 2 x 32 tile's default TMA pitch of 36 floats models at
# 1.9 wavefronts per TF32 LDS and lost 4-17% on the H200; 44 models at 1.0 and won.
import sys

FRAGMENTS = {  # operand -> (k per k-step, per LDS the (row, k) offsets of lane 4g + t)
    "tf32": (8, [lambda g, t, dm=dm, dk=dk: (g + dm, t + dk) for dm, dk in [(0, 0), (8, 0), (0, 4), (8, 4)]]),
    "16-bit": (16, [lambda g, t, dm=dm, dk=dk: (g + dm, 2 * t + dk)
                    for dm, dk in [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]]),
}


def wavefronts(operand, elem_bytes, tile_p, pitch, c_in=3, k_p=3, k_q=3):
    tile_q = 64 // tile_p
    foot_p = tile_p + k_p - 1
    bk, lds = FRAGMENTS[operand]
    k_plane = c_in * k_p * k_q
    total = count = 0
    for warp in range(4):
        for step in range(-(-k_plane // bk)):
            for lane_at in lds:
                banks = {}
                for lane in range(32):
                    dm, dk = lane_at(lane // 4, lane % 4)
                    m, k = 16 * warp + dm, step * bk + dk
                    if k < k_plane:
                        c, tap = divmod(k, k_p * k_q)
                        kp, kq = divmod(tap, k_q)
                    else:
                        c, kp, kq = c_in, 0, 0
                    elem = c * foot_p * pitch + (kp + m // tile_q) * pitch + kq + m % tile_q
                    word = elem * elem_bytes // 4
                    banks.setdefault(word % 32, set()).add(word)
                total += max(len(words) for words in banks.values())
                count += 1
    return total / count


if __name__ == "__main__":
    geometry = [int(a) for a in sys.argv[1:4]] or [3, 3, 3]
    print(f"C_in, k_p, k_q = {geometry}: wavefronts per LDS (1.0: conflict-free)")
    for name, operand, elem_bytes, unit in [("TF32 (float32 data)", "tf32", 4, 4),
                                            ("16-bit operands, float32 data (autocast)", "16-bit", 4, 4),
                                            ("16-bit operands, 16-bit data", "16-bit", 2, 8)]:
        for tile_p, lo in [(4, 20), (2, 36)]:
            row = " ".join(f"{pitch}:{wavefronts(operand, elem_bytes, tile_p, pitch, *geometry):.2f}"
                           for pitch in range(-(-lo // unit) * unit, lo + 29, unit))
            print(f"{name}, {tile_p} x {64 // tile_p}, pitch:wavefronts  {row}")
