"""A correct implementation whose module, once imported, gives flashcheck a property with a
bug of flashcheck's own (:data:`PROPERTY`, raising after it called the implementation): for
the worker processes of ``flashcheck fuzz`` and ``flashcheck check --case-timeout``, which
know only the implementation's name and import its module, while the properties they run are
flashcheck's. The property's code lies here, the implementation's in :mod:`tests.support.buggy`, so
that what the property raises is flashcheck's error, not the implementation's."""

from __future__ import annotations

from flashcheck.properties import PROPERTIES, Property
from tests.support import buggy

NAME = "property_with_a_bug"


def _check(impl, case, *, device=None):
    """A property whose own code raises once the implementation has returned: a bug in flashcheck."""
    impl(*case.materialize(device)[:3], **case.attention_kwargs(device))
    raise ValueError("a bug in this property's own code")


PROPERTY = Property(NAME, _check, "a property whose own code raises")
PROPERTIES.setdefault(NAME, PROPERTY)

#: Correct (:data:`tests.support.buggy.correct`).
attention = buggy.correct
