"""Properties with a bug in their own code, registered when this module is imported, beside
an implementation that crashes once (:data:`tests.support.misbehaving.crashes_once`): for runs that
find something and then meet an error of flashcheck's own code. A property's code is
flashcheck's side of the check, not the implementation's (it lies in another file than the
implementation's: :func:`flashcheck.engine.verdict.decide`).

``--impl tests.support.bug_in_flashcheck:attention --property out_matches_reference --property
property_with_a_bug``: the first worker crashes on its first case, the next passes its
turn of ``out_matches_reference``, then fails in ``property_with_a_bug``'s code.
``--property property_failing_then_with_a_bug``: a failure is found on the first case, and
the bug met while it is shrunk. ``--property property_short_of_memory``: the device runs out of
memory in the property's own code on every case.

Importing this module adds to flashcheck's property registry for the rest of the process:
import it only in a process of its own (a ``flashcheck`` command run as a subprocess, and its
workers).
"""
from __future__ import annotations

import torch

from flashcheck.oracle.compare import Violation
from flashcheck.properties import PROPERTIES, Property
from tests.support.misbehaving import crashes_once as attention  # noqa: F401  (the implementation --impl names)

#: The name the property is registered under.
NAME = "property_with_a_bug"


def _check_with_a_bug(impl, case, *, device=None):
    raise ValueError("a bug in this property's own code")


PROPERTIES.setdefault(NAME, Property(NAME, _check_with_a_bug, "a property whose own code raises"))

#: The name of the property that fails on its first case, then raises from its own code.
FAILING_NAME = "property_failing_then_with_a_bug"
_calls = []


def _fail_then_bug(impl, case, *, device=None):
    _calls.append(None)
    if len(_calls) == 1:
        raise Violation("planted: the first case fails")
    raise ValueError("a bug in this property's own code")


PROPERTIES.setdefault(FAILING_NAME, Property(FAILING_NAME, _fail_then_bug,
                                             "a property that fails on its first case, then raises from its own code"))

#: The name of the property whose own code runs out of device memory on every case.
SHORT_OF_MEMORY_NAME = "property_short_of_memory"


def _short_of_memory(impl, case, *, device=None):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.82 GiB (planted)")


PROPERTIES.setdefault(SHORT_OF_MEMORY_NAME, Property(SHORT_OF_MEMORY_NAME, _short_of_memory,
                                                     "a property whose own code runs out of device memory"))
