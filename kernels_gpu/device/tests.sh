#!/usr/bin/env bash
# The whole GPU test suite on a CUDA machine (a Hopper GPU): every kernels_gpu test file and
# `toym verify-gpu`'s (tests/test_kernels_gpu*.py, tests/test_verify_gpu*.py), on the GPU
# instead of Triton's interpreter. Prints the pass count last; the log and a JUnit XML land under $OUT (default ./device_out).
#   bash kernels_gpu/device/tests.sh            # PYTEST_ARGS="-x" etc. are passed on
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-device_out}
mkdir -p "$OUT"
python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA GPU here'" || exit 2
WORKERS=${WORKERS:-8}  # pytest-xdist: the kernels compile in parallel
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n $WORKERS"
timeout "${TESTS_TIMEOUT:-420}" python3 -m pytest -q -rs $XDIST -p no:cacheprovider \
  --junitxml="$OUT/tests.xml" ${PYTEST_ARGS:-} \
  tests/test_kernels_gpu*.py tests/test_verify_gpu*.py \
  2>&1 | tee "$OUT/tests.log"
exit "${PIPESTATUS[0]}"
