"""FlexAttention called as flashcheck's ``flex`` adapter calls it: the protocol's arguments
translated into ``flex_attention``'s, in plain torch.

The adapter (:mod:`flashcheck.peers.flex`, whose docstring has the findings behind each
choice) calls :func:`run_flex`, and a standalone reproduction script of its failures
(:mod:`flashcheck.repro.calls`) carries this module's source, and those of
:mod:`flashcheck.peers.plain_packing` and :mod:`flashcheck.peers.sdpa_public_call`, so that
the script calls FlexAttention exactly as flashcheck did, without flashcheck. What the adapter
declines (head dims under 16 and float32 over 128 on CUDA, no keys) is the adapter's to refuse
before calling here.
"""

import contextlib
import warnings

import torch

from flashcheck.peers.plain_packing import document_mask
from flashcheck.peers.sdpa_public_call import as_4d

_compiled_flex = None


def flex_function(device):
    """flex_attention itself on CPU (eager, unfused); one cached torch.compile of it on CUDA."""
    global _compiled_flex
    from torch.nn.attention.flex_attention import flex_attention

    if device.type != "cuda":
        return flex_attention
    if _compiled_flex is None:
        _compiled_flex = torch.compile(flex_attention)
    return _compiled_flex


def no_silent_fallback():
    """Config for calls of the compiled flex_attention: room for its variants, and an error
    instead of dynamo's silent fall-back to the unfused eager path at the recompile limit.

    Each dtype, requires_grad, mask structure and (through the block mask's static sequence
    lengths) each (Nq, Nk) is its own compiled variant; the default limit (8 per code object)
    is reached within a few cases, past which dynamo would quietly run the eager, unfused
    implementation, i.e. another kernel. These are private dynamo settings; only those present
    in this torch are set."""
    wanted = {"recompile_limit": 1024, "accumulated_recompile_limit": 1 << 16, "fail_on_recompile_limit_hit": True}
    config = torch._dynamo.config
    return config.patch(**{key: value for key, value in wanted.items() if hasattr(config, key)})


def kernel_options(compiled):
    """flex's standard Triton kernel on every compiled call, where this torch lets one choose
    (its decoding kernel failed to lower for short GQA queries)."""
    from torch.nn.attention import flex_attention as fa

    options = getattr(fa, "FlexKernelOptions", None)
    if not compiled or "BACKEND" not in getattr(options, "__annotations__", {}):
        return {}
    return {"kernel_options": {"BACKEND": "TRITON"}}


def mask_mod(batch, heads, nq, nk, left, right, attn_mask, device):
    """A mask_mod for the band (bottom-right; -1 unbounded) and the 4-D boolean mask, or None when
    every key is allowed. The bounds are 0-dim tensors, not Python ints, so that a compiled
    flex_attention takes them as inputs instead of recompiling for each value."""
    if left == -1 and right == -1 and attn_mask is None:
        return None
    unbounded = nq + nk + 1
    offset = nk - nq
    lo = torch.tensor(offset - (unbounded if left == -1 else left), device=device)
    hi = torch.tensor(offset + (unbounded if right == -1 else right), device=device)
    user = None if attn_mask is None else attn_mask.expand(batch, heads, nq, nk)

    def allowed(b, h, q_idx, kv_idx):
        inside = (kv_idx - q_idx >= lo) & (kv_idx - q_idx <= hi)
        return inside if user is None else inside & user[b, h, q_idx, kv_idx]

    return allowed


def block_mask(batch, heads, nq, nk, left, right, attn_mask, device):
    """The block mask of :func:`mask_mod`, or None. One for every batch and head where the mask
    does not vary over them; otherwise the full (B, H) one (a (B, 1) block mask with GQA
    failed to compile on torch 2.11, where (B, H) and (1, H) compiled)."""
    from torch.nn.attention.flex_attention import create_block_mask

    if attn_mask is not None:
        attn_mask = as_4d(attn_mask)
    modifier = mask_mod(batch, heads, nq, nk, left, right, attn_mask, device)
    if modifier is None:
        return None
    shared = attn_mask is None or tuple(attn_mask.shape[:2]) == (1, 1)
    b, h = (None, None) if shared else (batch, heads)
    return create_block_mask(modifier, b, h, nq, nk, device=device)


def run_flex(q, k, v, *, scale, left, right, attn_mask, cu_seqlens_q=None, cu_seqlens_k=None):
    """flex_attention on the protocol's ``(B, N, H, D)`` q, k, v with a bottom-right mask_mod,
    ``enable_gqa`` and its natural-log lse: ``(out, lse)``. Packed input (``cu_seqlens_*``)
    runs as a dense batch of one under :func:`document_mask`, its out and lse returned packed."""
    from torch.nn.attention import flex_attention as fa

    if cu_seqlens_q is not None:
        mask = document_mask(cu_seqlens_q, cu_seqlens_k, left, right)[None, None]
        out, lse = run_flex(q[None], k[None], v[None], scale=scale, left=-1, right=-1, attn_mask=mask)
        return out[0], lse[0]
    if hasattr(fa, "AuxRequest"):  # torch >= 2.9, where return_lse is deprecated
        lse_request = {"return_aux": fa.AuxRequest(lse=True)}
    else:
        lse_request = {"return_lse": True}
    batch, nq, heads = q.shape[:3]
    mask = block_mask(batch, heads, nq, k.shape[1], left, right, attn_mask, q.device)
    if not torch.is_grad_enabled():
        # torch refuses flex on CPU for inputs that require grad even under no_grad.
        q, k, v = q.detach(), k.detach(), v.detach()
    compiled = q.device.type == "cuda"
    with warnings.catch_warnings(), (no_silent_fallback() if compiled else contextlib.nullcontext()):
        # The eager CPU path is chosen deliberately; its performance warning is noise here.
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        out, aux = flex_function(q.device)(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), block_mask=mask, scale=scale,
            enable_gqa=heads != k.shape[2], **lse_request, **kernel_options(compiled),
        )
    return out.transpose(1, 2), getattr(aux, "lse", aux)
