#!/usr/bin/env bash
# CPU CI: set up from the project's own files and run the test suite, the Triton kernels
# running in the interpreter. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints-cpu.txt -e '.[dev]'
# worksteal: an idle worker takes queued tests from a busy one; with plain load scheduling the
# slow property tests of the kernel could sit queued behind one worker while the other idled.
# 12 examples per property, not the ci profile's 25: in Triton's interpreter a case of the
# project kernel costs seconds, and 25 kept this command past 15 minutes on 2 cores. The
# examples are derandomized (the same every run); the fuzzer and the mutation catalogue are
# where new cases come from.
.venv/bin/python -m pytest -n auto --dist worksteal --flashcheck-examples 12 "$@"
