"""Properties every attention implementation must satisfy, importable as
``flashcheck.properties``. Each is a plain function ``check(impl, case, *, device)`` that
raises :class:`flashcheck.oracle.compare.Violation` carrying its evidence; they are
registered by name in :data:`PROPERTIES`.
"""

from flashcheck.properties import forward, gradients, masking, memory, metamorphic, packed  # noqa: F401
from flashcheck.properties.registry import PROPERTIES, Property, applicable

__all__ = ["PROPERTIES", "Property", "applicable"]
