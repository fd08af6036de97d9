#!/usr/bin/env bash
# Runs every standalone script (`flashcheck repro`'s, or a campaign's --repro-dir) found under the
# folders named, without flashcheck's help, and says what each showed on this machine: the step
# that confirms a campaign's failures before anyone calls them a kernel's bugs.
#
#   ci/confirm_scripts.sh [--device auto|cpu|cuda] [--timeout SECONDS] [--jobs N] DIR [DIR ...]
#
# Each script runs from its own folder as `$PYTHON SCRIPT --device DEVICE` (PYTHON default python3,
# DEVICE default auto), at
# most SECONDS (default 120), N at a time (default 4); its output goes beside it as SCRIPT.log.
# One line per script on stdout, sorted: FAILS (exit 1: the failure reproduced), HOLDS (exit 0:
# it did not, here), CANNOT-CHECK (exit 2: not on this device), TIMEOUT, or ERROR (any other
# exit: the script itself broke; its log says how), then the script's path. Exits 0 when every
# script FAILS, 1 when one did not, 2 on bad arguments or when no script was found.
set -uo pipefail
device=auto timeout=120 jobs=4
usage="usage: ci/confirm_scripts.sh [--device auto|cpu|cuda] [--timeout SECONDS] [--jobs N] DIR [DIR ...]"
while [ $# -gt 0 ]; do
    case "$1" in
        --device) device=${2:-}; shift 2 ;;
        --timeout) timeout=${2:-}; shift 2 ;;
        --jobs) jobs=${2:-}; shift 2 ;;
        --*) echo "ci/confirm_scripts.sh: unknown option $1; $usage" >&2; exit 2 ;;
        *) break ;;
    esac
done
case "$device" in auto|cpu|cuda) ;; *) echo "ci/confirm_scripts.sh: --device must be auto, cpu or cuda; got '$device'" >&2; exit 2 ;; esac
for number in "$timeout" "$jobs"; do
    if ! [[ "$number" =~ ^[1-9][0-9]*$ ]]; then
        echo "ci/confirm_scripts.sh: --timeout and --jobs take a positive integer; got '$number'" >&2
        exit 2
    fi
done
if [ $# -lt 1 ]; then
    echo "$usage" >&2
    exit 2
fi
for folder in "$@"; do
    if [ ! -d "$folder" ]; then
        echo "ci/confirm_scripts.sh: DIR '$folder' is not a folder" >&2
        exit 2
    fi
done
scripts=$(find "$@" -name '*.py' -type f | sort)
if [ -z "$scripts" ]; then
    echo "ci/confirm_scripts.sh: no script (*.py) under $*" >&2
    exit 2
fi

# One script: its verdict line. Run from its folder, where a large payload lies beside it.
confirm() {
    local script=$1 folder name status verdict
    folder=$(dirname "$script") name=$(basename "$script")
    (cd "$folder" && timeout "$timeout" "$PYTHON" "$name" --device "$device" > "$name.log" 2>&1)
    status=$?
    case $status in
        1) verdict=FAILS ;;
        0) verdict=HOLDS ;;
        2) verdict=CANNOT-CHECK ;;
        124) verdict=TIMEOUT ;;
        *) verdict=ERROR ;;
    esac
    echo "$verdict $script"
}
export -f confirm
PYTHON=${PYTHON:-python3}
export device timeout PYTHON
lines=$(printf '%s\n' "$scripts" | xargs -d '\n' -P "$jobs" -I{} bash -c 'confirm "$1"' _ {} | sort -k2)
echo "$lines"
if grep -qv '^FAILS ' <<< "$lines"; then
    exit 1
fi
exit 0
