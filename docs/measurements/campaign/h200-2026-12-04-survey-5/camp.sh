#!/usr/bin/env bash
# Campaigns side by side on the device, then their scripts replayed without flashcheck.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-build-isolation --no-deps -e . >/dev/null 2>&1 || exit 1
C=/tmp/camp; mkdir -p $C
git rev-parse --short HEAD > $C/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name --format=csv,noheader > $C/device.txt
bash ci/campaigns.sh $C ${BUDGET:-300} "$@"
dirs=$(ls -d $C/*-repro 2>/dev/null | while read d; do [ -n "$(ls $d)" ] && echo $d; done)
[ -n "$dirs" ] && timeout 180 bash ci/confirm_scripts.sh --device cuda --timeout 100 --jobs 4 $dirs > $C/confirm.txt 2>&1
tar -C /tmp -cJf $OUT/camp.tar.xz camp
for f in $C/*.log; do echo "== $f"; grep -E "cases in|pace:|distinct|counterexample|declined" $f | head -8; done
cat $C/confirm.txt 2>/dev/null
