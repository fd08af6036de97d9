"""Implementations that check nothing or misdeclare themselves, for the verdicts that must
not pass them: a stub that declines every call, one declaring no features at all, one that
returns its output on another device, one that calls an operator torch lacks, one naming a feature the protocol does not have, and
one that can never run a property (rows without keys), with and without declaring it not
applicable, and with the declaration misspelt. Float32 only where they compute, to keep the
runs short."""

from __future__ import annotations

import torch

from tests.support import buggy


def declines_everything(q, k, v, **kwargs):
    """A stub: every call raises NotImplementedError, as an unwritten kernel would."""
    raise NotImplementedError("not written yet")


declines_everything.flashcheck_features = frozenset({"lse", "float32"})


def no_features(q, k, v, **kwargs):
    """Correct, declaring an empty feature set: dense attention, no band, mask or lse."""
    return buggy.correct(q, k, v, **kwargs)


no_features.flashcheck_features = frozenset()


def needs_an_operator_torch_lacks_on_the_cpu(q, k, v, **kwargs):
    """Breaks on every CPU call: it calls an operator torch has no CPU kernel for, whose
    NotImplementedError ("Could not run 'aten::...'") is torch's refusal, not a decline."""
    return torch.ops.aten._scaled_dot_product_flash_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                              v.transpose(1, 2))


needs_an_operator_torch_lacks_on_the_cpu.flashcheck_features = frozenset(
    {"causal", "gqa", "float16", "bfloat16", "float32"})


def mask_only(q, k, v, **kwargs):
    """Correct, declaring boolean masks and nothing else: no band, GQA, packing or lse."""
    return buggy.correct(q, k, v, **kwargs)


mask_only.flashcheck_features = frozenset({"mask"})


def device_kind_misspelt(q, k, v, **kwargs):
    """Correct, declaring its features for the device kinds "cpu" and "gpu" (meaning "cuda")."""
    return buggy.correct(q, k, v, **kwargs)


device_kind_misspelt.flashcheck_features_by_device = {"cpu": buggy.FEATURES, "gpu": buggy.FEATURES}


def out_on_meta(q, k, v, **kwargs):
    """Returns out on the meta device (shape and dtype right, no values)."""
    out, lse = buggy.correct(q, k, v, **kwargs)
    return out.to("meta"), lse


out_on_meta.flashcheck_features = frozenset({"lse", "float32"})


def unknown_feature(q, k, v, **kwargs):
    return buggy.correct(q, k, v, **kwargs)


unknown_feature.flashcheck_features = frozenset({"lse", "float32", "casual"})


def _square_causal_only(q, k, v, *, causal=False, **kwargs):
    """Correct, with causal only for as many queries as keys (as SDPA's flash backend, whose
    is_causal is top-left aligned): declines causal with Nq != Nk, and with it every case
    that has a row without an allowed key (its only restriction is causal)."""
    if causal and q.shape[1] != k.shape[1]:
        raise NotImplementedError(f"causal with Nq={q.shape[1]} != Nk={k.shape[1]} (top-left is_causal only)")
    return buggy.correct(q, k, v, causal=causal, **kwargs)


def square_causal_declared(q, k, v, **kwargs):
    """:func:`_square_causal_only`, declaring the property it can never run not applicable."""
    return _square_causal_only(q, k, v, **kwargs)


def square_causal_undeclared(q, k, v, **kwargs):
    """:func:`_square_causal_only` without the declaration: the property's every case is declined."""
    return _square_causal_only(q, k, v, **kwargs)


def misnamed_not_applicable(q, k, v, **kwargs):
    """Declares a property that does not exist (a typo) not applicable."""
    return _square_causal_only(q, k, v, **kwargs)


SQUARE_CAUSAL_ONLY = "planted: its is_causal is top-left aligned, under which every row has a key"
for _impl in (square_causal_declared, square_causal_undeclared, misnamed_not_applicable):
    _impl.flashcheck_features = frozenset({"causal", "lse", "float32"})
square_causal_declared.flashcheck_not_applicable = {"empty_rows_exact": SQUARE_CAUSAL_ONLY}
misnamed_not_applicable.flashcheck_not_applicable = {"empty_row_exact": SQUARE_CAUSAL_ONLY}


def _not_reached(module, q, k, v, request):
    raise AssertionError("a library that cannot be imported is never called")


#: An adapter of a library that is installed (its distribution is pytest's, present wherever
#: these tests run) but cannot be imported, as flash-attn-4 without the package that puts
#: its compiler on the path: a usage error before any case, never a finding.
unimportable_library = None


def _unimportable_library():
    from flashcheck.peers.common import Library, Peer

    library = Library(module="tests.a_module_that_does_not_exist", distributions=("pytest",), extra="fa4")
    return Peer("unimportable", library, {"cpu": {"lse", "float32"}}, _not_reached)


unimportable_library = _unimportable_library()
