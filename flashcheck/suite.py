"""The property suite: every property of :data:`flashcheck.properties.PROPERTIES` that an
implementation's declared features allow, run through hypothesis on cases drawn for it.

Run it on your own kernel from any directory (``mypkg`` importable)::

    pytest --pyargs flashcheck.suite --flashcheck-impl mypkg.attention:attn

The implementations come from the pytest plugin (:mod:`flashcheck.pytest_plugin`:
``--flashcheck-impl``, else ``$FLASHCHECK_IMPLS``, else the project kernel and the peers
that run on this machine); the test ids are ``<implementation>-<property>``, or
``<implementation>-<property>-shardKofN`` with ``--flashcheck-shards N`` (each property's
examples split over N tests, for xdist). A correct implementation is never flagged. A
property the implementation declares as a known divergence
(``flashcheck_known_divergences``) still runs: a failure on a case the divergence covers
is reported as an expected failure with the evidence (the other cases go on being drawn,
and a failure the divergence does not cover fails the test), and a whole-property
divergence that never shows is a pass with a warning. An adapter declining
every case drawn (``NotImplementedError``) skips the test.

To collect the suite inside another test directory, import these three names into a test
module (``tests/test_properties.py`` does): the test, its fixture and the hook that
parametrizes it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import pytest
from hypothesis import given, reject, seed, settings
from hypothesis.errors import Unsatisfiable

from flashcheck import expectation, fuzz, protocol, pytest_plugin
from flashcheck.compare import PropertyFailure
from flashcheck.properties import PROPERTIES

__all__ = ["pytest_generate_tests", "ratio_log", "test_property_holds"]


def pytest_generate_tests(metafunc):
    """Parametrize ``test_property_holds`` over the chosen implementations × the
    properties drawable inside each one's features."""
    if not {"impl_name", "property_name", "shard"} <= set(metafunc.fixturenames):
        return
    metafunc.parametrize("impl_name, property_name, shard", list(_combinations(metafunc.config)))


def _combinations(config):
    device = protocol.default_device()
    count = pytest_plugin.shard_count(config)
    for impl_name in pytest_plugin.implementation_names(config):
        features = protocol.features_of(pytest_plugin.implementation(config, impl_name), device)
        for prop in PROPERTIES.values():
            if fuzz.drawable(prop, features):
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

    def narrow(self, test):
        """``test`` (a ``@given`` test) drawing this shard's share of the active profile's
        examples; under a derandomized profile, from a seed of this shard's own, since every
        shard would otherwise draw the same cases. An unsplit property's test is unchanged."""
        if self.count == 1:
            return test
        profile = settings.default
        test = settings(profile, max_examples=math.ceil(profile.max_examples / self.count))(test)
        return seed(self.index)(test) if profile.derandomize else test


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

    expectation.OBSERVERS.append(observe)
    yield path
    expectation.OBSERVERS.remove(observe)


def test_property_holds(impl_name, property_name, shard, pytestconfig, ratio_log):
    impl = pytest_plugin.implementation(pytestconfig, impl_name)
    prop = PROPERTIES[property_name]
    device = protocol.default_device()
    cases = fuzz.case_strategy(prop, protocol.features_of(impl, device), pytest_plugin.size_profile(pytestconfig))

    known = protocol.known_divergences(impl).get(property_name)
    observed = []  # failures the known divergence explains: expected, and the run goes on

    @given(case=cases)
    def holds(case):
        with fuzz.releasing_cached_memory(device):
            try:
                prop.check(impl, case, device=device)
            except NotImplementedError:
                reject()  # an adapter declining a case it cannot express (see flashcheck.adapters)
            except PropertyFailure as failure:
                failure.property_name, failure.case, failure.impl_name = property_name, case, impl_name
                if known is not None and known.explains(case):
                    observed.append(failure)
                    return
                raise

    try:
        shard.narrow(holds)()
    except Unsatisfiable:
        pytest.skip(f"{impl_name} declined every case drawn for {property_name}")
    if observed:
        pytest.xfail(f"known divergence of {impl_name} ({known}), observed on {len(observed)} case(s), "
                     f"first: {observed[0]}")
    if known is not None and not known.scoped:
        # Races are probabilistic: the drawn cases holding is a pass, worth a note, not a failure.
        warnings.warn(f"{impl_name}: the known divergence in {property_name} ({known}) did not show in this run")
