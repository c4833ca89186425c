#!/usr/bin/env bash
# Where the time goes: ncu on the launches of kernels_gpu/bench/profile_target.py
# (the Gluon and `tl` forwards at d 128, the warp-specialised Gluon forward's schedules, the d 256 backward's dV / dK launches, causal or not;
# the one-partition and warp-specialised Gluon dK/dV at d 128, the latter also with dQ fused in).
# Per launch: duration, SM throughput, tensor-pipe activity, warps active and the warp stall
# reasons (cycles per issued instruction), as ncu's raw metrics in $OUT/ncu/<case>.csv.
#   bash kernels_gpu/device/profile.sh        # on a CUDA machine with ncu (PROFILE_CASES: a subset)
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT/ncu"
chip=$(ncu --list-chips 2>/dev/null | tr ', ' '\n\n' | grep -m1 -E '^gh100$' || echo gh100)
ncu --query-metrics --chip "$chip" > "$OUT/ncu/metrics.txt" 2>&1
base=$(awk '{print $1}' "$OUT/ncu/metrics.txt")
pick() { echo "$base" | grep -E "$1" | sed "s/\$/$2/" | paste -sd, -; }
M="gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
M="$M,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread"
T=$(pick '^sm__pipe_tensor_op_(hmma|gmma)_cycles_active$|^sm__inst_executed_pipe_tensor_op_(hmma|gmma)$' '.avg.pct_of_peak_sustained_active')
S=$(pick '^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active$' '.ratio')
M="$M${T:+,$T}${S:+,$S}"
echo "metrics: $M" > "$OUT/ncu/used_metrics.txt"
prof() {  # case, kernel regex, launches to skip, launches to profile
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --metrics "$M" --kernel-name "regex:$2" \
    --launch-skip "$3" --launch-count "$4" --csv --page raw \
    python3 -m kernels_gpu.bench.profile_target "$1" > "$OUT/ncu/$1.csv" 2> "$OUT/ncu/$1.err"
  echo "$1: exit $?, $(grep -c '^"' "$OUT/ncu/$1.csv") csv lines"
}
for case in ${PROFILE_CASES:-gluon_fwd_d128 tl_fwd_d128 bwd_d256_causal bwd_d256_full}; do
  case $case in
    gluon_fwd_d128) prof "$case" '_attn_fwd_hopper' 2 1 ;;
    tl_fwd_d128) prof "$case" '^_attn_fwd$' 2 1 ;;
    ws_dkdv_d128|ws_fused_d128) prof "$case" '_attn_bwd_dkdv_ws' 2 1 ;;
    ws_*) prof "$case" '_attn_fwd_ws' 2 1 ;;
    gluon_dkdv_d128) prof "$case" '_attn_bwd_dkdv_hopper' 2 1 ;;
    tl_dkdv_d128) prof "$case" '^_attn_bwd_dkdv$' 2 1 ;;
    bwd_d256_*) prof "$case" '_attn_bwd_dkdv' 4 2 ;;  # 2 warm-up backwards x (dV, dK), then the pair
    *) echo "unknown case $case" ;;
  esac
done
rm -f "$OUT/ncu/metrics.txt"
tar czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$OUT/ncu"  # the device machine returns few files
