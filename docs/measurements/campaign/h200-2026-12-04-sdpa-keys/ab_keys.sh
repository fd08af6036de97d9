#!/usr/bin/env bash
# On one GPU machine: the finite-mask lead's probes (FlagGems as it tunes itself, and the lead's
# script under every forced forward configuration), beside four flaggems-sdpa campaigns (sdpa_arms.py).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
HERE=$PWD/docs/measurements/campaign/h200-2026-12-04-sdpa-keys
LEAD=$PWD/docs/measurements/campaign/h200-2026-12-04-pinned-autotuners
A=/tmp/ab; mkdir -p $A/lead
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $A/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $A/device.txt
B=${1:-300}
( cd $A/lead && export FLAGGEMS_CACHE_DIR=$A/lead/fg TRITON_CACHE_DIR=$A/lead/triton
  timeout 200 python3 docs/repros/flaggems_sdpa_causal_finite_mask.py > probe.txt 2>&1; echo "exit $?" >> probe.txt
  gunzip -c $LEAD/lead-flaggems_sdpa_causal_finite_mask.py.gz > lead.py
  timeout 60 python3 lead.py > lead.txt 2>&1; echo "exit $?" >> lead.txt
  timeout 200 python3 $LEAD/probe_script.py lead.py > lead-configs.txt 2>&1
  echo "exit $?" >> lead-configs.txt ) &
PYTHONPATH=$HERE:/tmp/site bash ci/campaigns.sh $A $B "flaggems-sdpa@--workers 4" "arm_scale:impl@--workers 4" \
    "arm_ignored:impl@--workers 4" "arm_special:impl@--workers 4"
wait
find $A -name __pycache__ -prune -exec rm -rf {} + ; rm -rf $A/lead/fg $A/lead/triton
tar -C /tmp -cJf $OUT/ab.tar.xz ab
cat $A/device.txt
for f in $A/*.log; do echo "== $f"; grep -E "cases in|pace:|counterexample|distinct|declined" $f | head -8; done
for f in $A/lead/*.txt; do echo "== $f"; tail -25 $f; done
