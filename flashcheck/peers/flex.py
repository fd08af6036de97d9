"""FlexAttention as a flashcheck implementation: ``flex``.

``torch.nn.attention.flex_attention.flex_attention`` with a ``mask_mod`` for bottom-right
causal/window and the user's mask, ``enable_gqa=True`` and the lse requested through
``return_aux`` (torch >= 2.9; ``return_lse=True`` before).  The lse is natural log: the kernel keeps base-2
statistics and the public frontend multiplies them by ln 2 before returning
(read in torch 2.13's ``_finalize_outputs``, introduced with lse support in
pytorch#133159); the unit tests check it against a float64 logsumexp on CPU
and on CUDA.  On CUDA a module-level ``torch.compile(flex_attention)`` is
used, never silently replaced by the eager path (see ``_no_silent_fallback``);
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
front (:class:`flashcheck.peers.common.Peer`).
"""
from __future__ import annotations

import contextlib
import warnings

import torch

from flashcheck.cases.masks import UNBOUNDED, as_4d
from flashcheck.peers.common import TORCH, Peer, Request, bhnd
from flashcheck.peers.sdpa import FLOAT16_RANGE_STRESSED
from flashcheck.protocol import DTYPE_NAMES

__all__ = ["flex"]

_compiled_flex = None


def _flex_function(device: torch.device):
    """flex_attention itself on CPU (eager, unfused); one cached torch.compile of it on CUDA."""
    global _compiled_flex
    from torch.nn.attention.flex_attention import flex_attention

    if device.type != "cuda":
        return flex_attention
    if _compiled_flex is None:
        _compiled_flex = torch.compile(flex_attention)
    return _compiled_flex


def _no_silent_fallback():
    """Config for calls of the compiled flex_attention: room for its variants, and an error
    instead of dynamo's silent fall-back to the unfused eager path at the recompile limit.

    Each dtype, requires_grad, mask structure and (through the block mask's static
    sequence lengths) each (Nq, Nk) is its own compiled variant, 5-60 s each on an H100
    with torch 2.11; the default limit (8 per code object) is reached within a few
    cases, past which dynamo would quietly run the eager, unfused implementation, i.e.
    check a different peer.  These are private dynamo settings; only those present in
    this torch are set.
    """
    wanted = {"recompile_limit": 1024, "accumulated_recompile_limit": 1 << 16, "fail_on_recompile_limit_hit": True}
    config = torch._dynamo.config
    return config.patch(**{key: value for key, value in wanted.items() if hasattr(config, key)})


def _flex_kernel_options(compiled: bool) -> dict:
    """flex's standard Triton kernel on every compiled call, where this torch lets one
    choose (module docstring: its decoding kernel failed to lower for short GQA queries)."""
    from torch.nn.attention import flex_attention as fa

    options = getattr(fa, "FlexKernelOptions", None)
    if not compiled or "BACKEND" not in getattr(options, "__annotations__", {}):
        return {}
    return {"kernel_options": {"BACKEND": "TRITON"}}


def _flex_mask_mod(req: Request, device):
    """A mask_mod for the band and the user's mask, or None when every key is allowed.

    The bounds are captured as 0-dim tensors, not Python ints, so that a compiled
    flex_attention treats them as inputs instead of recompiling for each value.
    """
    if not req.banded and req.mask is None:
        return None
    unbounded = req.nq + req.nk + 1
    offset = req.nk - req.nq
    lo = torch.tensor(offset - (unbounded if req.left == UNBOUNDED else req.left), device=device)
    hi = torch.tensor(offset + (unbounded if req.right == UNBOUNDED else req.right), device=device)
    user = None if req.mask is None else as_4d(req.mask).expand(req.batch, req.heads, req.nq, req.nk)

    def mask_mod(b, h, q_idx, kv_idx):
        inside = (kv_idx - q_idx >= lo) & (kv_idx - q_idx <= hi)
        return inside if user is None else inside & user[b, h, q_idx, kv_idx]

    return mask_mod


def _flex_block_mask(req: Request, device):
    from torch.nn.attention.flex_attention import create_block_mask

    mask_mod = _flex_mask_mod(req, device)
    if mask_mod is None:
        return None
    shared = req.mask is None or as_4d(req.mask).shape[:2] == (1, 1)
    # None, None: one block mask for every batch and head.  A mask varying over either
    # gets the full (B, H) block mask: on torch 2.11 a (B, 1) block mask with GQA failed
    # to compile (inductor NoValidChoicesError) where (B, H) and (1, H) compiled.
    b, h = (None, None) if shared else (req.batch, req.heads)
    return create_block_mask(mask_mod, b, h, req.nq, req.nk, device=device)


def _run_flex(torch_module, q, k, v, req: Request):
    """flex_attention with a bottom-right mask_mod, enable_gqa, and its natural-log lse."""
    from torch.nn.attention import flex_attention as fa

    if hasattr(fa, "AuxRequest"):  # torch >= 2.9, where return_lse is deprecated
        lse_request = {"return_aux": fa.AuxRequest(lse=True)}
    else:
        lse_request = {"return_lse": True}
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
    block_mask = _flex_block_mask(req, q.device)
    if not torch.is_grad_enabled():
        # torch refuses flex on CPU for inputs that require grad even under no_grad.
        q, k, v = q.detach(), k.detach(), v.detach()
    compiled = q.device.type == "cuda"
    with warnings.catch_warnings(), (_no_silent_fallback() if compiled else contextlib.nullcontext()):
        # The eager CPU path is chosen deliberately; its performance warning is noise here.
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        out, aux = _flex_function(q.device)(
            bhnd(q), bhnd(k), bhnd(v), block_mask=block_mask, scale=req.scale,
            enable_gqa=req.heads != req.kv_heads, **lse_request, **_flex_kernel_options(compiled),
        )
    return bhnd(out), getattr(aux, "lse", aux)


#: What torch.compile specialises compiled FlexAttention on: the dtype, the head dim and GQA
#: (static shapes of its template), and whether gradients are taken; the block mask (band, mask,
#: packing) is data, but its presence changes the score modification compiled in.
FLEX_COMPILE_KEY = ("dtype", "head_dim", "gqa_ratio", "mode", "band")


def flex() -> Peer:
    cpu = frozenset({"causal", "window", "gqa", "mask", "varlen", "lse"}) | DTYPE_NAMES
    # Compiled FlexAttention's head dims start at 16 (its NYI error, declined above).
    return Peer("flex", TORCH, {"cpu": cpu, "cuda": cpu | {"backward"}}, _run_flex, compile_key=FLEX_COMPILE_KEY,
                case_domain={"cuda": {"min_head_dim": 16}}, packed_as_dense=True,
                known_divergences={"grads_match_reference_where_ds_exceeds_float16": FLOAT16_RANGE_STRESSED})
