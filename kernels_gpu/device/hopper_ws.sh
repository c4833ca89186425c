#!/usr/bin/env bash
# The warp-specialised Gluon forward on a Hopper GPU in one call.
# Stages (STAGES="tests bench traffic profile" by default):
#   tests    its GPU tests (tests/test_kernels_gpu_hopper.py)
#   bench    python -m kernels_gpu.bench.studies hopper --ws, non-causal and causal (d 64/128, N 1k/4k/16k)
#   bwd      python -m kernels_gpu.bench.studies hopper_bwd (the Gluon dK/dV beside `tl`, flash, cuDNN)
#   studies  the shared study harness re-checked: bench.gqa and bench.d256 on one point each
#   frontier the frontier grid's d 128 MHA points through the public path (the dispatch)
#   traffic  ncu traffic of the split dK/dV (GQA) and dV-apart (d 256) launches vs the model
#   profile  ncu (tensor pipe, stalls) of the schedules at d 128, beside the one-partition kernel
# Everything lands in $OUT (default ./device_out) as few files.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
LOG="$OUT/hopper_ws.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee -a "$LOG"
for stage in ${STAGES:-tests bench traffic profile}; do
  echo "== $stage $(date -u +%T)" | tee -a "$LOG"
  case $stage in
    tests) timeout "${TESTS_TIMEOUT:-200}" python3 -m pytest -q -p no:cacheprovider -n 8 --timeout 90 \
             tests/test_kernels_gpu_hopper.py ${PYTEST_ARGS:-} 2>&1 | tail -15 | tee -a "$LOG" ;;
    bench) for c in "" --causal; do
             timeout "${BENCH_TIMEOUT:-200}" python3 -m kernels_gpu.bench.studies hopper --ws $c \
               --ns "${NS:-1024,4096,16384}" --out "$OUT" 2>&1 | tee -a "$LOG"
           done ;;
    bwd) timeout "${BWD_TIMEOUT:-200}" python3 -m kernels_gpu.bench.studies hopper_bwd \
           --ns "${NS:-1024,4096,16384}" --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    studies) timeout 150 python3 -m kernels_gpu.bench.studies gqa --dims 64 --ns 4096 --kvs 8 \
               --repeats 1 --out "$OUT" 2>&1 | tail -3 | tee -a "$LOG"
             timeout 150 python3 -m kernels_gpu.bench.studies d256 --dims 256 --ns 4096 --causal 1 \
               --dkdv M32N128w8s3-tma-dv --dq M128N32w8s3-tma --repeats 1 --out "$OUT" 2>&1 \
               | tail -3 | tee -a "$LOG"
             cat "$OUT/gqa.md" "$OUT/d256.md" 2>/dev/null | tee -a "$LOG" ;;
    frontier) timeout "${FRONTIER_TIMEOUT:-240}" python3 -m kernels_gpu.bench --grid frontier \
                --dims 128 --kv 32 --repeats 3 --skip-check --out "$OUT" 2>&1 | tail -40 | tee -a "$LOG" ;;
    traffic) mkdir -p "$OUT/traffic"
             timeout "${TRAFFIC_TIMEOUT:-150}" python3 -m kernels_gpu.model.traffic --profile \
               --only 256,1024,0 --only 256,1024,1 --only 64,4096,1,4096,8 \
               --only 128,4096,1,4096,4 --out "$OUT/traffic" 2>&1 | tee -a "$LOG"
             tar czf "$OUT/traffic.tgz" -C "$OUT" traffic && rm -rf "$OUT/traffic" ;;
    profile) OUT="$OUT" PROFILE_CASES="${PROFILE_CASES:-gluon_fwd_d128 ws_ws_d128 ws_lag_d128 ws_pingpong_d128}" \
               bash kernels_gpu/device/profile.sh 2>&1 | tee -a "$LOG" ;;
    *) echo "unknown stage $stage" | tee -a "$LOG" ;;
  esac
done
date -u | tee -a "$LOG"
