#!/usr/bin/env bash
# The warp-specialised Gluon dK/dV (kernels/hopper_bwd_ws.py) on a Hopper GPU: its GPU tests
# (a hang or a failure stops here), then its bench beside the one-partition Gluon dK/dV,
# SDPA-flash and cuDNN. Results under $OUT (default ./device_out).
#   bash kernels_gpu/device/hopper_bwd_ws.sh            # BENCH_ARGS="--variants 64/2/1" etc.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n ${WORKERS:-8}"
timeout -k 10 "${TESTS_TIMEOUT:-240}" python3 -m pytest -q -rs -x $XDIST -p no:cacheprovider \
  tests/test_kernels_gpu_hopper_bwd_ws.py ${PYTEST_ARGS:-} > "$OUT/tests_ws_bwd.log" 2>&1
rc=$?
tail -25 "$OUT/tests_ws_bwd.log"
[ "$rc" -eq 0 ] || [ -n "${BENCH_ANYWAY:-}" ] || exit "$rc"
timeout -k 10 "${BENCH_TIMEOUT:-330}" python3 -m kernels_gpu.bench.studies hopper_bwd_ws --out "$OUT" \
  ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_ws_bwd.log"
