#!/usr/bin/env bash
# Run 2: the exact arm (the built-in flaggems-sdpa) and the ignored arm, twice each, side by side
# (4 workers each), with the kernels each campaign's Triton cache compiled, counted by name;
# beside them, triage_fatal.sh.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
HERE=$PWD/docs/measurements/campaign/h200-2026-12-04-sdpa-keys
A=/tmp/ab2; mkdir -p $A
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $A/device.txt
B=${1:-300}
bash $HERE/triage_fatal.sh $A/triage &
PYTHONPATH=$HERE:/tmp/site bash ci/campaigns.sh $A $B "flaggems-sdpa@--workers 4" "arm_ignored:impl@--workers 4" \
    "flaggems-sdpa@--workers 4" "arm_ignored:impl@--workers 4"
wait
for d in /tmp/flashcheck-campaign-ab2-*; do
  echo "== $d: compiled kernels by name (Triton cache)"
  find $d/triton -name "*.json" ! -name "__grp__*" -printf "%f\n" 2>/dev/null | sed 's/\.json$//' | sort | uniq -c
done > $A/compiled.txt
find $A -name __pycache__ -prune -exec rm -rf {} +
tar -C /tmp -cJf $OUT/ab2.tar.xz ab2
for f in $A/*.log; do echo "== $f"; grep -E "cases in|pace:|distinct|^counterexample|^fatal" $f | head -8; done
cat $A/compiled.txt
for f in $A/triage/*.txt; do echo "== $f"; grep -v "^autotune pin" $f | tail -6; done
