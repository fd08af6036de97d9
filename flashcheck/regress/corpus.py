"""Fixed corpora of cases, and measuring an implementation's error on one case without raising.

The fuzzer looks for a case that breaks a property; regression baselines and error reports
need the opposite: the *same* cases every time, and how close the implementation comes to
its allowance on each, as a number rather than a pass or a failure. This module holds both.

A :class:`Corpus` is a named, ordered tuple of :class:`~flashcheck.cases.case.Case` with fixed
seeds; its :meth:`~Corpus.digest` changes whenever a case (or the way cases are measured,
:data:`MEASURE_VERSION`) changes, so a baseline recorded on one corpus is never compared
with measurements of another. Two families:

- :data:`BASELINE_CORPORA`, for ``flashcheck baseline``: ``cpu`` (small, for Triton's
  interpreter: lengths <= 80, the whole corpus forward and backward in seconds), ``cuda``
  (real sizes: lengths to 4096, head dims 64/128/256, the three dtypes, every mask kind) and
  ``tiny`` (a handful of cases, for tests);
- :data:`SWEEPS`, for ``flashcheck report``: sequence-length sweeps per dtype
  (``sweep-cpu``, ``sweep-cuda``, ``sweep-tiny``).

:func:`measure` runs one case forward (and backward when the implementation declares
"backward") and returns, per output (out, lse, dq, dk, dv), the comparison's
:class:`~flashcheck.oracle.compare.Metrics` against the float64 reference under the derived
elementwise allowance; ``worst_ratio`` is the largest elementwise error/allowed.
"""

from __future__ import annotations

import dataclasses
import hashlib

import torch

from flashcheck import protocol
from flashcheck.cases.case import Case
from flashcheck.engine import attribution, verdict
from flashcheck.oracle import compare, expectation
from flashcheck.oracle.backward_inputs import GRAD_SCALES
from flashcheck.oracle.backward_pass import gradients
from flashcheck.oracle.compare import Violation, replay_command

#: Every output a case can be measured on, in report order.
OUTPUTS = ("out", "lse", "dq", "dk", "dv")
GRADIENTS = ("dq", "dk", "dv")
#: The kinds of :func:`mask_kind`, in the order :func:`_masked_cases` makes them.
MASK_KINDS = ("none", "causal", "window", "mask", "varlen")

#: Part of every corpus digest: bump it when :func:`measure` changes what it measures (the
#: upstream gradients, which elements count), so that old baselines are refused, not misread.
MEASURE_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Corpus:
    """A named, fixed, ordered set of cases."""

    name: str
    description: str
    cases: tuple[Case, ...]

    def digest(self) -> str:
        """sha256 (hex, first 16 digits) of the case specs in order and :data:`MEASURE_VERSION`."""
        text = "\n".join([f"measure-version={MEASURE_VERSION}", *(case.spec() for case in self.cases)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# -- what a case asks of an implementation ----------------------------------------------------

def needed_features(case: Case) -> frozenset:
    """The protocol features (and dtype name) an implementation needs to run ``case`` forward."""
    return case.features_needed | {case.dtype}


def outputs_for(features) -> tuple[str, ...]:
    """The outputs measured for an implementation with ``features``: out always, lse with
    "lse", the gradients with "backward"."""
    return tuple(
        name for name in OUTPUTS
        if name == "out" or (name == "lse" and "lse" in features) or (name in GRADIENTS and "backward" in features)
    )


# -- measuring -------------------------------------------------------------------------------

@dataclasses.dataclass
class OutputError:
    """How far one output of one case is from the float64 reference.

    ``metrics``: the elementwise comparison (``metrics.worst_ratio`` is the largest
    error/allowed, ``metrics.exceeding`` the elements beyond their allowance). ``limit``: for
    out and lse, the aggregate rule's largest error allowed anywhere (see
    :mod:`flashcheck.oracle.tolerance`), None for gradients. ``ratios``: with ``elementwise=True``,
    every element's error/allowed as a flat float64 CPU tensor (0 where exact, inf where
    nothing was allowed but something differs).
    """

    output: str
    metrics: compare.Metrics
    limit: float | None = None
    ratios: torch.Tensor | None = None

    @property
    def worst_ratio(self) -> float:
        return self.metrics.worst_ratio

    @property
    def exceeded(self) -> bool:
        """True when a property would fail on this comparison: some element beyond its
        allowance, or (out, lse) the largest error beyond the aggregate limit."""
        return self.metrics.exceeding > 0 or (self.limit is not None and self.metrics.max_abs > self.limit)


def measure(impl, case: Case, device, *, elementwise: bool = False) -> dict[str, OutputError]:
    """Measure ``impl`` on ``case`` on ``device``; never raises for an error beyond its allowance.

    Returns ``{output: OutputError}`` for the outputs of :func:`outputs_for` (the
    implementation's declared features on ``device``). The comparison is the properties'
    (``out_matches_reference``, ``lse_matches_reference``, ``grads_match_reference``): the
    same expectation, allowances and overflow rule (:func:`flashcheck.oracle.expectation.held_to`),
    and for the gradients the same seeded upstream gradients
    (:func:`flashcheck.oracle.backward_inputs.upstream`, dlse included when the
    implementation's lse is differentiable). ``elementwise=True`` also
    keeps every element's error/allowed (for histograms).

    Raises ValueError when ``case`` needs a feature ``impl`` does not declare (see
    :func:`needed_features`), :class:`~flashcheck.oracle.compare.Violation` when what the implementation
    returns breaks the protocol, and lets the implementation's own exceptions through.
    """
    features = protocol.features_of(impl, device)
    missing = needed_features(case) - features
    if missing:
        raise ValueError(f"case: needs {sorted(missing)}, which the implementation does not declare: {case.spec()}")
    outputs = outputs_for(features)
    inputs = case.materialize(device)
    kwargs = case.attention_kwargs(inputs[0].device)
    tf32 = "tf32" in features
    out, lse = protocol.call(impl, inputs, case)
    forward = expectation.expect(*inputs, tf32=tf32, **kwargs)
    allowed = forward.allowed("out")
    results = {"out": _compare("out", out, expectation.held_to(forward.expected_out, out, allowed), allowed,
                               forward.limits["out"], elementwise)}
    if "lse" in outputs:
        if lse is None:
            raise Violation("protocol: the implementation declares 'lse' but returned lse=None")
        results["lse"] = _compare("lse", lse, forward.expected_lse, forward.allowed("lse"), forward.limits["lse"],
                                  elementwise)
    if "dq" in outputs:
        grads, grad_out, grad_lse = gradients(impl, case, inputs)
        backward = expectation.expect_gradients(*inputs, grad_out, grad_lse, tf32=tf32, **kwargs)
        for name, got in zip(GRADIENTS, grads):
            allowed = backward.allowed(name)
            results[name] = _compare(name, got, expectation.held_to(backward.expected(name), got, allowed), allowed,
                                     None, elementwise)
    return results


@dataclasses.dataclass
class CaseResult:
    """One case of a corpus run: its measurements, why it was skipped, or what the
    implementation raised on it (``raised``: its exception's type and first line, a
    finding)."""

    case: Case
    outputs: dict[str, OutputError] = dataclasses.field(default_factory=dict)
    skipped: str | None = None
    raised: str | None = None


def run_case(impl, case: Case, device, *, elementwise: bool = False) -> CaseResult:
    """:func:`measure` one case; or a skipped :class:`CaseResult` saying why: ``impl`` does not
    declare a feature the case needs, or declines the case (a ``NotImplementedError`` of its
    own, the adapters' way of saying a peer cannot express it:
    :func:`flashcheck.engine.attribution.deliberate_decline`); or, when the implementation raised
    anything else (a ``NotImplementedError`` of torch's included) or returned what the
    protocol does not allow (:class:`~flashcheck.oracle.compare.Violation`), a result naming it.
    flashcheck's own errors, and an error that leaves the process's CUDA context dead
    (:func:`flashcheck.engine.verdict.is_fatal`), propagate."""
    missing = needed_features(case) - protocol.features_of(impl, device)
    if missing:
        return CaseResult(case, skipped=f"needs {', '.join(sorted(missing))}")
    try:
        return CaseResult(case, measure(attribution.calling(impl), case, device, elementwise=elementwise))
    except Exception as error:  # noqa: BLE001 - classified by who raised it
        # A Violation here is the protocol broken by what the implementation returned.
        raiser = attribution.Raiser.IMPLEMENTATION if isinstance(error, Violation) else attribution.raised_by(error, impl)
        if raiser is attribution.Raiser.FLASHCHECK or verdict.is_fatal(error):
            raise
        message = verdict.first_line(error)
        if raiser is attribution.Raiser.DECLINE:
            return CaseResult(case, skipped=f"declined: {message or 'NotImplementedError'}")
        return CaseResult(case, raised=f"{type(error).__name__}: {message}".rstrip(": "))


def raised_lines(impl_name: str, impl, results, device) -> list[str]:
    """For each result whose case ``impl`` raised on, a line naming the error and the case,
    and the command line that replays it (the gradients' property where ``impl`` declares
    "backward": it runs the forward call and the backward pass alike)."""
    prop = "grads_match_reference" if "backward" in protocol.features_of(impl, device) else "out_matches_reference"
    return [f"  raised {r.raised} on {r.case.spec()}\n    replay: {replay_command(impl_name, prop, r.case.spec())}"
            for r in results if r.raised]


def measure_corpus(impl, corpus: Corpus, device, *, elementwise: bool = False, on_case=None) -> list[CaseResult]:
    """:func:`run_case` every case of ``corpus`` in order, in this process. ``on_case(index,
    result)`` is called after each case (progress display).
    :func:`flashcheck.regress.corpus_workers.measure_corpus` spreads the same work over worker
    processes."""
    results = []
    for index, case in enumerate(corpus.cases):
        result = run_case(impl, case, device, elementwise=elementwise)
        results.append(result)
        if on_case is not None:
            on_case(index, result)
    return results


def _compare(name, got, expected, allowed, limit, elementwise) -> OutputError:
    metrics = compare.measure(got.detach(), expected, allowed)
    ratios = None
    if elementwise:
        error = compare.errors(got.detach(), expected)
        allowed = allowed.to(torch.float64).to(error.device).expand_as(error)
        ratios = torch.where(error == 0, torch.zeros_like(error), error / allowed).flatten().cpu()
    return OutputError(name, metrics, limit, ratios)


# -- classes of a case, for buckets and plots ---------------------------------------------------

def length_of(case: Case) -> int:
    """The length that sets a case's difficulty: the longest query or key run of one
    sequence (per packed sequence for varlen, the padded lengths for dense)."""
    if case.varlen:
        return max((max(pair) for pair in case.seqlens), default=0)
    return max(case.seqlen_q, case.seqlen_k)


def mask_kind(case: Case) -> str:
    """One of ``none``, ``causal``, ``window``, ``mask`` (a boolean attn_mask) and ``varlen``
    (packed sequences), the most specific that applies: a packed causal case is varlen, a
    causal case with an attn_mask is mask."""
    if case.varlen:
        return "varlen"
    if not case.mask.is_none:
        return "mask"
    if case.window != (-1, -1):
        return "window"
    return "causal" if case.causal else "none"


# -- the corpora -----------------------------------------------------------------------------------

def _seed(*parts) -> int:
    """A fixed seed per corpus slot: stable across Python processes (no ``hash``)."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


def _masked_cases(tag: str, dtype: str, head_dim: int, n: int, heads: int, kv_heads: int) -> list[Case]:
    """One case of each mask kind at length ``n`` (queries slightly fewer than keys, so the
    bottom-right alignment of causal and window matters)."""
    common = dict(dtype=dtype, head_dim=head_dim, heads=heads, kv_heads=kv_heads)
    nq, nk = max(1, n - n // 4 - 1), n
    third = max(1, n // 3)
    # Three sequences of different lengths, one of them with no keys, summing to about 2n
    # tokens per side with the longest run n.
    packed = ((n, n - third), (third, 0), (n // 2 + 1, n))
    return [
        Case(seqlen_q=n, seqlen_k=n, seed=_seed(tag, dtype, head_dim, n, "none"), **common),
        Case(seqlen_q=nq, seqlen_k=nk, causal=True, seed=_seed(tag, dtype, head_dim, n, "causal"), **common),
        Case(seqlen_q=nq, seqlen_k=nk, window=(third, third // 2), seed=_seed(tag, dtype, head_dim, n, "window"),
             **common),
        Case(seqlen_q=nq, seqlen_k=nk, mask="random:0.6,rows:1", seed=_seed(tag, dtype, head_dim, n, "mask"),
             **common),
        Case.packed(packed, causal=True, seed=_seed(tag, dtype, head_dim, n, "varlen"), **common),
    ]


def _cpu_corpus() -> Corpus:
    # Per dtype, every mask kind once, alternating short (within two 16-wide interpreter
    # blocks) and long (several blocks, up to the interpreter sizes' 80) lengths and the two
    # head-dim classes so that each dtype sees every length and head-dim class. GQA 2:1 on
    # every case: it costs nothing and exercises the grouped dK/dV sums.
    cases = []
    for d_index, dtype in enumerate(("float16", "bfloat16", "float32")):
        for slot, (head_dim, n) in enumerate(((16, 24), (64, 72), (32, 80), (64, 30), (16, 56))):
            kind_cases = _masked_cases("cpu", dtype, head_dim, n, heads=2, kv_heads=1)
            cases.append(kind_cases[(slot + d_index) % len(kind_cases)])
    return Corpus("cpu", "interpreter sizes: 3 dtypes x 5 mask kinds, lengths <= 80, head dims 16-64", tuple(cases))


def _cuda_corpus() -> Corpus:
    # Every dtype x mask kind x length class, the head dim rotating through 64/128/256 so that
    # each dtype meets each head dim at every length and with five of the fifteen (mask,
    # length) pairs: 45 cases, not the whole cross product, since on a GPU nearly all of a
    # case's cost is compiling the kernel variants it needs (times in docs/performance.md).
    # Heads are few and the batch is one: the float64 reference and the tolerance model
    # materialise (B, H, Nq, Nk) tensors, and the cost is in the sequence lengths anyway.
    cases = []
    head_dims = (64, 128, 256)
    for d_index, dtype in enumerate(("float16", "bfloat16", "float32")):
        for l_index, n in enumerate((200, 1024, 4096)):
            heads, kv_heads = (4, 2) if n <= 1024 else (2, 1)
            for m_index in range(len(MASK_KINDS)):
                head_dim = head_dims[(d_index + l_index + m_index) % len(head_dims)]
                cases.append(_masked_cases("cuda", dtype, head_dim, n, heads=heads, kv_heads=kv_heads)[m_index])
    return Corpus("cuda", "GPU sizes: 3 dtypes x 5 mask kinds x lengths 200/1024/4096, head dims 64/128/256 "
                  "rotating", tuple(cases))


def _tiny_corpus() -> Corpus:
    cases = _masked_cases("tiny", "float16", 16, 20, heads=2, kv_heads=1)[:2]
    cases.append(_masked_cases("tiny", "bfloat16", 16, 20, heads=2, kv_heads=1)[4])
    return Corpus("tiny", "for tests: 3 small cases (none and causal float16, varlen bfloat16)", tuple(cases))


def _sweep(name: str, description: str, lengths, head_dim: int, heads: int) -> Corpus:
    # Seeds chosen modulo len(GRAD_SCALES) give every case the upstream gradient of
    # scale 1 (backward_inputs.upstream picks the scale by seed), so that the gradient errors
    # of different lengths are comparable on one plot.
    def seed(*parts):
        value = _seed(*parts)
        return value - value % len(GRAD_SCALES) + GRAD_SCALES.index(1.0)

    cases = tuple(
        Case(seqlen_q=n, seqlen_k=n, heads=heads, kv_heads=heads, head_dim=head_dim, dtype=dtype, causal=True,
             seed=seed(name, dtype, n))
        for dtype in ("float16", "bfloat16", "float32")
        for n in lengths
    )
    return Corpus(name, description, cases)


BASELINE_CORPORA = {corpus.name: corpus for corpus in (_cpu_corpus(), _cuda_corpus(), _tiny_corpus())}

SWEEPS = {
    corpus.name: corpus
    for corpus in (
        _sweep("sweep-cpu", "causal, head dim 32, lengths 8-80 per dtype", (8, 16, 24, 40, 56, 80), 32, 2),
        _sweep("sweep-cuda", "causal, head dim 128, lengths 128-8192 per dtype",
               (128, 256, 512, 1024, 2048, 4096, 8192), 128, 1),
        _sweep("sweep-tiny", "for tests: causal, head dim 16, lengths 8 and 20 per dtype", (8, 20), 16, 1),
    )
}


def device_kind(device) -> str:
    """``"cuda"`` or ``"cpu"``: which corpus size a device gets."""
    return torch.device(device).type


def get(name: str, family: dict, argument: str = "--corpus") -> Corpus:
    """The corpus ``name`` of ``family`` (:data:`BASELINE_CORPORA` or :data:`SWEEPS`);
    ValueError naming ``argument`` otherwise."""
    if name not in family:
        raise ValueError(f"{argument}: unknown corpus {name!r}; known: {', '.join(family)}")
    return family[name]
