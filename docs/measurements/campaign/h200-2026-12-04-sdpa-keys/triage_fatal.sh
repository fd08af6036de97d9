#!/usr/bin/env bash
# The forward's illegal instruction of run 1 (arm scale, out_matches_reference, layout mixed):
# its script as written (the arm's pinned configuration), under FlagGems' own tuning, and the
# built-in adapter's replay of the same case in each layout, each in a process of its own.
set -u
HERE=$PWD/docs/measurements/campaign/h200-2026-12-04-sdpa-keys
LEAD=$PWD/docs/measurements/campaign/h200-2026-12-04-pinned-autotuners
T=$1; mkdir -p $T
CASE='batch=1 seqlen_q=128 seqlen_k=128 heads=11 kv_heads=11 head_dim=32 dtype=float32 causal=False window=0,28 softmax_scale=None values=offset-values seed=458712669'
( PYTHONPATH=$HERE:$PYTHONPATH timeout 120 python3 .gpu/fatal.py; echo "exit $?" ) > $T/script.txt 2>&1
( PYTHONPATH=$HERE:$PYTHONPATH timeout 200 python3 $LEAD/probe_script.py .gpu/fatal.py 2>&1 | head -3; echo "exit $?" ) > $T/own-tuning.txt 2>&1
for layout in mixed contiguous padded heads-first; do
  ( timeout 120 python3 -m flashcheck.cli check --impl flaggems-sdpa --property out_matches_reference \
      --case "$CASE layout=$layout"; echo "exit $?" ) > $T/check-$layout.txt 2>&1
done
