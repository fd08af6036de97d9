#!/usr/bin/env bash
# The revised sit-out rule on cuDNN, and the pace of sdpa-public-math and flash: four campaigns side by side, 300 s.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . > /dev/null 2>&1 || exit 1
R=/tmp/s11; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
nproc >> $OUT/device.txt
bash ci/campaigns.sh $R 300 "sdpa-public-cudnn@--workers 4" "sdpa-public-cudnn@--workers 4" \
    "sdpa-public-math@--workers 4" "flash@--workers 4" > $R/campaigns.log 2>&1
echo "campaigns exit $?" >> $R/campaigns.log
for f in $R/*.log; do cp $f $OUT/; done
tar -C /tmp -cJf $OUT/s11.tar.xz s11
for f in $R/*.log; do echo "== $f"; grep -E "cases in|known|pace|declined|distinct|unfinished|counterexample|grads_match_reference " $f | head -12; done
