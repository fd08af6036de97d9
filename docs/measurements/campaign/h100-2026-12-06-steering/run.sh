#!/usr/bin/env bash
# The steering rules of this tree on one H100: flaggems-sdpa and flaggems-flash side by side, 8 workers each.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl >/dev/null 2>&1 || exit 1
export PYTHONPATH=/tmp/site
R=$OUT/k; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
git rev-parse HEAD >> $R/device.txt 2>/dev/null
bash ci/campaigns.sh /tmp/k ${BUDGET:-200} "flaggems-sdpa@--workers 8" "flaggems-flash@--workers 8" > /tmp/k.log 2>&1
echo "exit $?" >> /tmp/k.log
cp /tmp/k/*.json /tmp/k/*.log $R/ 2>/dev/null
grep -E "cases in|known div|pace|unfinished \(|declined by" /tmp/k/*.log | cut -c1-300
