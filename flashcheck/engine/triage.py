"""Triage: which failures of an earlier fuzz run the implementation's declarations explain now.

A campaign's ``--json`` result lists its distinct failures, each with its kind, property, case
and evidence (:meth:`flashcheck.engine.fuzz_result.FuzzResult.to_json`). Once a kernel bug is
confirmed and declared as a known divergence confined to its cases, the campaigns already run
can be read again against the declarations as they now stand, without a GPU and without running
anything: what no declaration explains is what is left to classify. A failure is explained
exactly where its verdict would have been "known" had the declaration been there when it was
found (:func:`flashcheck.engine.verdict.declared_divergence`, the verdict's own reading): an error
the implementation raised (a ``property`` failure whose evidence says so, or a ``fatal`` one) only
by a divergence declared to raise it. A crash or a hang is never declared: no declaration can
say that a process may die. A declaration that consults the GPU found at run time (its compute
capability) is read as on the GPU the result's workers recorded (:func:`recorded_capability`), or,
for a result that recorded none, as on this machine. Declines are not read: a case the adapter has
declined since shows as not explained.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from flashcheck.engine.fuzz_result import PROCESS_KINDS, RAISED

#: The kinds of failure that a declaration cannot explain.
UNDECLARABLE = tuple(kind for kind in PROCESS_KINDS if kind != "fatal")


@dataclass(frozen=True)
class Triaged:
    """One distinct failure of a result (``failure``: its record, as the JSON holds it) and the
    reason of the declaration that explains it now (``declared``), or None with ``why_not``: what
    keeps it a finding."""

    failure: dict
    declared: str | None
    why_not: str | None = None

    @property
    def explained(self) -> bool:
        return self.declared is not None


def load_result(path) -> dict:
    """The fuzz result that ``flashcheck fuzz --json`` wrote to ``path`` (``.gz``: gzipped):
    ValueError, one line naming RESULT and what was expected, where it cannot be read, is not
    JSON or is not such a result."""
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as stream:
            result = json.load(stream)
    except FileNotFoundError:
        raise ValueError(f"RESULT: no such file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"RESULT: cannot read {str(path)!r} as JSON (flashcheck fuzz --json's): {error}") from None
    failures = result.get("failures") if isinstance(result, dict) else None
    if not isinstance(failures, list) or not all(isinstance(f, dict) and "kind" in f for f in failures):
        raise ValueError(f"RESULT: {str(path)!r} is not a result of flashcheck fuzz --json (expected a "
                         f"'failures' list of records with a 'kind')")
    return result


def recorded_capability(result: dict) -> tuple[int, int] | None:
    """The compute capability of the GPU ``result``'s workers ran on, where they recorded one
    and all the same (``"9.0"`` in each worker's ``capability``); None otherwise."""
    workers = result.get("workers") if isinstance(result.get("workers"), list) else []
    recorded = {worker.get("capability") for worker in workers if isinstance(worker, dict)} - {None}
    if len(recorded) != 1:
        return None
    try:
        major, minor = (int(part) for part in str(next(iter(recorded))).split("."))
    except ValueError:
        return None
    return major, minor


def device_dependent_reading(result: dict) -> bool:
    """Whether ``result`` ran on a GPU and this machine has none: read without a capability
    (none recorded, none given), the declarations that consult the GPU found at run time then
    read as on no GPU."""
    import torch

    return result.get("device") == "cuda" and not torch.cuda.is_available()


def triage(impl, failures: list[dict], capability: tuple[int, int] | None = None) -> list[Triaged]:
    """Each of ``failures`` (records of a fuzz result) with the declaration of ``impl`` that
    explains it, where one does (module docstring); GPU-dependent declarations read as on a GPU of
    compute ``capability`` where given."""
    from flashcheck.peers.common import reading_as_gpu

    with reading_as_gpu(capability) if capability is not None else contextlib.nullcontext():
        return [_triaged(impl, failure) for failure in failures]


def _triaged(impl, failure: dict) -> Triaged:
    from flashcheck.cases.case import Case
    from flashcheck.engine.verdict import declared_divergence, outside_its_cases, resembled_declaration
    from flashcheck.properties import PROPERTIES

    kind, name, spec = failure["kind"], failure.get("property"), failure.get("case")
    if kind in UNDECLARABLE:
        return Triaged(failure, None, f"a {kind} is never declared")
    if name not in PROPERTIES or spec is None:
        return Triaged(failure, None, f"property {name!r} is not one of flashcheck's" if spec else "it names no case")
    try:
        case = Case.from_spec(spec)
    except (ValueError, TypeError) as error:
        return Triaged(failure, None, f"its case does not parse: {error}")
    evidence = failure.get("evidence", "")
    raised = kind == "fatal" or evidence.startswith(RAISED)
    declared = declared_divergence(impl, name, case, raised=raised, message=evidence)
    if declared is None:
        resembled = resembled_declaration(impl, name, case, message=evidence) if raised else None
        return Triaged(failure, None, "no declaration covers it" if resembled is None else
                       f"no declaration covers it; {outside_its_cases(resembled)}")
    return Triaged(failure, str(declared))
