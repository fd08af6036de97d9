#!/usr/bin/env bash
# Issue 36 on one H100: three unseeded 480 s campaigns of the project kernel side by side, under $OUT as they go.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . > /dev/null 2>&1 || exit 1
C=$OUT/campaign; mkdir -p $C
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $C/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.backends.cudnn.version())" >> $C/device.txt
nproc >> $C/device.txt
start=$(date +%s)
bash ci/campaigns.sh $C ${CAMPAIGN_BUDGET:-480} "flash@--workers 5" "flash@--workers 5" "flash@--workers 5" > $C/campaigns.log 2>&1
echo "campaigns exit $? after $(( $(date +%s) - start )) s" | tee -a $C/campaigns.log
for f in $C/flash*.log; do echo "== $f"; grep -E "seed|cases|known|pace|declined|distinct|unfinished|counterexample" $f | head -12; done
