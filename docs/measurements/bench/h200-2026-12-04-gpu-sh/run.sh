#!/usr/bin/env bash
# ci/gpu.sh with its defaults on one fresh H200, FlagGems installed from carried wheels, cold caches;
# beside it, the autotune pin's and FlagGems adapter's tests (device-independent, so GPU CI leaves
# them out) run on the GPU without the interpreter.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
R=/tmp/gpush; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
git rev-parse --short HEAD >> $R/device.txt 2>/dev/null
( sleep 20; timeout 240 python3 -m pytest -q -p no:cacheprovider -n 2 tests/test_autotune_pin.py \
    tests/test_peers_flaggems.py > $R/pin-tests.txt 2>&1; echo "exit $?" >> $R/pin-tests.txt ) &
start=$(date +%s)
FLASHCHECK_GPU_OUT=$R/out timeout 540 bash ci/gpu.sh > $R/gpu-sh.log 2>&1
echo "ci/gpu.sh exit $? after $(( $(date +%s) - start )) s" | tee -a $R/gpu-sh.log
wait
tar -C /tmp -cJf $OUT/gpush.tar.xz gpush
tail -5 $R/pin-tests.txt
grep -E "^(stage|==|ci/gpu)|passed|failed|error" $R/gpu-sh.log | tail -25
