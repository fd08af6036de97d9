export TRITON_CACHE_DIR=/tmp/cold-triton-cache; rm -rf $TRITON_CACHE_DIR ~/.triton/cache  # the call's command, before this script
#!/usr/bin/env bash
# ci/gpu.sh with its defaults on one fresh H100, FlagGems installed from carried wheels, cold caches.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
R=/tmp/gpush; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.backends.cudnn.version())" >> $R/device.txt
nproc >> $R/device.txt
start=$(date +%s)
FLASHCHECK_GPU_OUT=$R/out timeout 575 bash ci/gpu.sh > $R/gpu-sh.log 2>&1
echo "ci/gpu.sh exit $? after $(( $(date +%s) - start )) s" | tee -a $R/gpu-sh.log
tar -C /tmp -cJf $OUT/gpush.tar.xz gpush
grep -E "^(stage|==|ci/gpu)|passed|failed|error" $R/gpu-sh.log | tail -25
