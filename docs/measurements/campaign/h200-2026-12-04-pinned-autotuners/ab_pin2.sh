#!/usr/bin/env bash
# A/B of pinned autotuners: the previous commit's adapters (.gpu/old) against this one, side by side.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/oldsite ./.gpu/old >/dev/null 2>&1 || { echo old install failed; exit 1; }
A=/tmp/ab; mkdir -p $A/new $A/old
( cd .gpu/old && PYTHONPATH=/tmp/oldsite:/tmp/site python3 -c "import flashcheck.peers.flaggems_call as m, inspect; print('old:', m.__file__, 'pin_autotuners' in inspect.getsource(m))" )
PYTHONPATH=/tmp/site python3 -c "import flashcheck.peers.flaggems_call as m, inspect; print('new:', m.__file__, 'pin_autotuners' in inspect.getsource(m))"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $A/device.txt
B=${1:-300}
( PYTHONPATH=/tmp/site bash ci/campaigns.sh $A/new $B "flaggems-sdpa@--workers 4" "flaggems-flash@--workers 4" "flaggems-varlen@--workers 4" ) &
( cd .gpu/old && PYTHONPATH=/tmp/oldsite:/tmp/site bash ci/campaigns.sh $A/old $B "flaggems-flash@--workers 4" ) &
wait
rm -rf $A/*/*-repro/__pycache__
tar -C /tmp -cJf $OUT/ab.tar.xz ab
for f in $A/*/*.log; do echo "== $f"; grep -E "cases in|pace:|counterexample|distinct" $f | head -6; done
ls $A/*/*-repro 2>/dev/null | head -30
