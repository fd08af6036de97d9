#!/usr/bin/env bash
# A/B of the compile focus: the previous commit's engine (.gpu/old) against this one, side by side.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/oldsite ./.gpu/old >/dev/null 2>&1 || { echo old install failed; exit 1; }
A=/tmp/ab; mkdir -p $A/new $A/old
nvidia-smi --query-gpu=name --format=csv,noheader > $A/device.txt
( PYTHONPATH=/tmp/site bash ci/campaigns.sh $A/new 300 "flaggems-flash@--workers 4" "flash@--workers 4" ) &
( cd .gpu/old && PYTHONPATH=/tmp/oldsite:/tmp/site bash ci/campaigns.sh $A/old 300 "flaggems-flash@--workers 4" "flash@--workers 4" ) &
wait
rm -rf $A/*/*-repro/__pycache__
tar -C /tmp -cJf $OUT/ab.tar.xz ab
for f in $A/*/*.log; do echo "== $f"; grep -E "cases in|pace:|counterexample" $f | head -4; done
