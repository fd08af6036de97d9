"""The property suite: every property of :data:`flashcheck.properties.PROPERTIES` that an
implementation's declared features allow, run through hypothesis on cases drawn for it.

Run it on your own kernel from any directory (``mypkg`` importable)::

    pytest --pyargs flashcheck.property_suite --flashcheck-impl mypkg.attention:attn

The implementations come from the pytest plugin (:mod:`flashcheck.pytest_plugin`:
``--flashcheck-impl``, else ``$FLASHCHECK_IMPLS``, else the project kernel and the peers
that run on this machine); the test ids are ``<implementation>-<property>``, or
``<implementation>-<property>-shardKofN`` with ``--flashcheck-shards N`` (each property's
examples split over N tests, for xdist). Each case's verdict comes from
:func:`flashcheck.engine.verdict.decide`, as in ``flashcheck fuzz`` and ``flashcheck check``:

- A correct implementation is never flagged.
- A failure, or an exception the implementation raises, fails the test with the evidence
  and the ``flashcheck check`` line that replays the (shrunk) case; failures of different
  signatures (:attr:`flashcheck.engine.fuzz_result.Failure.signature`) are distinct bugs to
  hypothesis, each shrunk and reported (its ``report_multiple_bugs``), and with
  ``--flashcheck-repro-dir DIR`` each gets its standalone script there (:mod:`flashcheck.repro`).
- A fatal error (a CUDA error that loses the context) fails the test at once, unshrunk,
  with its replay line; every later property test in that process then fails without
  running a case (they would run on a dead context).
- An error of flashcheck's own code fails the test as flashcheck's (its traceback shown),
  never as a finding about the implementation.
- A property the implementation declares as a known divergence
  (``flashcheck_known_divergences``) still runs: a failure on a case the divergence covers
  is reported as an expected failure with the evidence (the other cases go on being drawn,
  and a failure the divergence does not cover fails the test), and a whole-property
  divergence that never shows is a pass with a warning.
- Cases the implementation declines (its own ``NotImplementedError``) are replaced by
  others, counted, and listed by reason at the end of the run; a test whose every drawn
  case was declined fails, naming the reasons: nothing was checked.
- A property the implementation's features exclude, or for which no case inside them can
  be drawn, or which the implementation declares not applicable
  (``flashcheck_not_applicable``: its kernel's documented contract excludes every case the
  property draws), is skipped with that reason; the declared ones are listed again at the
  end of the run.

To collect the suite inside another test directory, import these three names into a test
module (``tests/test_properties.py`` does): the test, its fixture and the hook that
parametrizes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import warnings
from pathlib import Path

import pytest
from collections import Counter

from hypothesis import given, reject, seed, settings
from hypothesis.errors import Unsatisfiable

from flashcheck import protocol, pytest_plugin, repro
from flashcheck.engine import property_cases
from flashcheck.engine.fuzz_result import Failure
from flashcheck.engine.verdict import Outcome, StopRunning, Verdict, decide
from flashcheck.oracle import expectation
from flashcheck.oracle.compare import PropertyFailure
from flashcheck.properties import PROPERTIES

try:
    BaseExceptionGroup
except NameError:  # Python 3.10: hypothesis depends on the backport
    from exceptiongroup import BaseExceptionGroup

__all__ = ["pytest_generate_tests", "ratio_log", "test_property_holds"]


def pytest_generate_tests(metafunc):
    """Parametrize ``test_property_holds`` over the chosen implementations × every
    property; one that cannot be drawn inside an implementation's features, or that the
    implementation declares not applicable, is a skip saying why
    (:func:`flashcheck.engine.property_cases.not_applicable_because`)."""
    if not {"impl_name", "property_name", "shard"} <= set(metafunc.fixturenames):
        return
    metafunc.parametrize("impl_name, property_name, shard", list(_combinations(metafunc.config)))


def _combinations(config):
    device = protocol.default_device()
    pairs = []
    for impl_name in pytest_plugin.implementation_names(config):
        impl = pytest_plugin.implementation(config, impl_name)
        pairs += [(impl_name, prop, property_cases.not_applicable_because(prop, impl, device))
                  for prop in PROPERTIES.values()]
    count = pytest_plugin.shard_count(config, tests=sum(excluded is None for _, _, excluded in pairs))
    for impl_name, prop, excluded in pairs:
        if excluded is not None:
            skip = pytest.mark.skip(reason=f"not applicable to {impl_name}: {prop.name} {excluded}")
            yield pytest.param(impl_name, prop.name, Shard(0, 1), id=f"{impl_name}-{prop.name}", marks=skip)
            continue
        for index in range(count):
            shard = Shard(index, count)
            yield pytest.param(impl_name, prop.name, shard, id=f"{impl_name}-{prop.name}{shard.suffix}")


@dataclasses.dataclass(frozen=True)
class Shard:
    """Part ``index`` (from 0) of ``count`` into which one property's examples are split."""

    index: int
    count: int

    @property
    def suffix(self) -> str:
        """The test id's suffix: none for an unsplit property."""
        return "" if self.count == 1 else f"-shard{self.index + 1}of{self.count}"

    def narrow(self, test, examples: int | None = None):
        """``test`` (a ``@given`` test) drawing this shard's share of ``examples`` (None: the
        active profile's ``max_examples``); under a derandomized profile, from a seed of this
        shard's own, since every shard would otherwise draw the same cases. An unsplit
        property's test draws them all, from the profile's seed."""
        profile = settings.default
        if self.count == 1 and examples is None:
            return test
        total = profile.max_examples if examples is None else examples
        test = settings(profile, max_examples=math.ceil(total / self.count))(test)
        return seed(self.index)(test) if profile.derandomize and self.count > 1 else test


@pytest.fixture
def ratio_log(request, impl_name, property_name):
    """With ``--flashcheck-ratio-log PATH`` (or ``$FLASHCHECK_RATIO_LOG``), append each
    comparison's worst error/allowed ratio to PATH as a JSON line."""
    path = pytest_plugin.ratio_log_path(request.config)
    if path is None:
        yield None
        return

    def observe(output, metrics):
        with open(path, "a") as log:
            log.write(json.dumps({"impl": impl_name, "property": property_name, "output": output,
                                  "ratio": metrics.worst_ratio, "elements": metrics.total}) + "\n")

    with expectation.observing(observe):
        yield path


#: The first fatal verdict met in this pytest run (kept in the config's stash: one per run,
#: even for runs nested in one process): no property test runs a case after it.
_FATAL = pytest.StashKey[Verdict]()


def test_property_holds(impl_name, property_name, shard, pytestconfig, ratio_log, record_property):
    fatal = pytestconfig.stash.get(_FATAL, None)
    if fatal is not None:
        pytest.fail(f"not run: an earlier case left this process unable to run cases\n{fatal}", pytrace=False)
    impl = pytest_plugin.implementation(pytestconfig, impl_name)
    prop = PROPERTIES[property_name]
    device = protocol.default_device()
    features = protocol.features_of(impl, device)
    cases = property_cases.cases_for(prop, impl, device, pytest_plugin.drawn_sizes(pytestconfig))

    known = protocol.known_divergences(impl).get(property_name)
    observed = []  # failures the known divergence explains: expected, and the run goes on
    explaining = Counter()  # the declared reason that explains each of them -> cases
    checked = [0]
    declined = Counter()  # reason -> cases
    not_checked = Counter()  # what a passed case could not check -> cases

    @given(case=cases)
    def holds(case):
        verdict = decide(prop, impl, case, device=device, impl_name=impl_name)
        if verdict.outcome is Outcome.PASSED:
            checked[0] += 1
            not_checked.update(verdict.unchecked)
        elif verdict.outcome is Outcome.DECLINED:
            declined[verdict.reason] += 1
            reject()  # hypothesis draws another in its place
        elif verdict.outcome is Outcome.KNOWN:
            checked[0] += 1
            observed.append(verdict.failure)
            explaining[verdict.reason] += 1
        elif verdict.outcome is Outcome.FAILED:
            raise distinct(verdict.failure)
        else:  # FATAL, FLASHCHECK_ERROR: stop now, unshrunk
            raise StopRunning(verdict)

    try:
        shard.narrow(holds, pytest_plugin.example_count(pytestconfig))()
    except (PropertyFailure, BaseExceptionGroup) as found:
        failures = found.exceptions if isinstance(found, BaseExceptionGroup) else (found,)
        if not all(isinstance(failure, PropertyFailure) for failure in failures):
            raise
        pytest.fail(_distinct_failures(failures, pytest_plugin.repro_dir(pytestconfig), impl, device), pytrace=False)
    except StopRunning as stop:
        if stop.verdict.outcome is Outcome.FATAL:
            pytestconfig.stash[_FATAL] = stop.verdict
            if stop.verdict.declared_fault:
                pytest.xfail(f"known divergence of {impl_name}, a fault that ended the process's cases "
                             f"(no further case runs in it): {stop.verdict}")
            pytest.fail(f"{stop.verdict}\n(no further case runs in this process)", pytrace=False)
        raise stop.verdict.error from None
    except Unsatisfiable:
        if not declined:
            pytest.skip(f"not applicable to {impl_name}: {property_name}: {property_cases.UNSATISFIABLE} "
                        f"({', '.join(sorted(features))})")
    finally:
        if declined:
            record_property("flashcheck_declined", dict(declined))
        if not_checked:
            record_property("flashcheck_not_checked", dict(not_checked))
    if declined and not checked[0]:
        reasons = "; ".join(f"{count} × {reason}" for reason, count in declined.most_common())
        pytest.fail(f"nothing was checked: {impl_name} declined every case drawn for {property_name} "
                    f"({reasons})", pytrace=False)
    if observed:
        reasons = "; ".join(reason for reason, _ in explaining.most_common())
        pytest.xfail(f"known divergence of {impl_name} ({reasons}), observed on {len(observed)} case(s), "
                     f"first: {observed[0]}")
    if known is not None and not known.scoped:
        # Races are probabilistic: the drawn cases holding is a pass, worth a note, not a failure.
        warnings.warn(f"{impl_name}: the known divergence in {property_name} ({known}) did not show in this run")


#: One subclass of PropertyFailure per signature met in this process: hypothesis tells bugs apart
#: by the type (and place) of what they raise, so each signature is shrunk and reported on its own.
_SIGNATURE_TYPES: dict[str, type] = {}


def distinct(failure: PropertyFailure) -> PropertyFailure:
    """``failure`` raised as its signature's own type (:data:`_SIGNATURE_TYPES`)."""
    signature = Failure.from_property_failure(failure).signature
    kind = _SIGNATURE_TYPES.setdefault(signature, type("DistinctFailure", (PropertyFailure,), {"signature": signature}))
    return kind(failure.evidence, property_name=failure.property_name, case=failure.case,
                impl_name=failure.impl_name)


def _distinct_failures(failures, folder: str | None, impl, device) -> str:
    """The report of a property test's distinct failures, each with its replay line and, with
    ``folder``, the standalone script written there for it (or why none could be)."""
    parts = [f"{len(failures)} distinct failures (hypothesis's report_multiple_bugs):"] if len(failures) > 1 else []
    for failure in failures:
        text = str(failure)
        if folder is not None:
            Path(folder).mkdir(parents=True, exist_ok=True)
            spec = failure.case.spec()
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{failure.impl_name}-{failure.property_name}")
            path = Path(folder) / f"{name}-{hashlib.sha1(spec.encode()).hexdigest()[:10]}.py"
            try:
                repro.write(path, impl=impl, impl_name=failure.impl_name, property_name=failure.property_name,
                            case=failure.case, device=device, evidence=failure.evidence)
                text += f"\nstandalone script: {path}"
            except repro.NoScript as reason:
                text += f"\nstandalone script: none: {reason}"
        parts.append(text)
    return "\n\n".join(parts)
