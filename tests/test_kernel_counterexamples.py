"""The project kernel holds on every counterexample it records (``kernels/counterexamples.toml``)
on the devices each was recorded for: the cases fuzzing once found, kept as regressions. (What
each found and how it was fixed: docs/findings.md.)"""

from __future__ import annotations

import pytest

from flashcheck.cases.case import Case
from flashcheck.kernels import flash_attention, mutations
from flashcheck.properties import PROPERTIES
from flashcheck.regress import counterexamples

RECORDED = counterexamples.load(mutations.COUNTEREXAMPLES)


@pytest.mark.parametrize("recorded", RECORDED,
                         ids=[f"{entry.property}-{number}" for number, entry in enumerate(RECORDED)])
def test_the_kernel_holds_on_its_recorded_counterexamples(device, recorded):
    if not recorded.applies_on(device):
        pytest.skip(f"recorded for {', '.join(recorded.devices)} only: {recorded.found}")
    PROPERTIES[recorded.property].check(flash_attention, Case.from_spec(recorded.case), device=device)
