#!/usr/bin/env bash
# GPU CI: the test suite at GPU sizes on every implementation that runs on this machine (the
# project kernel, torch SDPA's math, flash, efficient and cuDNN backends, FlexAttention). Each
# implementation's property suite runs in a pytest process of its own, so that a peer which
# faults with a sticky CUDA error cannot poison the others' results. Uses the torch and
# triton already installed and installs flashcheck itself without touching them.
# Extra arguments go to every pytest call (e.g. -n 4). Results: $FLASHCHECK_GPU_OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-build-isolation --no-deps -e . || exit 2
export FLASHCHECK_HYPOTHESIS_PROFILE="${FLASHCHECK_HYPOTHESIS_PROFILE:-gpu}"
out="${FLASHCHECK_GPU_OUT:-.flashcheck/gpu}"
mkdir -p "$out"
status=0
python3 -m pytest -q -rfExX --ignore=tests/test_properties.py --junitxml="$out/unit.xml" "$@" || status=1
for impl in ${FLASHCHECK_GPU_IMPLS:-flash sdpa-math sdpa-flash sdpa-efficient sdpa-cudnn flex}; do
    echo "== property suite on $impl"
    profile="$FLASHCHECK_HYPOTHESIS_PROFILE"
    # Compiled FlexAttention compiles anew for every shape (5-60 s each): a few cases only.
    [ "$impl" = flex ] && profile=smoke
    FLASHCHECK_IMPLS="$impl" FLASHCHECK_RATIO_LOG="$out/ratios.jsonl" FLASHCHECK_HYPOTHESIS_PROFILE="$profile" \
        python3 -m pytest -q -rfExX tests/test_properties.py --junitxml="$out/$impl.xml" "$@" || status=1
done
exit $status
