"""Metamorphic properties: transformations of the inputs whose effect on the exact result
is known, so the implementation is checked against itself as well as the reference.

Where a relation is exact in floating point (negating or doubling V, perturbing other
batches or heads, changing only the memory layout) the outputs must be exactly equal.
Where it is exact only in real arithmetic, the allowance is the sum of both sides'
derived tolerances plus the change of the float64 reference itself (which absorbs the
rounding of the transformed inputs to the input dtype).
"""

from __future__ import annotations

import torch

from flashcheck import protocol
from flashcheck.cases.case import one_group_kept, other_layout, seeded_generator
from flashcheck.oracle import compare
from flashcheck.properties.common import batched, call_checked, expect, laid_out_like, materialize
from flashcheck.properties.registry import prop


def permuted_keys(case, inputs):
    """key_permutation_invariance's second call: keys and values permuted jointly, by a
    permutation drawn from the case's seed, each in its own layout (the case's)."""
    q, k, v = inputs
    perm = torch.randperm(case.seqlen_k, generator=seeded_generator(case, 1)).to(k.device)
    return (q, *[laid_out_like(t, t[perm] if case.varlen else t[:, perm]) for t in (k, v)])


@prop(applies=lambda case: not case.is_masked and case.seqlen_k > 1, draw={"unmasked": True})
def key_permutation_invariance(impl, case, *, device=None):
    """Permuting keys and values jointly leaves output and lse unchanged (unmasked cases)."""
    inputs = materialize(case, device)
    out, lse = call_checked(impl, case, inputs)
    out_p, lse_p = call_checked(impl, case, permuted_keys(case, inputs))
    exp = expect(impl, case, inputs)
    what = "the output with keys in their original order"
    compare.check_close("out", out_p, out, 2 * exp.allowed("out"), what=what)
    if lse is not None:
        compare.check_close("lse", lse_p, lse, 2 * exp.allowed("lse"), what="the lse with keys in their original order")


def shifted_keys(case, inputs):
    """``inputs`` with one vector u added to every key (per batch entry and KV head; one for
    every packed key), u drawn from the case's seed so that the logits shift by 30, 300 or 3e4
    times their typical size; the shifted keys in K's own layout, the case's, as V keeps it: a
    kernel that reads V with K's strides then fails the layout that names the difference
    (``mixed``), not this property on a case whose K and V share their strides."""
    q, k, v = inputs
    generator = seeded_generator(case, 2)
    magnitude = [30.0, 300.0, 3e4][case.seed % 3]
    u = torch.randn(case.batch, 1, case.kv_heads, case.head_dim, generator=generator, dtype=torch.float64)
    q_rms = float(q.double().pow(2).mean().sqrt()) if q.numel() else 1.0
    u *= magnitude / (abs(case.scale) * case.head_dim**0.5 * max(q_rms, 1e-3))
    if case.varlen:
        u = u[0]  # one vector for every packed key
    limit = torch.finfo(case.torch_dtype).max / 4
    return q, laid_out_like(k, (k.double() + u.to(k.device)).clamp(-limit, limit).to(k.dtype)), v


def shift_expectations(impl, case, inputs, shifted):
    """``(exp, exp_shifted, out_allowed, lse_allowed)``: both calls' expectations, and what
    :func:`key_shift_invariance` allows between the two calls' outputs (both calls' tolerances
    and the float64 outputs' own drift) and between their lse's difference and the float64 one
    (both calls' tolerances)."""
    exp, exp_s = expect(impl, case, inputs), expect(impl, case, shifted)
    drift = (exp_s.expected_out - exp.expected_out).abs()
    return exp, exp_s, exp.allowed("out") + exp_s.allowed("out") + drift, exp.allowed("lse") + exp_s.allowed("lse")


SHIFTED_OUT = "the output before every key was shifted by the same vector"
SHIFTED_LSE = "the float64 shift scale·q·u of lse (lse after minus lse before)"


@prop()
def key_shift_invariance(impl, case, *, device=None):
    """Adding one vector u to every key leaves the output unchanged and shifts lse by
    scale·q·u; shifts reach thousands, so a kernel that does not subtract the row maximum
    or starts it at a finite sentinel breaks."""
    inputs = materialize(case, device)
    shifted = shifted_keys(case, inputs)
    out, lse = call_checked(impl, case, inputs)
    out_s, lse_s = call_checked(impl, case, shifted)
    exp, exp_s, out_allowed, lse_allowed = shift_expectations(impl, case, inputs, shifted)
    exp_s.check_out(out_s)
    compare.check_close("out", out_s, out, out_allowed, what=SHIFTED_OUT)
    if lse is not None:
        exp_s.check_lse(lse_s)
        finite = torch.isfinite(exp.expected_lse)
        zero = torch.zeros((), dtype=torch.float64, device=lse.device)
        compare.check_close(
            "lse",
            torch.where(finite, lse_s.double() - lse.double(), zero),
            torch.where(finite, exp_s.expected_lse - exp.expected_lse, zero),
            lse_allowed, what=SHIFTED_LSE,
        )


def doubling_is_exact(rounded: torch.Tensor) -> torch.Tensor:
    """Where ``round(2x) == 2·round(x)`` is guaranteed for the unrounded ``x`` behind each
    element: where ``x`` was normal. An element equal to the smallest normal may be a
    subnormal rounded up to it, whose double rounds on a finer grid."""
    return rounded.abs() > torch.finfo(rounded.dtype).tiny


def linear_values(case, v):
    """value_linearity's values: ``(-V, 2V or None where 2V overflows, V2, V + V2)``, V2 drawn
    from the case's seed. Every one is in V's own layout, which is the case's: a kernel whose
    result depends on strides fails layout_invariance, and one that reads V with K's strides
    fails the ``mixed`` layout, each under the case that names the layout it ran."""
    doubled = laid_out_like(v, 2 * v) if torch.isfinite(2 * v).all() else None
    other = torch.randn(v.shape, generator=seeded_generator(case, 3)).to(v.dtype).to(v.device)
    total = (v.double() + other.double()).to(v.dtype)
    return laid_out_like(v, -v), doubled, laid_out_like(v, other), laid_out_like(v, total)


@prop()
def value_linearity(impl, case, *, device=None):
    """The output is linear in V: negating or doubling V negates or doubles it exactly,
    and out(V1 + V2) = out(V1) + out(V2) within tolerance."""
    q, k, v = inputs = materialize(case, device)
    negated, doubled, other, total = linear_values(case, v)
    out, _ = call_checked(impl, case, inputs)
    out_neg, _ = call_checked(impl, case, (q, k, negated))
    compare.check_equal("out", out_neg, -out, what="minus the output for V (negating V is exact)")
    if doubled is not None:
        out_double, _ = call_checked(impl, case, (q, k, doubled))
        compare.check_equal(
            "out", out_double, 2 * out, where=doubling_is_exact(out),
            what="twice the output for V (doubling V is exact away from subnormals)",
        )
    out_other, _ = call_checked(impl, case, (q, k, other))
    out_total, _ = call_checked(impl, case, (q, k, total))
    compare.check_close(
        "out", out_total, out.double() + out_other.double(), sum_allowance(impl, case, (q, k, v), other, total),
        what="out(V1) + out(V2)",
    )


def sum_allowance(impl, case, inputs, other, total) -> torch.Tensor:
    """How far out(V1 + V2) may lie from out(V1) + out(V2): the three calls' allowed errors and
    the change of the float64 answers themselves (V1 + V2 is rounded to the input dtype)."""
    q, k, v = inputs
    exps = [expect(impl, case, (q, k, x)) for x in (v, other, total)]
    drift = (exps[2].expected_out - exps[0].expected_out - exps[1].expected_out).abs()
    return sum(e.allowed("out") for e in exps) + drift


def repeated_kv(case, inputs):
    """The second call of gqa_matches_repeated_kv and gqa_grads_match_repeated_kv: ``(case,
    inputs)`` with K and V repeated per query head."""
    q, k, v = inputs
    group = case.heads // case.kv_heads
    # The head axis is -2 in both layouts: (B, N, H, D) and packed (T, H, D).
    repeated = (q, k.repeat_interleave(group, dim=-2), v.repeat_interleave(group, dim=-2))
    return case.replace(kv_heads=case.heads), repeated


@prop(requires={"gqa"}, applies=lambda case: case.kv_heads < case.heads, draw={"gqa": True})
def gqa_matches_repeated_kv(impl, case, *, device=None):
    """Grouped-query attention equals attention with K and V repeated per query head."""
    inputs = materialize(case, device)
    out, lse = call_checked(impl, case, inputs)
    out_r, lse_r = call_checked(impl, *repeated_kv(case, inputs))
    exp = expect(impl, case, inputs)
    compare.check_close("out", out, out_r, 2 * exp.allowed("out"), what="the output with K/V repeated per head")
    if lse is not None:
        compare.check_close("lse", lse, lse_r, 2 * exp.allowed("lse"), what="the lse with K/V repeated per head")


@prop(applies=lambda case: case.batch * case.kv_heads > 1)
def batch_head_independence(impl, case, *, device=None):
    """The result for one batch entry and KV-head group does not depend on any other:
    replacing every other batch entry and head with fresh values leaves it exactly equal."""
    inputs, other, b, g, heads = one_group_kept(case, device or protocol.default_device())
    out, lse = call_checked(impl, case, inputs)
    out_o, lse_o = call_checked(impl, case, other)
    what = f"the output when only batch {b}, KV head {g} is kept and all else is replaced"
    compare.check_equal("out", batched(case, out_o)[b, :, heads], batched(case, out)[b, :, heads], what=what)
    if lse is not None:
        compare.check_equal("lse", batched(case, lse_o)[b, heads], batched(case, lse)[b, heads],
                            what=what.replace("output", "lse"))


def relaid_layout(impl, case, device) -> str:
    """The layout :func:`layout_invariance` compares ``case`` with for ``impl`` on ``device``."""
    return other_layout(case, protocol.case_domain_of(impl, device or protocol.default_device()).layouts)


@prop()
def layout_invariance(impl, case, *, device=None):
    """A strided view (transposed, or a slice of a larger buffer) gives exactly the result
    of a contiguous copy of the same values, in layouts the implementation's declared
    domain allows (:func:`other_layout`)."""
    other = relaid_layout(impl, case, device)
    inputs = materialize(case, device)
    relaid = materialize(case.replace(layout=other), device)
    out, lse = call_checked(impl, case, inputs)
    out_r, lse_r = call_checked(impl, case, relaid)
    what = f"the output for the same values in layout {other!r}"
    compare.check_equal("out", out, out_r, what=what)
    if lse is not None:
        compare.check_equal("lse", lse, lse_r, what=what.replace("output", "lse"))
