#!/usr/bin/env bash
# CPU CI: set up from the project's own files and run the test suite, the Triton kernels
# running in the interpreter. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -c ci/constraints-cpu.txt -e '.[dev]'
.venv/bin/python -m pytest -n auto "$@"
