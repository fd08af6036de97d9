"""Properties of masking: what a query may not see cannot change its result.

Keys hidden from a row change nothing of that row bitwise. A correct kernel applies the mask
to the scores before the running maximum and the exponential, so a hidden key's score is
replaced by -inf whatever it was, its probability is exactly 0 and the arithmetic on the
visible keys is the same sequence of operations: hence bitwise, not within a tolerance. A
kernel whose row maximum or normalisation still sees hidden scores (the root of mask leaks)
differs in the last bits already for ordinary values and fails outright for huge ones.

Hidden keys get huge *finite* keys and values, not NaN: a product ``P·V`` with ``P = 0``
on a hidden key is ``0·NaN = NaN``, which SDPA's math backend, FlexAttention and any kernel
multiplying a whole K/V tile return, so NaN inside a tensor is outside the protocol (its
inputs are finite). NaN is used where memory must not be read at all: around views and past
the last packed token (``nan_padding_never_leaks``, ``layout_invariance``).
"""

from __future__ import annotations

import torch

from flashcheck.cases import masks
from flashcheck.cases.case import seeded_generator
from flashcheck.oracle import compare
from flashcheck.oracle.compare import Violation
from flashcheck.properties.common import batched, call_checked, expect, materialize
from flashcheck.properties.registry import prop


def _hidden_keys(case, allowed):
    """``(b, g, hidden)``: a batch entry, a KV head and the keys hidden from some query row
    of a head of that group, chosen by the seed among rows that do not see every key."""
    group = case.heads // case.kv_heads
    blind = (~allowed).any(dim=-1).nonzero()  # (b, h, i) of rows that miss some key
    b, h, i = (int(x) for x in blind[case.seed % len(blind)])
    return b, h // group, ~allowed[b, h, i]


def _unaffected(case, allowed, b, g, hidden):
    """Boolean ``(B, H, Nq)``: rows that attend none of the ``hidden`` keys of (b, g)."""
    group = case.heads // case.kv_heads
    sees = (allowed & hidden).any(dim=-1)  # (B, H, Nq)
    affected = torch.zeros_like(sees)
    affected[b, g * group:(g + 1) * group] = sees[b, g * group:(g + 1) * group]
    return ~affected


def rows_where(case, rows):
    """``(out_where, lse_where)``: boolean tensors shaped like the case's out and lse (packed or
    dense), True on the query rows ``rows`` (boolean ``(B, H, Nq)``)."""
    out_where = torch.zeros(case.out_shape, dtype=torch.bool, device=rows.device)
    lse_where = torch.zeros(case.lse_shape, dtype=torch.bool, device=rows.device)
    batched(case, out_where)[...] = rows.transpose(1, 2)[..., None]
    batched(case, lse_where)[...] = rows
    return out_where, lse_where


def _check_rows_unchanged(case, before, after, rows, what):
    (out, lse), (out_x, lse_x) = before, after
    out_where, lse_where = rows_where(case, rows)
    compare.check_equal("out", batched(case, out_x), batched(case, out), what=what, where=batched(case, out_where))
    if lse is not None:
        compare.check_equal("lse", batched(case, lse_x), batched(case, lse), what=what, where=batched(case, lse_where))


def _hides_keys(case) -> bool:
    """Some query may not attend some key (exactly, unlike ``Case.is_masked`` for bands)."""
    return case.seqlen_q > 0 and case.seqlen_k > 0 and not bool(case.allowed().all())


def hidden_keys_replaced(case, device, fill):
    """``(inputs, changed, rows, (b, g, count))``: the case's inputs, and a copy whose keys hidden
    from some row of one batch entry ``b`` and KV head ``g`` (``count`` keys) are replaced by
    ``fill(k_rows, v_rows)``; ``rows``, boolean ``(B, H, Nq)``, the rows that see none of them."""
    inputs = materialize(case, device)
    allowed = case.allowed(inputs.q.device).expand(case.batch, case.heads, case.seqlen_q, case.seqlen_k)
    b, g, hidden = _hidden_keys(case, allowed)
    changed = materialize(case, device)
    k, v = batched(case, changed.k), batched(case, changed.v)
    with torch.no_grad():
        new_k, new_v = fill(k[b, hidden, g], v[b, hidden, g])
        k[b, hidden, g], v[b, hidden, g] = new_k, new_v
    return inputs, changed, _unaffected(case, allowed, b, g, hidden), (b, g, int(hidden.sum()))


def fresh_keys(case):
    """The fill of :func:`future_keys_cannot_change_output`: fresh normal keys and values, drawn
    from the case's seed."""
    generator = seeded_generator(case, 11)

    def fresh(k, v):
        return (torch.randn(k.shape, generator=generator).to(k.dtype).to(k.device),
                torch.randn(v.shape, generator=generator).to(v.dtype).to(v.device))
    return fresh


def huge_keys(case):
    """The fill of :func:`masked_keys_with_huge_logits_change_nothing`: keys whose logits are far
    beyond exp's range, of the sign that wins any softmax they leak into, and values at the dtype's
    largest magnitude, drawn from the case's seed."""
    magnitude = huge_key_magnitude(case)
    sign = 1.0 if case.scale >= 0 else -1.0
    generator = seeded_generator(case, 12)

    def huge(k, v):
        direction = torch.randn(k.shape, generator=generator).sign().to(k.device)
        big_v = torch.where(torch.rand(v.shape, generator=generator) < 0.5, -1.0, 1.0).to(v.device)
        return (sign * magnitude * direction).to(k.dtype), (torch.finfo(case.torch_dtype).max * big_v).to(v.dtype)
    return huge


#: What the two hidden-key properties say their second call is, given ``(b, g, count)``.
REPLACED = "the result before {count} keys hidden from these rows (batch {b}, KV head {g}) were replaced"
MADE_HUGE = "the result before {count} keys hidden from these rows (batch {b}, KV head {g}) were made huge"


@prop(applies=_hides_keys, draw={"hides_keys": True})
def future_keys_cannot_change_output(impl, case, *, device=None):
    """Replacing keys and values that a query may not attend by fresh values leaves that
    query's output and lse bitwise unchanged (causal, window, attn_mask and packed cases)."""
    inputs, changed, rows, (b, g, count) = hidden_keys_replaced(case, device, fresh_keys(case))
    what = REPLACED.format(count=count, b=b, g=g)
    _check_rows_unchanged(case, call_checked(impl, case, inputs), call_checked(impl, case, changed), rows, what)


@prop(applies=_hides_keys, draw={"hides_keys": True})
def masked_keys_with_huge_logits_change_nothing(impl, case, *, device=None):
    """The mask-leak amplifier: hidden keys made huge (logits far beyond exp's range, of the
    sign that wins any softmax they leak into) with values at the dtype's largest magnitude
    leave the rows that may not see them bitwise unchanged."""
    inputs, changed, rows, (b, g, count) = hidden_keys_replaced(case, device, huge_keys(case))
    what = MADE_HUGE.format(count=count, b=b, g=g)
    _check_rows_unchanged(case, call_checked(impl, case, inputs), call_checked(impl, case, changed), rows, what)


def huge_key_magnitude(case) -> float:
    """The largest key entry whose logits stay finite in float32 (D products of |q| up to a
    few units): as huge as a logit can be without turning into inf, where ``inf + (-inf)``
    would make the test about overflow instead of about masking."""
    return min(torch.finfo(case.torch_dtype).max / 2, 1e30 / max(case.head_dim, 1))


def _band_only(case) -> bool:
    return case.band != (-1, -1) and case.mask.is_none and not case.varlen


def band_as_mask(case, device) -> dict:
    """The protocol arguments that replace the case's causal/window flags by the equal boolean
    ``(Nq, Nk)`` attn_mask."""
    band = masks.allowed(case.seqlen_q, case.seqlen_k, causal=case.causal, window=case.window, device=device)[0, 0]
    return {"causal": False, "window": (-1, -1), "attn_mask": band}


def band_as_flags(case) -> str:
    return f"the result of causal={case.causal}, window={case.window} as flags"


@prop(requires={"mask"}, applies=_band_only, draw={"mask": False, "varlen": False})
def mask_equal_to_band_matches_flag(impl, case, *, device=None):
    """A boolean (Nq, Nk) attn_mask equal to the causal/window band gives the result of the
    flags, within twice the derived tolerance (rows without keys exactly as the flags')."""
    inputs = materialize(case, device)
    out, lse = call_checked(impl, case, inputs)
    out_m, lse_m = call_checked(impl, case, inputs, **band_as_mask(case, inputs.q.device))
    exp = expect(impl, case, inputs)
    what = band_as_flags(case)
    compare.check_close("out", out_m, out, 2 * exp.allowed("out"), what=what)
    if lse is not None:
        if lse_m is None:
            raise Violation("lse: returned with the flags but not with the equivalent attn_mask")
        compare.check_close("lse", lse_m, lse, 2 * exp.allowed("lse"), what=what)


def padded_with_huge_keys(case, device):
    """The inputs of :func:`padded_batch_matches_unpadded`: the case's, with each batch entry's
    padding keys huge (aligned with its queries, of the sign that wins a softmax) and its padding
    values the dtype's largest magnitude."""
    inputs = materialize(case, device)
    sign = 1.0 if case.scale >= 0 else -1.0
    with torch.no_grad():
        for b, n in enumerate(case.mask.key_lengths):
            q_sign = inputs.q[b].double().sum(dim=(0, 1)).sign().to(inputs.k.dtype)  # (D,): aligned with the queries
            inputs.k[b, n:] = sign * huge_key_magnitude(case) * q_sign
            inputs.v[b, n:] = -torch.finfo(case.torch_dtype).max
    return inputs


def entry_call(case, inputs, b, n):
    """``(case, inputs)`` of :func:`padded_batch_matches_unpadded`'s dense call on batch entry
    ``b``'s ``n`` valid keys alone."""
    return case.replace(batch=1, seqlen_k=n, mask="none"), (inputs.q[b:b + 1], inputs.k[b:b + 1, :n],
                                                           inputs.v[b:b + 1, :n])


def no_valid_keys(value, b) -> str:
    return f"{value} for batch {b}, without valid keys"


def valid_keys_alone(b, n) -> str:
    return f"a dense call on batch {b}'s {n} valid keys alone"


@prop(requires={"mask"}, applies=lambda case: case.mask.kind == "key-padding" and case.band == (-1, -1),
      draw={"key_padding": True})
def padded_batch_matches_unpadded(impl, case, *, device=None):
    """A padded batch with a key-padding mask equals dense calls on each entry's valid keys
    alone, within the sum of both calls' tolerances; the padding keys are huge (logits far
    beyond exp's range) and the padding values the dtype's largest magnitude (finite garbage
    a leak cannot hide), and an entry without valid keys gives exactly out 0 and lse -inf."""
    inputs = padded_with_huge_keys(case, device)
    out, lse = call_checked(impl, case, inputs)
    exp = expect(impl, case, inputs)
    for b, n in enumerate(case.mask.key_lengths):
        if n == 0:
            compare.check_equal("out", out[b], torch.zeros_like(out[b]), what=no_valid_keys(0, b))
            if lse is not None:
                compare.check_equal("lse", lse[b], torch.full_like(lse[b], float("-inf")), what=no_valid_keys("-inf", b))
            continue
        single, parts = entry_call(case, inputs, b, n)
        out_s, lse_s = call_checked(impl, single, parts)
        exp_s = expect(impl, single, parts)
        what = valid_keys_alone(b, n)
        compare.check_close("out", out[b:b + 1], out_s, exp.allowed("out")[b:b + 1] + exp_s.allowed("out"), what=what)
        if lse is not None:
            compare.check_close("lse", lse[b:b + 1], lse_s, exp.allowed("lse")[b:b + 1] + exp_s.allowed("lse"),
                                what=what)
