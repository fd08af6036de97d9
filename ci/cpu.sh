#!/usr/bin/env bash
# CPU CI: set up from the project's own files and run the test suite, the Triton kernels
# running in the interpreter. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
# The shared-database tests run against Debian's redis-server: installed here where it is
# missing (as root, through apt); where that fails they are skipped, and say why.
if ! command -v redis-server >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q redis-server >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q redis-server >/dev/null 2>&1; } \
        || echo "ci/cpu.sh: could not install redis-server; the shared-database tests will be skipped" >&2
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints-cpu.txt -e '.[dev]'
# worksteal: an idle worker takes queued tests from a busy one; with plain load scheduling the
# slow property tests of the kernel could sit queued behind one worker while the other idled.
# 8 examples per property, not the ci profile's 25: in Triton's interpreter a case of the
# project kernel costs seconds, and the property suite is most of this command's time (25
# examples kept it past 25 minutes on 2 cores, 12 near 16). The examples are derandomized (the
# same every run); the fuzzer and the mutation catalogue are where new cases come from.
# --durations: the slowest tests, printed at the end, so that what keeps CI long is in its log.
# One torch thread a test worker: xdist already runs one worker a core, and torch's own threads
# on top of them only oversubscribe the cores (the fuzz runs' workers take their share the same way).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
.venv/bin/python -m pytest -n auto --dist worksteal --flashcheck-examples 8 --durations=25 "$@"
