"""The kernel studies, one runner: each times one kernel's candidate configs (or one pass's
variants) at a grid of points beside the `tl` path, SDPA-flash and cuDNN, through the shared
harness (`bench/study.py`: medians of do_bench, failures recorded, rows saved after each point).

    python -m kernels_gpu.bench.studies NAME [the study's options; NAME --help lists them]

NAME: hopper (the Gluon forwards; --ws the warp-specialised schedules, --causal), hopper_bwd
(the Gluon dK/dV and dQ), hopper_bwd_ws (the warp-specialised dK/dV and its fused dQ; --public
through the public path), d192 (the chunked d 192 backward's candidates and launches), d256
(the large-head-dim `tl` backward variants), gqa (the grouped-query backward variants).
"""
from __future__ import annotations

import importlib
import sys

__all__ = ["STUDIES", "main"]

# study name -> its module in kernels_gpu.bench (each defines main(argv) -> exit status)
STUDIES = {"hopper": "hopper", "hopper_bwd": "hopper_bwd", "hopper_bwd_ws": "hopper_bwd_ws",
           "d192": "d192", "d256": "d256", "gqa": "gqa"}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in STUDIES:
        print(__doc__.strip(), file=sys.stderr)
        if args and args[0] not in ("-h", "--help"):
            print(f"error: unknown study {args[0]!r}; one of {', '.join(STUDIES)}",
                  file=sys.stderr)
            return 2
        return 0 if args else 2
    module = importlib.import_module(f"{__package__}.{STUDIES[args[0]]}")
    return int(module.main(args[1:]))


if __name__ == "__main__":
    sys.exit(main())
