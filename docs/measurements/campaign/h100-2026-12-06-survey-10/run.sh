#!/usr/bin/env bash
# The cuDNN scaled-delta script, then four campaigns side by side (the ninth survey round's set),
# after the sit-out rule.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . > /dev/null 2>&1 || exit 1
R=/tmp/s10; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.backends.cudnn.version())" >> $R/device.txt
nproc >> $R/device.txt
timeout 120 python3 docs/repros/sdpa_cudnn_float16_scaled_delta.py > $R/scaled_delta.txt 2>&1; echo "exit $?" >> $R/scaled_delta.txt
bash ci/campaigns.sh $R 300 "sdpa-public-cudnn@--workers 4" "sdpa-public-cudnn@--workers 4" \
    "sdpa-cudnn@--workers 4" "flex@--workers 4" > $R/campaigns.log 2>&1
echo "campaigns exit $?" >> $R/campaigns.log
tar -C /tmp -cJf $OUT/s10.tar.xz s10
cat $R/scaled_delta.txt | tail -30
for f in $R/*.log; do echo "== $f"; grep -E "cases|known|pace|declined|distinct|unfinished" $f | head -12; done
