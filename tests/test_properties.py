"""The property suite (:mod:`flashcheck.property_suite`) applied to the implementations chosen with
``--flashcheck-impl`` (else ``$FLASHCHECK_IMPLS``, else the project kernel and the peers that
run on this machine: ``sdpa-math`` everywhere, the other SDPA backends and FlexAttention
only on CUDA). The suite lives in the installed package so that users run it on their own
kernels with ``pytest --pyargs flashcheck.property_suite``; this module only collects it here.
"""

from flashcheck.property_suite import pytest_generate_tests, ratio_log, test_property_holds  # noqa: F401
