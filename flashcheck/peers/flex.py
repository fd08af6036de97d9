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
axis (IndexError) [2.13 CPU, 2.11 H100]. float32 with D > 128 is declined on CUDA:
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
from flashcheck.peers.sdpa import FLOAT16_RANGE_STRESSED
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
    return flex_call.run_flex(q, k, v, scale=req.scale, left=req.left, right=req.right, attn_mask=req.mask)


#: What torch.compile specialises compiled FlexAttention on: the dtype, the head dim and GQA
#: (static shapes of its template), and whether gradients are taken; the block mask (band, mask,
#: packing) is data, but its presence changes the score modification compiled in.
FLEX_COMPILE_KEY = ("dtype", "head_dim", "gqa_ratio", "mode", "band")


def flex() -> Peer:
    cpu = frozenset({"causal", "window", "gqa", "mask", "varlen", "lse"}) | DTYPE_NAMES
    # Compiled FlexAttention's head dims start at 16 (its NYI error, declined above).
    return Peer("flex", LIBRARY, {"cpu": cpu, "cuda": cpu | {"backward"}}, _run_flex, compile_key=FLEX_COMPILE_KEY,
                case_domain={"cuda": {"min_head_dim": 16}}, packed_as_dense=True,
                known_divergences={"grads_match_reference_where_ds_exceeds_float16": FLOAT16_RANGE_STRESSED})
