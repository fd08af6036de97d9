#!/usr/bin/env bash
# torch's cuDNN and memory-efficient SDPA backends, public API and private ops: four unseeded
# --keep-going campaigns side by side on one GPU, 4 workers each.
set -u
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
A=/tmp/s8; mkdir -p $A
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $A/device.txt
python3 -c "import torch; print(torch.__version__, torch.backends.cudnn.version())" >> $A/device.txt
bash ci/campaigns.sh $A ${1:-360} "sdpa-public-cudnn@--workers 4" "sdpa-cudnn@--workers 4" \
    "sdpa-public-efficient@--workers 4" "sdpa-efficient@--workers 4"
find $A -name __pycache__ -prune -exec rm -rf {} +
tar -C /tmp -cJf $OUT/s8.tar.xz s8
cat $A/device.txt
for f in $A/*.log; do echo "== $f"; grep -E "cases in|pace:|distinct|^counterexample|^fatal|declined" $f | head -8; done
