#!/usr/bin/env bash
# One call on the lent GPU (see RESULTS.md): environment, then precompile + check + autotune +
# benchmark (kernels_gpu.bench), then the ncu traffic measurement (kernels_gpu.traffic).
# Everything lands under $OUT (log.txt, bench.json/.md, traffic*.json/.md, ncu_traffic.csv).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-device_out}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  ncu --version | tail -1
} 2>&1 | tee -a "$LOG"
timeout "${BENCH_TIMEOUT:-420}" python3 -m kernels_gpu.bench ${BENCH_ARGS:---precompile --tune --continue-on-fail} --out "$OUT" 2>&1 | tee -a "$LOG"
if [ "${SKIP_TRAFFIC:-0}" != 1 ]; then
  timeout "${TRAFFIC_TIMEOUT:-150}" python3 -m kernels_gpu.traffic --profile --configs "$OUT/bench.json" --out "$OUT" 2>&1 | tee -a "$LOG"
fi
date -u | tee -a "$LOG"
