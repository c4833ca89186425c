#!/usr/bin/env bash
# One call on a Hopper GPU: the stages named in STAGES, in order, each
# with its own time limit. Files land in $OUT/run, packed at the end into $OUT/run.tgz beside
# $OUT/log.txt (the device machine returns at most 8 files; default OUT ./device_out).
#   env        GPU, driver, clocks, versions
#   calibrate  sustained rates for the h200 preset (kernels_gpu.model.calibrate -> calibration.json)
#   tests      the GPU test suite (device_tests.sh -> tests.log, tests.xml)
#   hostprobe  host time per call at d 64 N 1k (kernels_gpu.bench.hostprobe)
#   bench      check + precompile + autotune + timing, BENCH_ARGS (kernels_gpu.bench)
#   predict    the time model beside bench.json (bench --predict --from)
#   memory     seed 003's memory probe (bench --memory)
#   traffic    ncu global-memory traffic (kernels_gpu.model.traffic --profile)
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
TOP=${OUT:-device_out}
OUT="$TOP/run"
mkdir -p "$OUT"
LOG="$TOP/log.txt"
STAGES=${STAGES:-env calibrate tests hostprobe bench predict memory}
for stage in $STAGES; do
  echo "=== $stage $(date -u +%H:%M:%S)" | tee -a "$LOG"
  case $stage in
    env) { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
           python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
         } 2>&1 | tee -a "$LOG" ;;
    calibrate) timeout 120 python3 -m kernels_gpu.model.calibrate --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    tests) OUT="$OUT" bash kernels_gpu/device/tests.sh 2>&1 | tail -40 | tee -a "$LOG" ;;
    hostprobe) timeout 120 python3 -m kernels_gpu.bench.hostprobe --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    bench) timeout "${BENCH_TIMEOUT:-420}" python3 -m kernels_gpu.bench \
             ${BENCH_ARGS:---precompile --tune --continue-on-fail --grid main} --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    predict) python3 -m kernels_gpu.bench --predict --from "$OUT/bench.json" \
               ${CALIBRATION:+--calibration "$CALIBRATION"} --out "$OUT" 2>&1 | tail -60 | tee -a "$LOG" ;;
    memory) timeout "${MEMORY_TIMEOUT:-240}" python3 -m kernels_gpu.bench --memory \
              ${MEMORY_ARGS:-} --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    traffic) timeout "${TRAFFIC_TIMEOUT:-150}" python3 -m kernels_gpu.model.traffic --profile \
               --configs "$OUT/bench.json" --out "$OUT" 2>&1 | tee -a "$LOG" ;;
    *) echo "unknown stage $stage" | tee -a "$LOG" ;;
  esac
done
date -u | tee -a "$LOG"
tar czf "$TOP/run.tgz" -C "$OUT" . && rm -rf "$OUT"
