#!/usr/bin/env bash
# CPU CI: set up from the project's own files and run the test suite, the Triton kernels
# running in the interpreter. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints-cpu.txt -e '.[dev]'
# worksteal: an idle worker takes queued tests from a busy one; with plain load scheduling the
# slow property tests of the kernel could sit queued behind one worker while the other idled.
.venv/bin/python -m pytest -n auto --dist worksteal "$@"
