"""Forward properties: agreement with the float64 reference, finiteness, empty rows,
determinism."""

from __future__ import annotations

import torch

from flashcheck.oracle import compare
from flashcheck.properties.common import (
    batched, call_checked, check_none, empty_rows, expect, format_batched_index, materialize,
)
from flashcheck.properties.registry import prop


@prop()
def out_matches_reference(impl, case, *, device=None):
    """The output agrees with float64 attention within the derived tolerance."""
    inputs = materialize(case, device)
    out, _ = call_checked(impl, case, inputs)
    expect(impl, case, inputs).check_out(out)


@prop(requires={"lse"})
def lse_matches_reference(impl, case, *, device=None):
    """The log-sum-exp (natural log) agrees with float64 within the derived tolerance."""
    inputs = materialize(case, device)
    _, lse = call_checked(impl, case, inputs)
    expect(impl, case, inputs).check_lse(lse)


@prop()
def outputs_finite(impl, case, *, device=None):
    """Finite inputs give a finite output, extreme logits included; lse is finite except
    exactly on rows with no allowed key."""
    inputs = materialize(case, device)
    out, lse = call_checked(impl, case, inputs)
    bad = ~torch.isfinite(out)
    check_none(bad, lambda count, index: (
        f"out has {count} non-finite elements for finite inputs; first at "
        f"{compare.format_index('out', index)}: {float(out[index])}"
    ))
    if lse is not None:
        empty = empty_rows(case, lse.device)
        lse_b = batched(case, lse)
        wrong = (~torch.isfinite(lse_b) & ~empty) | (empty & ~(lse_b == float("-inf")))
        check_none(wrong, lambda count, index: (
            f"lse is non-finite where a row has keys, or not -inf where it has none: "
            f"{count} elements; first at {format_batched_index(case, 'lse', index)}: {float(lse_b[index])} "
            f"(row has {int(case.keys_per_row().expand(case.batch, case.heads, case.seqlen_q)[index])} allowed keys)"
        ))


@prop(applies=lambda case: case.has_empty_rows, draw={"empty_rows": True})
def empty_rows_exact(impl, case, *, device=None):
    """A row with no allowed key has output exactly 0 and lse exactly -inf."""
    inputs = materialize(case, device)
    out, lse = call_checked(impl, case, inputs)
    empty = empty_rows(case, out.device)  # (B, H, Nq)
    out_b = batched(case, out)
    wrong = (out_b != 0) & empty.transpose(1, 2)[..., None]
    check_none(wrong, lambda count, index: (
        f"out is not 0 on a row with no allowed key: {count} elements; first at "
        f"{format_batched_index(case, 'out', index)}: {float(out_b[index])}"
    ))
    if lse is not None:
        lse_b = batched(case, lse)
        wrong = (lse_b != float("-inf")) & empty
        check_none(wrong, lambda count, index: (
            f"lse is not -inf on a row with no allowed key; first at "
            f"{format_batched_index(case, 'lse', index)}: {float(lse_b[index])}"
        ))


@prop()
def deterministic(impl, case, *, device=None):
    """Two calls on the same inputs give bitwise the same output and lse."""
    inputs = materialize(case, device)
    first = call_checked(impl, case, inputs)
    second = call_checked(impl, case, inputs)
    compare.check_equal("out", second[0], first[0], what="the output of an identical first call")
    if first[1] is not None:
        compare.check_equal("lse", second[1], first[1], what="the lse of an identical first call")
