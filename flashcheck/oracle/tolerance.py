r"""How far a correct attention kernel may be from the float64 reference.

The allowed error is derived per case and per element from the dtype, the reduction
lengths and the data, never tuned per test, and there is no global atol.

The model
---------
The reference is exact attention on the *rounded* inputs, so the kernel's error is only
what its own arithmetic adds. A flash kernel (and any careful mixed-precision attention)
forms the logits in float32 from the input dtype, exponentiates in float32, rounds the
probabilities to the input dtype for the product with V, accumulates that product and the
softmax denominator in float32 and rounds the output to the input dtype. With

* ``u``: unit roundoff of the input dtype (2^-11 float16, 2^-8 bfloat16, 2^-24 float32;
  2^-11 for float32 operands of TF32 products when an implementation declares ``tf32``),
* ``u32 = 2^-24`` and ``λ = 4`` (sums of ``n`` float32 terms are bounded by
  ``λ·√n·u32`` times the sum of magnitudes, the probabilistic bound of Higham and Mary, which
  holds for blocked and sequential summation alike with overwhelming probability; the
  worst case ``n·u32`` is not attained by real rounding errors),
* ``n_i``: the number of keys row ``i`` may attend, ``D`` the head dim,

the first-order error of each output is bounded by these terms:

**Logits.** Each product of two 16-bit inputs is exact in float32, and the sum over ``D``
adds at most ``λ√D·u32·Σ_d|q_d k_d|``; scaling, the base-2 conversion and the subtraction of
the row maximum add a few ``u32·|s|``. So every logit of row ``i`` is off by at most::

    δs_i = u32·[(λ√D + 1)·max_j scale·Σ_d|q_id k_jd| + 4·max_j |s_ij|]   (+ 2u·max_j ... for TF32)

**Output.** A relative error ``ε_j`` in each probability changes ``o = Σ p_j v_j`` by at most
``Σ p_j |ε_j| |v_j|``, and a logit error ``δ`` changes ``p_j`` relatively by ``δ`` in the
numerator and the denominator alike, so by at most ``2δ`` in ``o``. With ``A_id = Σ_j p_ij
|v_jd|``::

    |Δo_id| <= 2·[(u_p + 8·u32 + 3·λ√n_i·u32 + 2·δs_i)·A_id + u·|o_id|] + tiny

where ``u_p`` is the rounding of P to the input dtype (``u``; ``u32`` for float32), ``8·u32``
covers the exp2 approximation and the rescales, ``3·λ√n·u32`` the float32 sums of ``P·V``
and of the denominator, ``u·|o|`` the final rounding, and ``tiny`` the smallest normal
number of the dtype (so that flush-to-zero of subnormal results is not a failure). The
leading 2 is a safety factor for the second-order terms.

**Log-sum-exp** (float32, natural log)::

    |Δlse_i| <= 2·[δs_i + (λ√n_i + 8)·u32 + 3·u32·|lse_i|]

Rows with no allowed key have lse ``-inf`` and output 0: there the allowed error is 0 and
the comparison demands exactly those values.

The cross-check
---------------
Two rules tie the model to flashcheck's own same-precision standard attention
(:mod:`flashcheck.oracle.same_precision`) on the same inputs, the "at most k times a plain implementation"
rule of flash-attention's tests with k = 2:

* elementwise, the allowed error is never below ``2 ×`` the plain implementation's largest
  error in the same row, so an implementation as accurate as a plain one is never flagged
  where the model happens to be tight;
* in aggregate, the largest error over the whole output must not exceed ``2 ×`` the plain
  implementation's largest error plus an ulp-scale floor (the roundings at the scale of the
  logits and of the output itself, which no reduction amplifies, and for the lse its
  denominator's float32 sum at typical size; see :func:`aggregate_limit`). Worst-case
  bounds sit 10-100x above the error of a correct kernel; this rule is what notices a kernel
  that is uniformly less accurate than its precision promises (a float32 path multiplying in
  TF32, probabilities rounded to bfloat16 for float16 inputs) while still inside the worst
  case.

The test suite asserts that the model bounds the plain implementation's error on every case
it draws, so the model is shown sound against real rounding; every failure report names
which rule and which term governed. What a tolerance cannot see at all (a one-key masking
slip in a long, flat row) the metamorphic and bitwise properties are there to catch.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from flashcheck.oracle.reference import Reference

UNIT_ROUNDOFF = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24}
TF32_ROUNDOFF = 2.0**-11
U32 = 2.0**-24
LAMBDA = 4.0
SAFETY = 2.0
#: The allowance is never below this many times the same-precision attention's error.
SAME_PRECISION_FACTOR = 2.0


class Bound(NamedTuple):
    """The allowed absolute error of one output, elementwise, and where it came from."""

    output: str  # "out" or "lse"
    allowed: torch.Tensor  # float64, the output's shape; 0 where the reference is -inf
    model: torch.Tensor  # the error model's bound, same shape
    same_precision: torch.Tensor | None  # SAME_PRECISION_FACTOR x the same-precision attention's row error
    terms: dict  # name -> tensor of the model's terms, for reports


def logit_error(ref: Reference, *, dtype: torch.dtype, head_dim: int, tf32: bool = False) -> torch.Tensor:
    """``δs``: bound on the absolute error of every allowed logit of each row, ``(B, H, Nq)``."""
    error = U32 * ((LAMBDA * math.sqrt(head_dim) + 1.0) * ref.max_abs_dot + 4.0 * ref.max_abs_logit)
    if tf32 and dtype == torch.float32:
        error = error + 2.0 * TF32_ROUNDOFF * ref.max_abs_dot
    return error


def bound_for(
    output: str,
    ref: Reference,
    *,
    dtype: torch.dtype,
    head_dim: int,
    same_precision=None,
    tf32: bool = False,
) -> Bound:
    """The allowed error of ``output`` ("out" or "lse") for inputs of ``dtype``.

    ``ref`` is :func:`flashcheck.oracle.reference.evaluate` on the same inputs; ``same_precision``
    is the ``(out, lse)`` of :func:`flashcheck.oracle.same_precision.attention` on them (omit it to use
    the model alone). ``tf32`` says the implementation multiplies float32 operands as TF32.
    """
    if output not in ("out", "lse"):
        raise ValueError(f"output: expected 'out' or 'lse', got {output!r}")
    u = UNIT_ROUNDOFF[dtype]
    u_product = TF32_ROUNDOFF if (tf32 and dtype == torch.float32) else u
    keys = ref.keys.to(torch.float64)
    delta_s = logit_error(ref, dtype=dtype, head_dim=head_dim, tf32=tf32)  # (B, H, Nq)
    sums = LAMBDA * torch.sqrt(keys) * U32  # (B, H, Nq)
    if output == "out":
        # Row quantities (B, H, Nq) -> (B, Nq, H, 1) to broadcast over (B, Nq, H, D).
        delta_s = delta_s.transpose(1, 2).unsqueeze(-1)
        sums = sums.transpose(1, 2).unsqueeze(-1)
        relative = u_product + 8.0 * U32 + 3.0 * sums + 2.0 * delta_s
        terms = {
            "probability rounding": u_product * ref.abs_pv,
            "float32 sums": (8.0 * U32 + 3.0 * sums) * ref.abs_pv,
            "logit error": 2.0 * delta_s * ref.abs_pv,
            "output rounding": u * ref.out.abs(),
        }
        model = SAFETY * (relative * ref.abs_pv + u * ref.out.abs()) + torch.finfo(dtype).tiny
        finite = torch.ones_like(model, dtype=torch.bool)
        doubled = _row_error_out(same_precision[0], ref.out) if same_precision is not None else None
    else:
        finite = torch.isfinite(ref.lse)
        magnitude = ref.lse.abs().masked_fill(~finite, 0.0)
        terms = {
            "logit error": delta_s,
            "float32 sums": (sums + 8.0 * U32).expand_as(delta_s),
            "lse rounding": 3.0 * U32 * magnitude,
        }
        model = SAFETY * (delta_s + sums + 8.0 * U32 + 3.0 * U32 * magnitude)
        doubled = _error_lse(same_precision[1], ref.lse) if same_precision is not None else None
    if doubled is not None:
        doubled = SAME_PRECISION_FACTOR * doubled
        allowed = torch.maximum(model, doubled)
    else:
        allowed = model
    allowed = allowed.masked_fill(~finite, 0.0)
    return Bound(output, allowed, model, doubled, terms)


def same_precision_error(value: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """``|value - expected|`` where both are finite, else 0: a same-precision attention that
    overflows (or a row without keys) says nothing about how large an error is acceptable,
    and must never widen an allowance to infinity."""
    error = (value.to(torch.float64) - expected).abs()
    return torch.where(torch.isfinite(error), error, torch.zeros_like(error))


def _row_error_out(same_precision_out: torch.Tensor, ref_out: torch.Tensor) -> torch.Tensor:
    """The same-precision attention's largest error in each row, ``(B, Nq, H, 1)``."""
    return same_precision_error(same_precision_out, ref_out).amax(dim=-1, keepdim=True).expand_as(ref_out)


def _error_lse(same_precision_lse: torch.Tensor, ref_lse: torch.Tensor) -> torch.Tensor:
    return same_precision_error(same_precision_lse, ref_lse)


def aggregate_limit(output: str, ref: Reference, same_precision, *, dtype: torch.dtype, head_dim: int) -> float:
    """The largest error allowed anywhere in ``output``: ``2 ×`` the largest error of the
    same-precision attention's ``(out, lse)`` plus a floor.

    The floor is the model's logit and output-rounding terms at their typical rather than
    worst-case size (``√D`` instead of ``λ√D + 1`` for the dot products): roundings at the
    scale of the logits (a flash kernel multiplies by the scale and by log2(e) and subtracts a
    running maximum, a plain one does fewer such steps) and in the dot products, whose
    summation order differs between correct implementations and whose error follows
    ``Σ_d |q_d k_d|`` rather than the logit when the products cancel; plus two units of
    roundoff of the output itself. Without these a correct kernel is flagged on small
    outputs where the plain implementation happens to round luckily.

    The lse's floor also holds its float32 denominator sum at its typical size, ``√n_i·u32``
    of the row's ``n_i`` keys. The plain attention sums the denominator as one reduction
    (torch's, a tree) and its lse is off by about one ulp; a correct flash kernel keeps the
    sum in float32 registers across key blocks, a chain per thread, and on a long row of
    like probabilities those chains' roundings do not average out. The lse is a float32
    output, so that sum's rounding is of the lse's own scale: on 3329 near-equal keys, four
    chains of a quarter row each are off by 7e-6 where the plain lse is off by 1e-6
    (``tests/test_tolerance.py``). The output needs no such term: its floor's rounding to
    the input dtype, or the plain float32 product's own blocked sums, are of that size.
    """
    typical_logit = U32 * (math.sqrt(head_dim) * ref.max_abs_dot + 4.0 * ref.max_abs_logit)  # (B, H, Nq)
    if output == "out":
        expected, got = ref.out, same_precision[0]
        logits = typical_logit.transpose(1, 2).unsqueeze(-1)  # (B, Nq, H, 1)
        floor = SAFETY * (2.0 * logits * ref.abs_pv + UNIT_ROUNDOFF[dtype] * ref.out.abs())
    else:
        expected, got = ref.lse, same_precision[1]
        denominator = torch.sqrt(ref.keys.to(torch.float64)) * U32  # (B, H, Nq), typical not worst case
        floor = SAFETY * (typical_logit + denominator + 3.0 * U32 * ref.lse.abs() + 8.0 * U32)
    finite = torch.isfinite(expected)
    if not finite.any():
        return 0.0
    error = same_precision_error(got, expected)[finite]
    return SAME_PRECISION_FACTOR * float(error.max()) + float(floor[finite].max())


def gradient_bounds(grads, ref: Reference, out_bound: Bound, lse_bound: Bound, grad_out, *,
                    dtype: torch.dtype, head_dim: int, scale: float, same_precision=None,
                    q=None, k=None, grad_lse=None) -> dict:
    r"""Allowed errors of ``dq``, ``dk`` and ``dv`` (a :class:`Bound` each).

    The backward recomputes ``P = exp(s - lse)`` from the forward's lse, so each probability
    carries the logit error ``δs`` plus the lse error of the forward (its model bound), and a
    few ``u32`` of exp2. With ``E_i = (λ√D + 1)·u32·max_j Σ_d|dO_id||V_jd| + Σ_d |dO_id|·ΔO_id``
    (the error of ``dP = dO·Vᵀ`` and of ``delta = rowsum(dO∘O)``, whose O is the kernel's own
    output, off by at most the forward's out bound ``ΔO``), and ``u`` the rounding of P and dS
    to the input dtype before their products::

        |ΔdV_jd| <= 2·[(u + 8u32 + λ√M·u32 + ε_P)·Σ_i P_ij|dO_id| + u·|dV_jd|]
        |ΔdQ_id| <= 2·[(u + 8u32 + λ√n·u32 + ε_P)·scale·Σ_j |dS_ij||K_jd|
                       + scale·E_i·Σ_j P_ij|K_jd| + u·|dQ_id|]
        |ΔdK_jd| <= 2·[(u + 8u32 + λ√M·u32 + ε_P)·scale·Σ_i |dS_ij||Q_id|
                       + scale·max_i E_i·Σ_i P_ij|Q_id| + u·|dK_jd|]

    ``ε_P = δs + Δlse`` per row (its maximum over a GQA group for dK and dV, whose sums run
    over the group's rows), ``n`` the keys of a row and ``M`` the queries times the group size
    that a key's gradient sums over. dQ is the noisiest: its error collects ``E_i`` over every
    key of the row, and ``E_i`` carries the forward's output error. Each bound is floored by
    twice the plain same-precision backward's largest error in the same row, when given.

    Underflow. A probability below the smallest normal float32 (``τ = 2^-126``) is not
    carried to relative precision: GPUs flush the results of exp2 below it to zero. That is an
    absolute error of up to ``τ`` in each ``P_ij``, which the relative terms above cannot
    cover where the exact ``P_ij`` is itself that small; given ``q`` and ``k``, the bounds gain
    (with ``R_i = max_j Σ_d|dO_id||V_jd| + |delta_i| + |g_i|``, which bounds ``|dS_ij|/P_ij``)::

        dV: 2·τ·Σ_i |dO_id|      dQ: 2·τ·scale·R_i·Σ_j |K_jd|      dK: 2·τ·scale·Σ_i R_i·|Q_id|

    sums running over every row of the KV head's group and every key of the head: terms of
    the order of 1e-36, which matter only for gradients that are themselves that small.
    Each product of the three sums (``P_ij·dO_id``, ``dS_ij·K_jd``, ``dS_ij·Q_id``) may be
    below ``τ`` too where its sum is not, and a kernel flushing subnormal products or partial
    sums to zero loses up to ``τ`` a term: the bounds gain ``τ·M`` (dV, dK) and ``τ·n`` (dQ),
    times ``max(1, scale)`` where the scale multiplies after the sum
    (:func:`product_flush_terms`).
    """
    u = UNIT_ROUNDOFF[dtype]
    finite = torch.isfinite(ref.lse)
    lse_error = lse_bound.model.masked_fill(~finite, 0.0)
    p_rel = logit_error(ref, dtype=dtype, head_dim=head_dim) + lse_error + 8.0 * U32  # (B, H, Nq)
    grad_out = grad_out.to(torch.float64)
    delta_err = (grad_out.abs() * out_bound.model).sum(-1) + LAMBDA * math.sqrt(head_dim) * U32 * (
        grad_out.abs() * ref.out.abs()
    ).sum(-1)  # (B, Nq, H)
    row_err = (LAMBDA * math.sqrt(head_dim) + 1.0) * U32 * grads.abs_dp_max + delta_err.transpose(1, 2)
    row_err = row_err.masked_fill(~finite, 0.0)  # (B, H, Nq)
    batch, heads, seqlen_q = p_rel.shape
    kv_heads = grads.dk.shape[2]

    def group_max(row_quantity):  # (B, H, Nq) -> (B, 1, Hkv, 1), the max over each group's rows
        grouped = row_quantity.reshape(batch, kv_heads, -1)
        if grouped.shape[-1] == 0:
            return grouped.new_zeros(batch, 1, kv_heads, 1)
        return grouped.amax(dim=-1)[:, None, :, None]

    def per_row(row_quantity):  # (B, H, Nq) -> (B, Nq, H, 1)
        return row_quantity.transpose(1, 2).unsqueeze(-1)

    rows = seqlen_q * (heads // kv_heads)  # the rows a key's gradient sums over
    queries = math.sqrt(max(1, rows))
    keys = per_row(torch.sqrt(ref.keys.to(torch.float64)))
    tiny = torch.finfo(dtype).tiny
    models = {
        "dv": SAFETY * ((u + 8.0 * U32 + LAMBDA * queries * U32 + group_max(p_rel)) * grads.abs_dv
                        + u * grads.dv.abs()) + tiny,
        "dq": SAFETY * ((u + 8.0 * U32 + LAMBDA * keys * U32 + per_row(p_rel)) * grads.abs_dq
                        + abs(scale) * per_row(row_err) * grads.p_abs_k + u * grads.dq.abs()) + tiny,
        "dk": SAFETY * ((u + 8.0 * U32 + LAMBDA * queries * U32 + group_max(p_rel)) * grads.abs_dk
                        + abs(scale) * group_max(row_err) * grads.pt_abs_q + u * grads.dk.abs()) + tiny,
    }
    for name, term in product_flush_terms(rows, ref.keys, scale).items():
        models[name] = models[name] + SAFETY * term
    if q is not None and k is not None:
        for name, term in _underflow_terms(grads, grad_out, grad_lse, q, k, scale, finite).items():
            models[name] = models[name] + SAFETY * term
    bounds = {}
    for name, model in models.items():
        expected = getattr(grads, name)
        doubled = None
        if same_precision is not None:
            got = same_precision[("dq", "dk", "dv").index(name)]
            doubled = SAME_PRECISION_FACTOR * same_precision_error(got, expected).amax(dim=-1, keepdim=True)
        allowed = model if doubled is None else torch.maximum(model, doubled)
        bounds[name] = Bound(name, allowed, model, doubled, {"model": model})
    return bounds


#: The smallest normal float32: below it exp2 results are flushed to zero on GPUs.
FLOAT32_TINY = 2.0**-126


def product_flush_terms(rows: int, keys, scale: float) -> dict:
    """Absolute errors of dq, dk, dv from products below FLOAT32_TINY flushed to zero, one
    ``FLOAT32_TINY`` for each term of their sums (see :func:`gradient_bounds`): ``rows`` the
    rows a key's gradient sums over (queries times the GQA group), ``keys`` the keys of each
    row (a ``(B, H, Nq)`` tensor, as :class:`Reference` counts them), ``scale`` the softmax scale."""
    scaled = max(1.0, abs(scale)) * FLOAT32_TINY
    per_row_keys = keys.to(torch.float64).transpose(1, 2).unsqueeze(-1)  # (B, Nq, H, 1)
    return {"dv": FLOAT32_TINY * rows, "dk": scaled * rows, "dq": scaled * per_row_keys}


def _underflow_terms(grads, grad_out, grad_lse, q, k, scale, finite) -> dict:
    """Absolute errors of dq, dk, dv from an error of up to FLOAT32_TINY in every
    probability (see :func:`gradient_bounds`), shaped to broadcast against each gradient."""
    heads, kv_heads = q.shape[2], k.shape[2]
    group = heads // kv_heads
    upstream = grads.abs_dp_max + grads.delta.abs()  # (B, H, Nq)
    if grad_lse is not None:
        upstream = upstream + grad_lse.to(torch.float64).abs().to(upstream.device)
    upstream = upstream.masked_fill(~finite, 0.0).transpose(1, 2).unsqueeze(-1)  # (B, Nq, H, 1)
    grad_out = grad_out.to(torch.float64).masked_fill(~finite.transpose(1, 2).unsqueeze(-1), 0.0)

    def group_sum(per_query_head):  # (B, Nq, H, D) -> (B, 1, Hkv, D), summed over rows and group
        return per_query_head.sum(dim=1, keepdim=True).unflatten(2, (kv_heads, group)).sum(dim=3)

    keys_abs = k.to(torch.float64).abs().sum(dim=1, keepdim=True).repeat_interleave(group, dim=2)
    return {
        "dv": FLOAT32_TINY * group_sum(grad_out.abs()),
        "dq": FLOAT32_TINY * abs(scale) * upstream * keys_abs,
        "dk": FLOAT32_TINY * abs(scale) * group_sum(upstream * q.to(torch.float64).abs()),
    }
