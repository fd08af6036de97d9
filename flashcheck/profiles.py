"""How big drawn cases may be, and how hard hypothesis looks: size and settings profiles.

**Size profiles.** A :class:`SizeProfile` bounds the structure that
:mod:`flashcheck.strategies` draws: batch, heads, GQA ratio, sequence lengths, head dim,
the kernel block sizes whose neighbours (``b - 1``, ``b``, ``b + 1``) are worth drawing
often, the dtypes, and ``max_elements``, a cap on ``batch * heads * seqlen_q * seqlen_k``
(the number of attention scores) so that one case stays cheap for both the kernel and the
float64 reference. Two are named:

- :data:`INTERPRETER`: for Triton's CPU interpreter (16 x 16 blocks), lengths up to 80
  so that a case still spans several blocks, at most 2^16 scores per case;
- :data:`GPU`: real block sizes (32, 64, 128), lengths up to 2048 and now and then up to
  8192, at most 2^26 scores per case, drawn compile-aware (``focus``).

**Compile-aware drawing** (``focus``). On a GPU a drawn case costs milliseconds to run and
seconds to compile whenever its Triton specialisation is new, so a profile with ``focus``
draws most cases inside a few *compile classes* (:func:`flashcheck.strategies.compile_classes`):
each pins what decides a compilation (dtype, packed or masked, head-dim bucket and its
residue, sign of the scale, layout, head counts, the lengths' residues mod 16) and leaves
the rest free (lengths within their residue, windows, masks, batch, values, seed). The
classes jointly reach every pair of kernel-variant choices (dtype, head-dim tile, full tile
or not, mode, sign of the scale); one case in :data:`flashcheck.strategies.FOCUS_ESCAPE` is
drawn without them, so that every case stays drawable. ``focus_seed`` picks the classes:
another seed, other classes (a long fuzz run may change it from worker to worker).

:func:`size_profile` picks one by name, or by the machine when no name is given.

**Hypothesis profiles.** :func:`register_hypothesis_profiles` registers five settings
profiles: ``ci`` (deterministic: derandomized, no example database, 25 examples),
``dev`` (50 examples), ``gpu`` (200 examples), ``fuzz`` (a million examples: stop it
with a time budget) and ``smoke`` (5 derandomized examples, not shrunk, for peers that
compile anew for every shape). None has a deadline: kernel runs, above all in the interpreter, vary
too much in time for one. :func:`load_hypothesis_profile` loads one, chosen by argument,
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

import dataclasses
import os
import random

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import InvalidArgument

# -- size profiles ------------------------------------------------------------------------

_DTYPE_NAMES = ("float16", "bfloat16", "float32")


@dataclasses.dataclass(frozen=True)
class SizeProfile:
    """Bounds on the cases :mod:`flashcheck.strategies` draws.

    ``max_seqlen`` bounds the lengths drawn routinely; ``long_seqlen`` (>= ``max_seqlen``)
    bounds the lengths drawn now and then, beyond it. ``max_kv_ratio`` bounds
    ``heads // kv_heads``. ``block_sizes`` are the kernel's tile sizes on this kind of
    device, whose neighbours ``b - 1``, ``b``, ``b + 1`` are drawn often. ``max_elements``
    caps ``batch * heads * seqlen_q * seqlen_k``. ``dtypes`` are dtype names from
    :data:`flashcheck.case.DTYPES`, simplest first.
    """

    name: str
    max_batch: int
    max_heads: int
    max_kv_ratio: int
    max_seqlen: int
    long_seqlen: int
    max_head_dim: int
    block_sizes: tuple[int, ...]
    max_elements: int
    dtypes: tuple[str, ...] = _DTYPE_NAMES
    focus: bool = False
    focus_seed: int = 0

    def __post_init__(self):
        for field in ("max_batch", "max_heads", "max_kv_ratio", "max_seqlen", "long_seqlen",
                      "max_head_dim", "max_elements"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field}: expected a positive int, got {value!r}")
        if self.long_seqlen < self.max_seqlen:
            raise ValueError(
                f"long_seqlen: expected at least max_seqlen={self.max_seqlen}, got {self.long_seqlen}"
            )
        object.__setattr__(self, "block_sizes", tuple(self.block_sizes))
        if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in self.block_sizes):
            raise ValueError(f"block_sizes: expected positive ints, got {self.block_sizes!r}")
        if not isinstance(self.focus, bool):
            raise ValueError(f"focus: expected True or False, got {self.focus!r}")
        if not isinstance(self.focus_seed, int) or isinstance(self.focus_seed, bool):
            raise ValueError(f"focus_seed: expected an int, got {self.focus_seed!r}")
        object.__setattr__(self, "dtypes", tuple(self.dtypes))
        if not self.dtypes or any(d not in _DTYPE_NAMES for d in self.dtypes):
            raise ValueError(f"dtypes: expected a non-empty subset of {_DTYPE_NAMES}, got {self.dtypes!r}")


#: Triton's CPU interpreter: the kernel runs 16 x 16 blocks, so lengths up to 80 span
#: five query and key blocks; 2^16 scores keep one case well under a second.
INTERPRETER = SizeProfile(
    name="interpreter",
    max_batch=2,
    max_heads=8,
    max_kv_ratio=8,
    max_seqlen=80,
    long_seqlen=80,
    max_head_dim=256,
    block_sizes=(16, 32),
    max_elements=1 << 16,
)

#: A CUDA GPU: BLOCK_M and BLOCK_N range from 16 to 128 depending on dtype and head dim
#: (see ``kernels/config.py``); 2^26 scores is 512 MB of float64 reference scores in
#: the worst case, which the reference's query chunking keeps bounded. Compile-aware
#: (``focus``): there a new compilation costs seconds, a case milliseconds.
GPU = SizeProfile(
    name="gpu",
    max_batch=4,
    max_heads=16,
    max_kv_ratio=16,
    max_seqlen=2048,
    long_seqlen=8192,
    max_head_dim=256,
    block_sizes=(32, 64, 128),
    max_elements=1 << 26,
    focus=True,
)

SIZE_PROFILES = {profile.name: profile for profile in (INTERPRETER, GPU)}


def with_focus_seed(profile: SizeProfile, seed: int | None = None) -> SizeProfile:
    """``profile`` drawing in the compile classes of ``seed`` (None: a random one), where it
    draws compile-aware (``focus``); as it is otherwise. For parallel fuzz workers: each
    then compiles its own few classes once, and together they reach many."""
    if not profile.focus:
        return profile
    return dataclasses.replace(profile, focus_seed=random.getrandbits(32) if seed is None else seed)


def size_profile(name: str | SizeProfile | None = None) -> SizeProfile:
    """The size profile called ``name`` (``"interpreter"`` or ``"gpu"``, any case).

    With ``None``: :data:`GPU` when CUDA is available and Triton is not forced into its
    interpreter (``TRITON_INTERPRET=1``), else :data:`INTERPRETER`. A :class:`SizeProfile`
    is returned as it is.
    """
    if isinstance(name, SizeProfile):
        return name
    if name is None:
        import torch  # deferred: choosing a named profile should not need torch

        on_gpu = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
        return GPU if on_gpu else INTERPRETER
    if not isinstance(name, str):
        raise TypeError(f"size profile: expected a name or None, got {name!r}")
    try:
        return SIZE_PROFILES[name.lower()]
    except KeyError:
        raise ValueError(f"size profile: unknown {name!r}; known: {sorted(SIZE_PROFILES)}") from None


# -- hypothesis settings profiles -----------------------------------------------------------

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
