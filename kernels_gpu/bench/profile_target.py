"""The launches `device/profile.sh` profiles with ncu (where the time goes):
one case per call, warmed up, then run once more for ncu to catch (`--launch-skip` skips the
warm-up launches).

    python -m kernels_gpu.bench.profile_target CASE      # CASE in CASES

fp16, H 32, B 4, N 4096: the Gluon Hopper forward and the `tl` forward at d 128 (non-causal),
the d 256 backward (dV apart: the dV and dK launches) causal and not, and the warp-specialised
Gluon forward at d 128 in each schedule (`ws_<schedule>_d128`, block_n 128, 2 stages), and the
d 128 non-causal backward with its dK/dV on the Gluon kernel or on the `tl` one (TUNED), the
warp-specialised Gluon dK/dV (`ws_dkdv_d128`, M64, 2 stages, OVERLAP 1) and the same with dQ
fused in by atomics (`ws_fused_d128`).
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import torch

CASES = ("gluon_fwd_d128", "tl_fwd_d128", "bwd_d256_causal", "bwd_d256_full",
         "ws_ws_d128", "ws_lag_d128", "ws_pingpong_d128", "gluon_dkdv_d128", "tl_dkdv_d128",
         "ws_dkdv_d128", "ws_fused_d128")
WARMUP = 2  # runs before the profiled one


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in CASES:
        print(f"usage: python -m kernels_gpu.bench.profile_target {{{','.join(CASES)}}}",
              file=sys.stderr)
        return 2
    from ..host import flash_attn as fa
    from ..host.configs import KernelConfig
    from ..host.hopper import attention_forward_hopper, attention_forward_ws

    case = argv[0]
    d = 128 if "d128" in case else 256
    torch.manual_seed(0)
    q, k, v, do = (torch.randn(4, 32, 4096, d, device="cuda", dtype=torch.float16)
                   for _ in range(4))
    run: Callable[[], object]  # the launch the profiler captures
    if case == "gluon_fwd_d128":
        run = lambda: attention_forward_hopper(q, k, v, block_m=128, block_n=64,  # noqa: E731
                                               num_warps=8)
    elif case in ("ws_dkdv_d128", "ws_fused_d128"):
        from ..host import hopper_bwd_ws as wsb
        from ..host import launch as L
        o, lse = fa.flash_attention_forward(q, k, v, False)
        delta = torch.empty(q.shape[:3], device="cuda", dtype=torch.float32)
        L.launch_preprocess(L.problem_of(q, k, v, False), o, do, delta)
        fn = wsb.attention_backward_ws_fused if "fused" in case else \
            wsb.attention_backward_dkdv_ws
        run = lambda: fn(q, k, v, do, lse, delta, None, False, 64, 2, 1)  # noqa: E731
    elif case.startswith("ws_"):
        sched = case.split("_")[1]
        run = lambda: attention_forward_ws(q, k, v, block_n=128, schedule=sched)  # noqa: E731
    elif case.endswith("dkdv_d128"):
        from ..host import configs as cfgs
        o, lse = fa.flash_attention_forward(q, k, v, False)
        tl_cfg = cfgs.tuned_config("bwd_dkdv", 128, False, 4096) if case.startswith("tl") else None
        run = lambda: fa.flash_attention_backward(q, k, v, o, lse, do, False,  # noqa: E731
                                                  dkdv_config=tl_cfg)
    elif case == "tl_fwd_d128":
        cfg = KernelConfig.from_short("M128N128w8s3-tma")
        run = lambda: fa.flash_attention_forward(q, k, v, False, config=cfg)  # noqa: E731
    else:
        causal = case.endswith("causal")
        o, lse = fa.flash_attention_forward(q, k, v, causal)
        run = lambda: fa.flash_attention_backward(q, k, v, o, lse, do, causal)  # noqa: E731
    for _ in range(WARMUP + 1):
        run()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
