"""Calling an implementation through the protocol and checking what it returns.

An implementation is ``attention(q, k, v, *, causal, window, softmax_scale, attn_mask,
cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> (out, lse)`` (see docs/protocol.md).
It may carry ``flashcheck_features``, a set naming what it supports,
``flashcheck_known_divergences``, a mapping from property name to the reason the
implementation is known to break it, optionally confined to some cases (see
:func:`known_divergences`), and ``flashcheck_not_applicable``, a mapping from property name
to the reason the kernel's documented contract excludes every case the property draws (see
:func:`not_applicable`), ``flashcheck_case_domain``, the values of a case it runs (see
:func:`case_domain_of`), ``flashcheck_compile_key``, the case attributes that select one
of its compiled variants (see :func:`compile_key_of`), and ``flashcheck_autotuners``, the Triton
autotuners flashcheck pins (see :func:`autotuners_of`).
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Mapping

import torch

from flashcheck import autotune_pin
from flashcheck.cases import compile_classes, domain as case_domain, phases as case_phases
from flashcheck.cases.domain import CaseDomain
from flashcheck.divergences import as_known_divergence, KnownDivergence
from flashcheck.oracle.compare import Violation

#: The protocol's features, plus three extensions: "out" (accepts preallocated ``out=`` and
#: ``lse_out=`` tensors and writes them in place), "tf32" (multiplies float32 operands as
#: TF32, which the tolerance model then allows for) and "lse_grad" (the lse it returns is
#: differentiable: autograd tracks it and its backward takes the lse's upstream gradient).
ALL_FEATURES = frozenset({"causal", "window", "gqa", "varlen", "mask", "backward", "lse", "out", "tf32",
                          "lse_grad"})
#: What a feature needs declared beside it.
NEEDS = {"lse_grad": frozenset({"lse", "backward"})}
PROTOCOL_FEATURES = frozenset({"causal", "window", "gqa", "varlen", "mask", "backward", "lse"})
DTYPE_NAMES = frozenset({"float16", "bfloat16", "float32"})
#: Held against an implementation that declares nothing; see :func:`features_of`.
DEFAULT_FEATURES = frozenset({"causal", "window", "gqa", "mask", "backward", "lse"}) | DTYPE_NAMES


def features_of(impl, device=None) -> frozenset:
    """What ``impl`` supports, as a frozenset of ALL_FEATURES and DTYPE_NAMES.

    * With ``device`` (a torch.device or string, e.g. ``"cuda:0"``) and an impl
      carrying ``flashcheck_features_by_device`` (as the adapters here do): that
      device kind's set, empty where the impl cannot run.
    * Otherwise ``flashcheck_features``.  The protocol lists dtypes only when
      limited, so a declared set naming no dtype gets all of DTYPE_NAMES.
    * A declared name outside ALL_FEATURES and DTYPE_NAMES is a ValueError (see
      :func:`check_declaration`).
    * Without any declaration: DEFAULT_FEATURES, the whole dense protocol
      (causal, window, gqa, mask, lse, backward, every dtype) but not varlen.
      Conservative in a verifier's sense: an undeclared implementation is held
      to everything the dense protocol promises, lse and autograd included, so
      no part of its contract goes silently untested; if it lacks a part, the
      failure says which and its author declares the features.  Varlen is left
      out because it is another layout (packed 3-D tensors) that a dense-only
      implementation would misread rather than reject.
    """
    try:
        by_device = getattr(impl, "flashcheck_features_by_device", None)
        if device is not None and by_device is not None:
            return _checked("flashcheck_features_by_device", by_device.get(torch.device(device).type, frozenset()))
        declared = getattr(impl, "flashcheck_features", None)
        if declared is None:
            return DEFAULT_FEATURES
        declared = _checked("flashcheck_features", declared)
    except ValueError as error:
        raise ValueError(f"{_describe(impl)}: {error}") from None
    return declared if declared & DTYPE_NAMES else declared | DTYPE_NAMES


def device_kinds_of(impl) -> frozenset | None:
    """The device kinds (``"cuda"``, ``"cpu"``) ``impl`` declares it runs on, through
    ``flashcheck_features_by_device``: those with a non-empty feature set. None where it
    declares no device kinds (it is held to run anywhere)."""
    by_device = getattr(impl, "flashcheck_features_by_device", None)
    if by_device is None:
        return None
    return frozenset(kind for kind, features in by_device.items() if features)


def check_declaration(impl) -> None:
    """Raise ValueError, one line naming the offending feature or property (the caller names
    the implementation), unless every feature ``impl`` declares (``flashcheck_features``, each
    set of ``flashcheck_features_by_device``) is one of :data:`ALL_FEATURES` or
    :data:`DTYPE_NAMES`, and every property it declares not applicable
    (``flashcheck_not_applicable``) is a registered property with a reason: a misspelt
    feature would otherwise leave a property silently undrawn, or fail deep inside a run, and
    a misspelt property would leave the one meant running (and failing as "nothing checked")."""
    declared = getattr(impl, "flashcheck_features", None)
    if declared is not None:
        _checked("flashcheck_features", declared)
    by_device = getattr(impl, "flashcheck_features_by_device", None)
    if by_device is not None:
        for kind, features in dict(by_device).items():
            _check_device_kind(kind)
            _checked("flashcheck_features_by_device", features)
    not_applicable(impl)
    declared_domain = getattr(impl, "flashcheck_case_domain", None)
    if declared_domain is not None:
        case_domain.parse(declared_domain)
    domains = getattr(impl, "flashcheck_case_domain_by_device", None)
    if domains is not None:
        if not isinstance(domains, Mapping):
            raise ValueError("flashcheck_case_domain_by_device must be a mapping from device kind to a case domain; "
                             f"got {type(domains).__name__}")
        for kind, domain in domains.items():
            _check_device_kind(kind, "flashcheck_case_domain_by_device")
            case_domain.parse(domain, f"flashcheck_case_domain_by_device[{kind!r}]")
    compile_key_of(impl)
    autotuners_of(impl)


def declared_case_domain(impl, device=None) -> CaseDomain | None:
    """The values of a case ``impl`` declares it runs (:mod:`flashcheck.cases.domain`): with
    ``device`` and a ``flashcheck_case_domain_by_device`` naming its kind, that kind's domain;
    else ``flashcheck_case_domain``; None where it declares none. ValueError, naming the
    implementation, the attribute and the key, for a malformed declaration."""
    try:
        by_device = getattr(impl, "flashcheck_case_domain_by_device", None)
        if device is not None and by_device is not None:
            kind = torch.device(device).type
            if kind in by_device:
                return case_domain.parse(by_device[kind], f"flashcheck_case_domain_by_device[{kind!r}]")
        declared = getattr(impl, "flashcheck_case_domain", None)
        return None if declared is None else case_domain.parse(declared)
    except ValueError as error:
        raise ValueError(f"{_describe(impl)}: {error}") from None


def case_domain_of(impl, device=None) -> CaseDomain:
    """:func:`declared_case_domain`, every case where nothing is declared."""
    return declared_case_domain(impl, device) or CaseDomain()


def compile_key_of(impl) -> tuple[str, ...] | None:
    """The case attributes (:data:`flashcheck.cases.compile_classes.KEY_ATTRIBUTES`) that select
    one of ``impl``'s compiled variants, as it declares them in ``flashcheck_compile_key``:
    a collection of attribute names (empty: nothing is compiled per case, as for torch's
    math backend), or None when it declares none, and Triton's specialisation is assumed
    (:class:`flashcheck.cases.compile_classes.CompileClass`). ValueError, one line naming the
    attribute, for a name that is no case attribute."""
    declared = getattr(impl, "flashcheck_compile_key", None)
    if declared is None:
        return None
    if isinstance(declared, (str, bytes)) or not isinstance(declared, (list, tuple, set, frozenset)):
        raise ValueError(f"flashcheck_compile_key must be a collection of case attribute names from "
                         f"{', '.join(compile_classes.KEY_ATTRIBUTES)}; got {declared!r}")
    unknown = [name for name in declared if name not in compile_classes.KEY_ATTRIBUTES]
    if unknown:
        raise ValueError(f"flashcheck_compile_key names {unknown[0]!r}, which is no case attribute; expected names "
                         f"from {', '.join(compile_classes.KEY_ATTRIBUTES)}")
    return tuple(dict.fromkeys(declared))


def autotuners_of(impl) -> tuple:
    """The Triton autotuners ``impl`` declares in ``flashcheck_autotuners`` for flashcheck to pin
    (:mod:`flashcheck.autotune_pin`: each compiled variant runs one configuration, chosen from the
    call, instead of timing them all): each entry a kernel decorated with ``triton.autotune``, or
    an object holding one as ``.fn``. Empty where it declares none. ValueError, one line naming
    the attribute and the entry, for anything else."""
    declared = getattr(impl, "flashcheck_autotuners", None)
    if declared is None:
        return ()
    if isinstance(declared, (str, bytes)) or not isinstance(declared, (list, tuple, set, frozenset)):
        raise ValueError("flashcheck_autotuners must be a collection of Triton autotuned kernels (triton.autotune); "
                         f"got {declared!r}")
    tuners = []
    for index, entry in enumerate(declared):
        tuner = autotune_pin.autotuner_in(entry)
        if tuner is None:
            raise ValueError(f"flashcheck_autotuners[{index}] is {entry!r:.80}, which holds no Triton autotuner; "
                             "expected a kernel decorated with triton.autotune, or an object holding one as .fn")
        tuners.append(tuner)
    return tuple(tuners)


def _check_device_kind(kind, attribute: str = "flashcheck_features_by_device") -> None:
    """ValueError unless ``kind`` is a device kind as torch names it (``torch.device(x).type``):
    a misspelt one ("gpu") would leave the real kind without features, every property but the
    plain dense ones silently off there."""
    try:
        device = torch.device(kind) if isinstance(kind, str) else None
    except RuntimeError:
        device = None
    if device is None or device.type != kind:
        expected = f"'{device.type}'" if device is not None else "a kind such as 'cpu' or 'cuda'"
        raise ValueError(f"{attribute} names {kind!r}, not a device kind torch knows; "
                         f"expected {expected}")


def _checked(attribute: str, declared) -> frozenset:
    """``declared`` as a frozenset of feature names; ValueError for a name the protocol
    does not have (a plain string is a common slip: it would read as its letters)."""
    if isinstance(declared, str):
        raise ValueError(f"{attribute} must be a set of feature names, got the string {declared!r}")
    declared = frozenset(declared)
    unknown = sorted(str(feature) for feature in declared - ALL_FEATURES - DTYPE_NAMES)
    if unknown:
        raise ValueError(f"{attribute} names unknown feature{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; known: {', '.join(sorted(ALL_FEATURES | DTYPE_NAMES))}")
    for feature, needed in NEEDS.items():
        if feature in declared and not needed <= declared:
            raise ValueError(f"{attribute} names {feature!r}, which needs {' and '.join(map(repr, sorted(needed)))} "
                             f"declared too; missing: {', '.join(map(repr, sorted(needed - declared)))}")
    return declared


def _describe(impl) -> str:
    module, name = getattr(impl, "__module__", None), getattr(impl, "__qualname__", None)
    return f"{module}:{name}" if module and name else repr(impl)


def prepare(impl) -> None:
    """Load what ``impl`` needs before its first case: its ``flashcheck_prepare()``, where it
    has one (the built-in adapters of other libraries import their library there). Every
    entry point calls it once, right after resolving the implementation, so that a library
    that is installed but cannot be imported is a usage error before any case (ValueError,
    one line, naming the pip command where the adapter knows it), never a finding on the
    first case drawn. Then pins the Triton autotuners it declares (:func:`autotuners_of`)."""
    hook = getattr(impl, "flashcheck_prepare", None)
    if hook is not None:
        if not callable(hook):
            raise ValueError(f"flashcheck_prepare must be callable, got {type(hook).__name__}")
        hook()
    if autotuners_of(impl):  # each entry pinned through what holds it (autotune_pin.pin)
        for entry in impl.flashcheck_autotuners:
            autotune_pin.pin(entry)


def not_applicable(impl) -> dict[str, str]:
    """The properties ``impl`` declares not applicable (``flashcheck_not_applicable``), each
    with its reason; empty when it declares none. The one place the declaration is read:
    :func:`flashcheck.engine.property_cases.not_applicable_because` (fuzzing, the pytest suite) and
    ``flashcheck check`` (through :func:`flashcheck.engine.property_cases.declared_not_applicable`) consult
    it through here.

    A declaration says that the kernel's documented contract excludes every case the property
    can draw inside the implementation's features (e.g. rows without keys, for a kernel whose
    only restriction is a top-left aligned causal mask): the property is then not run, and
    every summary shows it as not applicable with the reason, never as passed. It is not for
    a property the kernel breaks (that is a known divergence, :func:`known_divergences`).

    Raises ValueError, one line (the caller names the implementation), unless the declaration
    is a mapping from registered property names to non-empty reasons."""
    declared = getattr(impl, "flashcheck_not_applicable", None)
    if declared is None:
        return {}
    attribute = "flashcheck_not_applicable"
    if not isinstance(declared, Mapping):
        raise ValueError(f"{attribute} must be a mapping from property name to the reason, got "
                         f"{type(declared).__name__} {declared!r}")
    from flashcheck.properties import PROPERTIES  # not at import: the properties import this module

    unknown = sorted(str(name) for name in declared if name not in PROPERTIES)
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(PROPERTIES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"{attribute} names unknown propert{'ies' if len(unknown) > 1 else 'y'} "
                         f"{', '.join(map(repr, unknown))}{hint}; 'flashcheck list' lists the properties")
    for name, reason in declared.items():
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"{attribute}[{name!r}] must be the reason, a non-empty string citing where the "
                             f"kernel documents that it does not support the situation; got {reason!r}")
    return {str(name): " ".join(reason.split()) for name, reason in declared.items()}


def known_divergences(impl) -> dict[str, KnownDivergence]:
    """Properties ``impl`` is known to break, each as a :class:`KnownDivergence` (empty
    when none): the reason, and the cases it covers.

    A known divergence is a documented finding about a peer (e.g. a backward that
    accumulates dQ with atomics is not bitwise deterministic), not a licence to pass: the
    property still runs; a failure on a case the divergence covers is reported as an
    expected failure with the evidence, a failure on any other case as a failure, and a
    run that never shows a whole-property divergence as a pass worth a warning. Declared
    values are reasons (strings, covering every case) or KnownDivergence objects (see
    :mod:`flashcheck.divergences`).
    """
    declared = getattr(impl, "flashcheck_known_divergences", None) or {}
    return {str(name): as_known_divergence(value) for name, value in dict(declared).items()}


def default_device() -> str:
    """"cuda" when a GPU is usable by Triton here, else "cpu" (the interpreter)."""
    if os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available():
        return "cuda"
    return "cpu"


#: The attribute :func:`call` sets on a ``NotImplementedError`` the implementation raised: the
#: case of the call it declined.
DECLINED_CASE = "flashcheck_declined_case"


def call(impl, inputs, case, **extra):
    """Call ``impl`` on ``inputs`` with ``case``'s arguments (tensors on q's device), any of
    them replaced by ``extra``; check what it returned, raising
    :class:`~flashcheck.oracle.compare.Violation` unless it is ``(out, lse)`` with out a tensor of
    q's shape, dtype and device and lse a float32 tensor on q's device, or None where the
    implementation does not declare ``lse`` (packed: out ``(Tq, H, D)``, lse ``(H, Tq)``). Every property calls the implementation through here,
    so that what flashcheck goes on to compute with the results is well formed."""
    q, k, v = inputs
    with case_phases.phase("call"):
        try:
            result = impl(q, k, v, **{**case.attention_kwargs(q.device), **extra})
        except NotImplementedError as error:
            # A property may call the implementation on a case of its own making (one batch
            # entry's valid keys alone, say): a decline is of that call, which may lie outside
            # the case domain where the property's case lies inside it.
            setattr(error, DECLINED_CASE, getattr(error, DECLINED_CASE, case))
            raise
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Violation(f"protocol: expected (out, lse) from the implementation, got {type(result).__name__}")
    out, lse = result
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise Violation(
            f"protocol: out must be a tensor of shape {tuple(q.shape)} and dtype {q.dtype}, got "
            f"{tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__}"
            f"{'' if not isinstance(out, torch.Tensor) else ' ' + str(out.dtype)}"
        )
    if out.device != q.device:
        raise Violation(f"protocol: out must be on q's device {q.device}, got a tensor on {out.device}")
    if lse is None and "lse" in features_of(impl, q.device):
        # Every property checks the lse it gets: a declared lse that is not returned would
        # leave those checks silently unmade.
        raise Violation("protocol: the implementation declares the feature lse but returned no lse")
    if lse is not None:
        lse_shape = (q.shape[1], q.shape[0]) if q.dim() == 3 else (q.shape[0], q.shape[2], q.shape[1])
        if not isinstance(lse, torch.Tensor) or tuple(lse.shape) != lse_shape or lse.dtype != torch.float32:
            raise Violation(
                f"protocol: lse must be a float32 tensor of shape {lse_shape}, got "
                f"{f'{tuple(lse.shape)} {lse.dtype}' if isinstance(lse, torch.Tensor) else type(lse).__name__}"
            )
        if lse.device != q.device:
            raise Violation(f"protocol: lse must be on q's device {q.device}, got a tensor on {lse.device}")
    return out, lse


#: A process gives its cached GPU memory back after a case once its allocator holds more than
#: this share of the device's memory: up to 16 workers share a GPU.
RELEASE_SHARE = 1 / 16


def release_cached_memory(device) -> None:
    """Give the CUDA caching allocator's unused blocks back to the driver, after a case, where
    this process holds more than :data:`RELEASE_SHARE` of the device's memory.

    Test workers share a GPU (pytest-xdist, ``flashcheck fuzz --workers``), and what one
    worker's allocator keeps cached after a large case, the others cannot allocate: on an
    H100 with 16 workers under the ``gpu`` hypothesis profile, two cases failed with CUDA
    out of memory (once in a kernel's module load) while the other workers held 1.5 to 7.7 GB
    each, and passed when rerun. Below the share the cache is kept, so that the next case reuses
    its blocks instead of allocating afresh from the driver. A no-op on the CPU and before
    CUDA is initialised.
    """
    if torch.device(device).type != "cuda" or not torch.cuda.is_initialized():
        return
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    if torch.cuda.memory_reserved(index) > RELEASE_SHARE * torch.cuda.get_device_properties(index).total_memory:
        torch.cuda.empty_cache()


def storage_bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``tensor`` (padding of a view included), as bytes."""
    raw = torch.empty(0, dtype=torch.uint8, device=tensor.device)
    return raw.set_(tensor.untyped_storage())


@contextlib.contextmanager
def unchanged(tensors: dict, during: str):
    """Around a call of the implementation: raise :class:`Violation` naming the first
    of ``tensors`` (name -> tensor) whose storage (padding of a view included) ``during``
    changed, before anything is compared with its results.

    Every property that compares values runs the implementation through this
    (:func:`flashcheck.properties.common.call_checked`,
    :func:`flashcheck.oracle.backward_pass.gradients`): an implementation that writes into its
    inputs is reported for the write, not for what the write does to the comparisons (a
    result that differs from the reference, or a reference computed from the modified inputs
    that agrees with it)."""
    saved = {name: storage_bytes(t).clone() for name, t in tensors.items() if t is not None}
    yield
    for name, before in saved.items():
        after = storage_bytes(tensors[name])
        changed = after != before
        if changed.any():
            raise Violation(
                f"{name} was modified by {during}: {int(changed.sum())} of {changed.numel()} bytes of its "
                f"storage changed (first at byte {int(changed.nonzero()[0])}); an implementation must leave its "
                f"inputs as they were, and no result of this call is compared"
            )
