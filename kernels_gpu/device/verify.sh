#!/usr/bin/env bash
# One call on a Hopper GPU: `toym verify-gpu` on CUDA (tile simulator vs the kernel) for square,
# cross-attention (--nk), grouped-query (--kv-heads) and padded head-dim (--d 80/96) cases,
# forward and backward; the table lands in $OUT/verify.md (default ./device_out).
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  while read -r args; do
    [ -z "$args" ] && continue
    echo "## toym verify-gpu $args"
    python3 -m toymachine verify-gpu $args -f markdown; echo "exit status $?"
  done <<'CASES'
--n 1024 --d 64
--n 1024 --d 128 --causal
--n 1024 --d 64 --pass backward
--n 1000 --d 64 --causal --pass backward
--n 1024 --d 64 --dtype bf16 --pass backward
--n 512 --d 64 --dtype fp32
--n 512 --nk 2048 --d 128 --causal --pass backward
--n 1024 --nk 384 --d 64 --pass backward
--n 1024 --heads 8 --kv-heads 2 --d 128 --causal --pass backward
--n 768 --nk 1024 --heads 4 --kv-heads 1 --d 64 --causal --pass backward
--n 1024 --d 96 --causal --pass backward
--n 1000 --nk 1100 --heads 4 --kv-heads 2 --d 80 --dtype bf16 --causal --pass backward
CASES
} 2>&1 | tee "$OUT/verify.md"
date -u
