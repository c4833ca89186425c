#!/usr/bin/env bash
# The dispatched Gluon kernels' traffic and `toym verify-gpu`
# on a Hopper GPU in one call. Stages (STAGES="traffic verify tests" by default):
#   traffic  ncu traffic of the public path (python -m kernels_gpu.model.traffic --profile
#            --dispatch): fp16, B 4 x H 32, N 4096 — d 64 (the one-partition Gluon forward, `tl`
#            backward), d 128 non-causal (warp-specialised lag forward, Gluon dK/dV, `tl` dQ),
#            d 128 causal (warp-specialised ping-pong forward, Gluon dK/dV and dQ); and the
#            grouped split (d 64, H 32/8, causal: `tl` only) again, now with ncu's local-memory
#            store sectors (register spills); 16 launches
#   verify   `toym verify-gpu` without blocks (the dispatch on): the warp-specialised forward
#            and the Gluon backward, simulator vs kernel
#   tests    tests/test_verify_gpu_dispatch.py (sm_90 only: the dispatched kernels' values)
#   d192     (not in the default list) the chunked d 192 Gluon backward: ncu traffic of the
#            public path at d 192, N 4096, causal or not (fp16, B 4 x H 32: `tl` forward and
#            preprocess, dV, dK, dQ chunked; 10 launches) into gluon192_*, and `toym
#            verify-gpu --d 192 --pass backward` at N 1024 into verify_gluon192.md
# Everything lands in $OUT (default ./device_out): traffic_gluon.{json,md,csv}, the cases
# file, verify_gluon.md and the log.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
LOG="$OUT/traffic_gluon.log"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} 2>&1 | tee -a "$LOG"
for stage in ${STAGES:-traffic verify tests}; do
  echo "== $stage $(date -u +%T)" | tee -a "$LOG"
  case $stage in
    traffic) mkdir -p "$OUT/tg"
             timeout "${TRAFFIC_TIMEOUT:-150}" python3 -m kernels_gpu.model.traffic --profile \
               --dispatch --only 64,4096,0 --only 128,4096,0 --only 128,4096,1 \
               --only 64,4096,1,4096,8 \
               --out "$OUT/tg" 2>&1 | tee -a "$LOG"
             for f in traffic.json traffic.md ncu_traffic.csv traffic_cases.json; do
               [ -f "$OUT/tg/$f" ] && mv "$OUT/tg/$f" "$OUT/gluon_$f"
             done
             rm -rf "$OUT/tg" ;;
    verify) for args in "--n 4096 --d 128 --causal" "--n 1024 --d 128 --causal --pass backward"; do
              echo "## toym verify-gpu $args"
              timeout "${VERIFY_TIMEOUT:-60}" python3 -m toymachine verify-gpu $args -f markdown
              echo "exit status $?"
            done 2>&1 | tee "$OUT/verify_gluon.md" | tee -a "$LOG" ;;
    tests) timeout "${TESTS_TIMEOUT:-90}" python3 -m pytest -q -rs -p no:cacheprovider -x \
             tests/test_verify_gpu_dispatch.py 2>&1 | tail -8 | tee -a "$LOG" ;;
    d192) mkdir -p "$OUT/t192"
          timeout "${TRAFFIC_TIMEOUT:-150}" python3 -m kernels_gpu.model.traffic --profile \
            --dispatch --only 192,4096,0 --only 192,4096,1 --out "$OUT/t192" 2>&1 | tee -a "$LOG"
          for f in traffic.json traffic.md ncu_traffic.csv traffic_cases.json; do
            [ -f "$OUT/t192/$f" ] && mv "$OUT/t192/$f" "$OUT/gluon192_$f"
          done
          rm -rf "$OUT/t192"
          for args in "--n 1024 --d 192 --pass backward" "--n 1024 --d 192 --causal --pass backward"; do
            echo "## toym verify-gpu $args"
            timeout "${VERIFY_TIMEOUT:-60}" python3 -m toymachine verify-gpu $args -f markdown
            echo "exit status $?"
          done 2>&1 | tee "$OUT/verify_gluon192.md" | tee -a "$LOG" ;;
    *) echo "unknown stage $stage" | tee -a "$LOG" ;;
  esac
done
date -u | tee -a "$LOG"
