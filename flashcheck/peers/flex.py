"""FlexAttention as a flashcheck implementation: ``flex``.

``torch.nn.attention.flex_attention.flex_attention`` with a ``mask_mod`` for bottom-right
causal/window and the user's mask, ``enable_gqa=True`` and the lse requested through
``return_aux`` (torch >= 2.9; ``return_lse=True`` before).  The lse is natural log: the kernel keeps base-2
statistics and the public frontend multiplies them by ln 2 before returning
(read in torch 2.13's ``_finalize_outputs``, introduced with lse support in
pytorch#133159); the unit tests check it against a float64 logsumexp on CPU
and on CUDA.  On CUDA a module-level ``torch.compile(flex_attention)`` is
used, never silently replaced by the eager path (see ``flex_call.no_silent_fallback``);
each new (shape, dtype, requires_grad, mask structure) compiles anew, 5-60 s
[2.11 H100], and float32 with D = 128 did not finish compiling within 150 s.
The compiled call asks for flex's standard Triton kernel (``BACKEND="TRITON"``)
instead of letting it pick its decoding kernel for short query lengths: that
one failed to lower ("NoValidChoicesError") with GQA and a block mask at 20 and
64 queries [2.11 H100], where the standard kernel compiled; every case then
checks the same kernel.  No keys at all (Nk = 0, or a packed batch without a
key) is declined: ``create_block_mask`` and the eager path fail on an empty key
axis (IndexError) [2.13 CPU, 2.11 H100]. No queries at all (Nq = 0) is declined too:
``create_block_mask`` raises IndexError inside its vmap over an empty query axis, and
without a block mask the eager path returns ``lse`` None though asked for it [2.13 CPU,
2.11 H200; a campaign's varlen_matches_separate_calls, one sequence called alone]. The case
domain says both (every query and key length from 1), and float32 head dims up to 128 on
CUDA, so that the fuzzer draws inside them. float32 with D > 128 is declined on CUDA:
the compiled kernel, whose head dim is rounded up to 256, asked for 344 KB of shared
memory where an H100 has 227 KB [2.11 H100, D = 218].
On CPU the eager (unfused, scores materialised) path runs, which torch refuses
to differentiate, so "backward" is declared for CUDA only.  Fully masked rows
[2.13 CPU, 2.11 H100]: out = 0, lse = -inf, zero gradients.

Layout and scale are translated as for every adapter of torch's kernels, behind the same
front (:class:`flashcheck.peers.common.Peer`); the call itself is
:func:`flashcheck.peers.flex_call.run_flex` (plain torch, which a reproduction script carries).
"""
from __future__ import annotations

import torch

from flashcheck.peers import flex_call
from flashcheck.peers.common import Library, Peer, Request
from flashcheck.peers.sdpa import FLOAT16_RANGE, FLOAT16_RANGE_STRESSED
from flashcheck.protocol import DTYPE_NAMES

__all__ = ["flex"]

#: torch, loaded before the first case (flashcheck.protocol.prepare) through torch.compile's frame
#: compiler, so that the compile clock, which wraps that module's entry point where it is
#: imported, times compiled FlexAttention's per-shape compilations as compiling
#: (flashcheck.engine.compile_clock.OTHER_JITS). Building the adapter imports none of it.
LIBRARY = Library("torch._dynamo.convert_frame", ("torch",))


def _run_flex(torch_module, q, k, v, req: Request):
    """flex_attention with a bottom-right mask_mod, enable_gqa, and its natural-log lse."""
    if q.device.type == "cuda" and q.shape[-1] < 16:
        # [2.11 H100] compiled flex: "NYI: embedding dimension of the query, key, and value
        # must be at least 16".
        raise NotImplementedError(f"flex: compiled FlexAttention needs head dim >= 16, got {q.shape[-1]}")
    if q.device.type == "cuda" and q.dtype == torch.float32 and q.shape[-1] > 128:
        # [2.11 H100] float32, D = 218: "No valid triton configs. OutOfMemoryError: out of
        # resource: triton_tem_fused_flex_attention_0 Required: 344320 Hardware limit: 232448".
        # Its kernel rounds every D over 128 up to 256, hence the bound.
        raise NotImplementedError(f"flex: float32 with head dim {q.shape[-1]} > 128 is declined on CUDA: compiled "
                                  "FlexAttention needs more shared memory than the GPU has (see flashcheck.peers.flex)")
    if req.nk == 0:
        raise NotImplementedError("flex: no keys (Nk = 0) is declined: create_block_mask and flex_attention "
                                  "fail on an empty key axis (see flashcheck.peers.flex)")
    if req.nq == 0:
        raise NotImplementedError("flex: no queries (Nq = 0) is declined: create_block_mask fails on an empty "
                                  "query axis and flex_attention returns no lse there (see flashcheck.peers.flex)")
    return flex_call.run_flex(q, k, v, scale=req.scale, left=req.left, right=req.right, attn_mask=req.mask)


#: What torch.compile specialises compiled FlexAttention on: the dtype, the head dim and GQA
#: (static shapes of its template), and whether gradients are taken; the block mask (band, mask,
#: packing) is data, but its presence changes the score modification compiled in.
FLEX_COMPILE_KEY = ("dtype", "head_dim", "gqa_ratio", "mode", "band")

#: What every call needs (the declines above): a query and a key in each sequence, since
#: varlen_matches_separate_calls calls each packed sequence alone.
_LENGTHS = {"min_seqlen_q": 1, "min_seqlen_k": 1}


def flex() -> Peer:
    cpu = frozenset({"causal", "window", "gqa", "mask", "varlen", "lse"}) | DTYPE_NAMES
    # Compiled FlexAttention's head dims start at 16 (its NYI error, declined above).
    # [2.11 H200] Its float16 backward overflows as torch SDPA's fused backends' does, declared as
    # theirs: dK -inf where float64 gives -617.0 on grads_match_reference's own inputs (a campaign's
    # case: outlier values, head dim 115, GQA 2:1; exact |dS| 8.8e4, a single query head's dK 7.0e5;
    # docs/measurements/campaign/h200-2026-11-29-survey-3/), as on the dS-range property's inputs.
    return Peer("flex", LIBRARY, {"cpu": cpu, "cuda": cpu | {"backward"}}, _run_flex, compile_key=FLEX_COMPILE_KEY,
                case_domain={"cpu": _LENGTHS,
                             "cuda": {**_LENGTHS, "min_head_dim": 16, "max_head_dim_by_dtype": {"float32": 128}}},
                packed_as_dense=True,
                known_divergences={"grads_match_reference_where_ds_exceeds_float16": FLOAT16_RANGE_STRESSED,
                                   "grads_match_reference": FLOAT16_RANGE, "gqa_grads_match_repeated_kv": FLOAT16_RANGE})
