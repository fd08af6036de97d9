#!/usr/bin/env bash
# Campaigns side by side on one host: `flashcheck fuzz --keep-going --device cuda` of each
# implementation named, all at once, the i-th on GPU i mod (GPUs of the host), unseeded, each
# with default workers, a database and compile caches of its own (Triton's, FlashAttention-4's
# and FlagGems' tuning results; cold: nothing compiled yet), for BUDGET seconds.
#
#   ci/campaigns.sh OUT BUDGET IMPL [IMPL ...]
#
# Writes, per implementation: OUT/IMPL.json (the result, --json), OUT/IMPL.log (the summary),
# OUT/IMPL-repro/ (a standalone script per distinct failure, --repro-dir) and OUT/IMPL-compiled.txt
# (the Triton kernel variants the campaign compiled, counted by kernel name: where the time of a
# compile-bound campaign went) and OUT/IMPL-wall.txt (seconds from its start to its exit, the
# scripts written: how far past its budget it ran). IMPL may carry
# extra fuzz arguments after an "@" (e.g. "flash@--workers 32"); an implementation named again
# runs again, on the next GPU, as IMPL-2, IMPL-3, ... (independent seeds). With
# FLASHCHECK_CAMPAIGN_DATABASE=redis://HOST:PORT/DB the campaigns share that database instead
# (docs/cli.md, "A database several machines share"), each in a working directory of its own, so
# that each keeps a local example folder of its own as a separate machine would. Exits 0 when every
# campaign ran to its end, whatever it found; 2 when one could not start. A speed measurement
# compares campaigns of one run only: they share the host's CPUs.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
    echo "usage: ci/campaigns.sh OUT BUDGET IMPL [IMPL ...]" >&2
    exit 2
fi
out=$1 budget=$2
shift 2
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)  # absolute: a campaign sharing a database runs in a folder of its own
shared="${FLASHCHECK_CAMPAIGN_DATABASE:-}"
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
if [ "${gpus:-0}" -lt 1 ]; then
    echo "ci/campaigns.sh: no GPU visible" >&2
    exit 2
fi
index=0
pids=()
names=()
for entry in "$@"; do
    impl=${entry%%@*}
    extra=""
    [ "$entry" != "$impl" ] && extra=${entry#*@}
    base=${impl//[^A-Za-z0-9_.-]/_}
    name=$base
    repeat=1
    while [[ " ${names[*]:-} " == *" $name "* ]]; do
        repeat=$((repeat + 1))
        name=$base-$repeat
    done
    names+=("$name")
    gpu=$((index % gpus))
    scratch="${TMPDIR:-/tmp}/flashcheck-campaign-$(basename "$out")-$name"
    mkdir -p "$scratch" || exit 2
    database="$scratch/db"
    [ -n "$shared" ] && database=$shared
    # shellcheck disable=SC2086  # $extra is a list of arguments
    (cd "$scratch" && started=$(date +%s) && CUDA_VISIBLE_DEVICES=$gpu TRITON_CACHE_DIR="$scratch/triton" \
        FLASH_ATTENTION_CUTE_DSL_CACHE_DIR="$scratch/cute" FLAGGEMS_CACHE_DIR="$scratch/flaggems" \
        python3 -m flashcheck.cli fuzz --impl "$impl" --device cuda --budget "$budget" --keep-going \
        --database "$database" --json "$out/$name.json" --repro-dir "$out/$name-repro" \
        $extra > "$out/$name.log" 2>&1
     code=$?
     echo "$(( $(date +%s) - started )) s from start to exit, budget $budget s, exit $code" > "$out/$name-wall.txt"
     exit $code) &
    pids+=($!)
    index=$((index + 1))
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid"
    code=$?
    # 0 clean, 1 found something, 3 nothing checked: the campaign ran; 2 and above 3: it did not.
    if [ "$code" -eq 2 ] || [ "$code" -gt 3 ]; then
        status=2
    fi
done
# Triton's cache holds a folder per compiled variant, its metadata NAME.json beside a
# __grp__NAME.json listing the folder's files.
for name in "${names[@]}"; do
    cache="${TMPDIR:-/tmp}/flashcheck-campaign-$(basename "$out")-$name/triton"
    if [ -d "$cache" ]; then
        find "$cache" -name '*.json' ! -name '__grp__*' -printf '%f\n' | sed 's/\.json$//' | sort | uniq -c \
            | sort -rn > "$out/$name-compiled.txt"
    fi
done
exit $status
