"""kernels_gpu.bench.spills: register spills of a `tl` dK/dV launch read from its sm_90 SASS and
its schedule, against the write gap ncu measured (CPU only; the offline compile itself is run by
`TRITON_INTERPRET=0 python -m kernels_gpu.bench.spills`, kernels_gpu/data/spills_sm90.json)."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels_gpu import KernelConfig  # noqa: E402
from kernels_gpu.bench import spills  # noqa: E402

SASS = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   STL [R1+0x4], R2 ;
        /*0020*/                   STL.64 [R1+0x8], R2 ;
        /*0030*/                   FSEL R4, R4, RZ, P0 ;
        /*0040*/                   FSEL R5, R5, RZ, P0 ;
        /*0050*/                   STL [R1], R4 ;
        /*0060*/              @!P1 BRA 0x30 ;
        /*0070*/                   LDL R4, [R1] ;
        /*0080*/                   STL.128 [R1+0x10], R8 ;
        /*0090*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*00a0*/              @!P2 BRA 0x80 ;
        /*00b0*/                   EXIT ;
        /*00c0*/                   STL [R1+0x20], R0 ;
        /*00d0*/                   BRA 0x70 ;
"""


def test_loops_and_stores_of_a_sass_listing():
    """Backward branches before the last EXIT are loops (the block after it is a retry path);
    an STL inside a loop counts per iteration, 4 / 8 / 16 bytes a thread by its width."""
    found, outside = spills.loops(spills.parse_sass(SASS))
    assert [(lp.start, lp.end, lp.stl_bytes, lp.sel) for lp in found] == [(0x30, 0x60, 4, 2),
                                                                         (0x80, 0xa0, 16, 0)]
    assert outside == 4 + 8
    assert [spills.stl_bytes(t) for t in ("STL [R1], R4", "STL.64 [R1], R2", "LDL R4, [R1]")] \
        == [4, 8, 0]


def test_spill_bytes_of_a_launch_from_its_sass_and_schedule():
    """Bytes = (once-per-program bytes x programs + each loop's bytes x its iterations) x
    threads; the loop with the SELs is the causal mask's."""
    cfg = KernelConfig(64, 128, 4, 3, True)
    out = spills.spill_bytes(SASS, 64, 1024, 2, 2, True, cfg)
    programs, masked, full = spills.iterations(64, 1024, 2, 2, True, cfg)
    assert out["total_bytes"] == 128 * (12 * programs + 4 * masked + 16 * full)
    with pytest.raises(ValueError, match="several query heads"):
        spills.spill_bytes(SASS, 64, 1024, 8, 2, True, cfg)


@pytest.mark.parametrize("n,bm,bn,heads,kv_heads,split", [(4096, 64, 128, 32, 8, 4),
                                                           (1024, 64, 64, 4, 4, 1),
                                                           (512, 32, 128, 4, 2, 2)])
def test_iterations_of_the_causal_dkdv_launch(n, bm, bn, heads, kv_heads, split):
    """Closed form (N_q = N_k, causal): K/V tile j (BLOCK_N rows) streams the Q tiles from
    j*BN/BM on; the first BN/BM of them cross the diagonal."""
    cfg = KernelConfig(bm, bn, 4, 2, True, split=split)
    programs, masked, full = spills.iterations(64, n, heads, kv_heads, True, cfg)
    per_head = [(n - j * bn) // bm for j in range(n // bn)]
    b = spills.BATCH
    assert programs == (n // bn) * b * kv_heads * split
    assert masked == b * heads * (n // bn) * (bn // bm)
    assert masked + full == b * heads * sum(per_head)


def test_the_stored_spill_estimate_is_the_measured_write_gap():
    """data/spills_sm90.json (the offline sm_90 compile's STL bytes a thread) times the
    iterations recomputed from the schedule = the bytes ncu measured beyond the model's writes
    (the grouped split on the H100, whose local-store sectors ncu counted too; the MHA launch
    of the H200 run), within 0.2 %."""
    from kernels_gpu.model import data
    for row in data.load_json("spills_sm90.json"):
        cfg = KernelConfig.from_short(row["config"])
        programs, masked, full = spills.iterations(row["d"], row["n"], row["heads"],
                                                   row["kv_heads"], row["causal"], cfg)
        b = row["spills"]["stl_bytes_thread"]
        total = 32 * cfg.num_warps * (b["once per program"] * programs + b["masked loop"] * masked
                                      + b["full loop"] * full)
        measured = spills.measured_gap(row["gpu"] == "H100" and "traffic_gluon_h100.json"
                                       or "traffic_h200.json", row["d"], row["n"], row["causal"],
                                       row["kv_heads"], row["config"])
        assert abs(total / measured["gap"] - 1) < 2e-3, (row["label"], total, measured)
        if measured["local_st"] is not None:
            assert abs(total / measured["local_st"] - 1) < 2e-3
