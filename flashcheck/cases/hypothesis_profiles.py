"""How hard hypothesis looks: flashcheck's hypothesis settings profiles.

:func:`register_hypothesis_profiles` registers five settings profiles: ``ci``
(deterministic: derandomized, no example database, 25 examples), ``dev`` (50 examples),
``gpu`` (200 examples), ``fuzz`` (a million examples: stop it with a time budget) and
``smoke`` (5 derandomized examples, not shrunk, for peers that compile anew for every
shape). None has a deadline: kernel runs, above all in the interpreter, vary too much in
time for one. :func:`load_hypothesis_profile` loads one, chosen by argument,
then ``FLASHCHECK_HYPOTHESIS_PROFILE``, then ``ci`` on CI, then ``dev``.

Hypothesis ships its own profile named ``ci`` and loads it *when hypothesis is imported*
if it detects CI (the ``CI`` variable set to any value, even ``false``, or a vendor
variable such as ``GITHUB_ACTIONS=true``). Registering a profile under the name of the
active one reloads it at once (``settings.register_profile`` calls ``load_profile`` when
the name is the current profile's), so registering ours replaces hypothesis's both in the
registry and as the active default. Two consequences worth knowing:

- every profile here names its parent (hypothesis's ``default`` profile) explicitly. A
  ``settings(...)`` built without a parent takes every unset field from the *currently
  active* profile, so under CI a ``dev`` profile made that way would silently inherit
  ``derandomize=True`` and ``database=None`` from hypothesis's ``ci``;
- ``@settings(...)`` objects created before registration (test modules imported before
  the conftest that registers) keep the old profile as their fallback: register from the
  top of ``conftest.py``, before tests are collected. pytest's ``--hypothesis-profile``
  option is applied after the conftest is imported, so it still wins over
  :func:`load_hypothesis_profile`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

#: The hypothesis profiles flashcheck registers.
HYPOTHESIS_PROFILES = ("ci", "dev", "gpu", "fuzz", "smoke")

#: Environment variable naming the hypothesis profile to load.
PROFILE_VARIABLE = "FLASHCHECK_HYPOTHESIS_PROFILE"

# Kernel cases are slow to run (not to generate), and strategies steered by a property's
# `applies` filter may reject many draws; neither is a problem worth failing a run for.
_SUPPRESSED = (HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much)


def _profile_settings() -> dict[str, settings]:
    # The parent is named so that nothing is inherited from whatever profile happens to be
    # active (under CI: hypothesis's own "ci"); see the module docstring.
    base = settings.get_profile("default")
    common = dict(deadline=None, suppress_health_check=_SUPPRESSED)
    return {
        "ci": settings(base, max_examples=25, derandomize=True, database=None, print_blob=True, **common),
        "dev": settings(base, max_examples=50, **common),
        "gpu": settings(base, max_examples=200, print_blob=True, **common),
        "fuzz": settings(base, max_examples=10**6, print_blob=True, **common),
        # For peers that compile anew for every shape (compiled FlexAttention: 5-60 s each):
        # no shrinking either, since every shrunk shape is another compilation (a failure
        # on an H100 was still shrinking after minutes); the failing case is reported as drawn.
        "smoke": settings(base, max_examples=5, derandomize=True, database=None, print_blob=True,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate), **common),
    }


def register_hypothesis_profiles() -> None:
    """Register (or re-register) the ``ci``, ``dev``, ``gpu``, ``fuzz`` and ``smoke`` profiles.

    ``ci`` deliberately replaces hypothesis's built-in profile of that name; if that one
    is active (hypothesis detected CI at import), ours becomes active immediately. Call it
    at module level (a conftest), not inside a test: hypothesis deprecates registering
    while an ``@settings`` decorator is in effect.
    """
    global _registered
    for name, profile in _profile_settings().items():
        settings.register_profile(name, profile)
    _registered = True


def _in_ci(environ) -> bool:
    if "CI" in environ:  # any value, as hypothesis itself decides
        return True
    if environ is os.environ:
        # Also honour hypothesis's vendor detection (GITHUB_ACTIONS, GITLAB_CI, ...), so that
        # wherever hypothesis would have loaded its "ci" profile we load ours. Private API:
        # tolerate its absence.
        try:
            from hypothesis._settings import is_in_ci
        except ImportError:  # pragma: no cover - depends on the hypothesis version
            return False
        return bool(is_in_ci())
    return False


def hypothesis_profile_name(name: str | None = None, *, environ=None) -> str:
    """The profile :func:`load_hypothesis_profile` would load: ``name`` if given, else
    ``$FLASHCHECK_HYPOTHESIS_PROFILE`` if set and non-empty, else ``"ci"`` on CI (the
    ``CI`` variable set, to any value), else ``"dev"``. ``environ`` defaults to
    ``os.environ``."""
    environ = os.environ if environ is None else environ
    if name is not None:
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name: expected a profile name, got {name!r}")
        return name
    chosen = environ.get(PROFILE_VARIABLE, "")
    if chosen:
        return chosen
    return "ci" if _in_ci(environ) else "dev"


def load_hypothesis_profile(name: str | None = None) -> str:
    """Load a hypothesis settings profile and return its name (see
    :func:`hypothesis_profile_name` for the choice).

    flashcheck's profiles are registered first if this process has not registered them
    yet. Any registered profile may be named, hypothesis's ``default`` included; an
    unknown name raises ``InvalidArgument`` naming where it came from.
    """
    if not _registered:
        register_hypothesis_profiles()
    chosen = hypothesis_profile_name(name)
    try:
        # Looked up before loading: settings.load_profile makes an unknown name current before
        # it fails, and every later register_profile then raises KeyError.
        settings.get_profile(chosen)
    except InvalidArgument:
        source = "argument" if name is not None else f"${PROFILE_VARIABLE}"
        raise InvalidArgument(
            f"hypothesis profile {chosen!r} (from {source}) is not registered; "
            f"flashcheck registers {list(HYPOTHESIS_PROFILES)}"
        ) from None
    settings.load_profile(chosen)
    return chosen


_registered = False
