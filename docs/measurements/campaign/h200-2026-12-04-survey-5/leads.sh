#!/usr/bin/env bash
# The two FlagGems leads on the device: flashcheck's replay, flashcheck repro's scripts, the
# hand-minimised scripts; everything into $OUT/leads.tar.xz.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
R=/tmp/leads; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/device.txt
FLASH="batch=2 seqlen_q=307 seqlen_k=307 heads=8 kv_heads=4 head_dim=256 dtype=float16 causal=True window=-1,-1 softmax_scale=None layout=heads-first values=normal seed=23943"
SDPA="batch=1 seqlen_q=1 seqlen_k=395 heads=7 kv_heads=1 head_dim=64 dtype=float16 causal=False window=-1,-1 softmax_scale=-1.0 layout=contiguous values=normal seed=0"
( timeout 420 python3 docs/repros/flaggems_flash_d256_causal.py > $R/flash_hand.txt 2>&1; echo "rc=$?" >> $R/flash_hand.txt ) &
( timeout 420 python3 docs/repros/flaggems_sdpa_negative_scale.py > $R/sdpa_hand.txt 2>&1; echo "rc=$?" >> $R/sdpa_hand.txt ) &
for lead in flash sdpa; do
  if [ $lead = flash ]; then impl=flaggems-flash; spec=$FLASH; else impl=flaggems-sdpa; spec=$SDPA; fi
  ( timeout 200 flashcheck check --impl $impl --property out_matches_reference --case "$spec" --device cuda; echo "rc=$?" ) > $R/${lead}_check.txt 2>&1
  ( timeout 60 flashcheck repro --impl $impl --property out_matches_reference --case "$spec" --device cuda -o $R/${lead}_repro.py; echo "rc=$?" ) > $R/${lead}_repro_write.txt 2>&1
  ( timeout 200 python3 $R/${lead}_repro.py --device cuda; echo "rc=$?" ) > $R/${lead}_repro_run.txt 2>&1
done
wait
ls -la $R > $R/ls.txt
tar -C /tmp -cJf $OUT/leads.tar.xz leads
tail -n 5 $R/*.txt
