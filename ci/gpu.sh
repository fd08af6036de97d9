#!/usr/bin/env bash
# GPU CI: the test suite at GPU sizes, on every implementation that runs on this machine
# (the project kernel, torch SDPA's math, flash, efficient and cuDNN backends, FlexAttention).
# Uses the torch and triton already installed; installs flashcheck itself without touching them.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-build-isolation --no-deps -e .
export FLASHCHECK_HYPOTHESIS_PROFILE="${FLASHCHECK_HYPOTHESIS_PROFILE:-gpu}"
python3 -m pytest --hypothesis-show-statistics "$@"
