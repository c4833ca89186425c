#!/usr/bin/env bash
# One call on the lent GPU: `toym verify-gpu` on CUDA for several shapes (tile simulator vs the
# kernel), then a short re-timing of a few benchmark points with the tuned default configs.
# Everything lands under $OUT (verify.md, bench*.json/md, log.txt).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  for args in "--n 1024 --d 64" "--n 1024 --d 128 --causal" "--n 2048 --d 64 --batch 2 --heads 4 --causal" \
              "--n 1024 --d 64 --pass backward" "--n 1024 --d 128 --causal --pass backward" \
              "--n 1000 --d 64 --causal --pass backward" "--n 1024 --d 64 --dtype bf16 --pass backward" \
              "--n 512 --d 64 --dtype fp32" "--n 1024 --d 64 --block-m 64 --block-n 32 --pass backward"; do
    echo "## toym verify-gpu $args"
    python3 -m toymachine verify-gpu $args -f markdown; echo "exit status $?"
  done
} 2>&1 | tee "$OUT/verify.md"
timeout "${BENCH_TIMEOUT:-200}" python3 -m kernels_gpu.bench --ns 4096,16384 --dims 64,128 --out "$OUT" 2>&1 | tee "$OUT/log.txt"
date -u
