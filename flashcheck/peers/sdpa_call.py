"""torch's private fused SDPA operators, and SDPA's math backend, called as flashcheck's
``sdpa-*`` adapters call them: the protocol's arguments translated into the operators', in
plain torch.

The adapters (:mod:`flashcheck.peers.sdpa`) call these functions, and a standalone
reproduction script of their failures (:mod:`flashcheck.repro.calls`) carries this module's
source, and that of the plain-call modules it imports, so that the script calls torch exactly
as flashcheck did, without flashcheck. q, k, v are the protocol's ``(B, N, H, D)``; ``scale``
the softmax scale in effect; ``left`` and ``right`` the band (-1 unbounded, causal's right
side 0); ``attn_mask`` the protocol's boolean mask or None. What the adapters decline
(causal with Nq != Nk for flash and cuDNN, cuDNN's backward of one query and one key) is the
adapter's to refuse before calling here.
"""

import torch

from flashcheck.peers.plain_packing import document_mask
from flashcheck.peers.sdpa_public_call import HAS_GQA, additive_bias, band_and_mask


def repeat_kv(t, heads):
    """(B, N, Hkv, D) -> (B, N, heads, D); query head h reads KV head h // (heads // Hkv)."""
    return t if t.shape[2] == heads else t.repeat_interleave(heads // t.shape[2], dim=2)


def kernel_ready(t):
    """(B, N, H, D) as the fused CUDA kernels accept it: D zero-padded to a multiple of 8,
    pointer and non-unit strides 16-byte aligned (else a contiguous copy).

    The private ops do neither (torch's public SDPA does both before calling them); a
    misaligned input faults with a sticky "misaligned address" CUDA error that poisons the
    whole process. Zero columns of q and k leave every score unchanged, and zero columns of v
    give output columns that the caller slices off."""
    if t.shape[-1] % 8:
        # The padded copy keeps the input's dimension order, so it may still need the copy below.
        t = torch.nn.functional.pad(t, (0, 8 - t.shape[-1] % 8))
    # Not .contiguous(): a view whose other dimensions have size 1 counts as contiguous and
    # would come back as it is, misaligned pointer and all.
    return t if aligned(t) else t.clone(memory_format=torch.contiguous_format)


def aligned(t) -> bool:
    """Whether ``t``'s data pointer and every stride but the last (which is 1) are 16-byte
    aligned: what torch's fused SDPA kernels assume of their inputs."""
    elements = 16 // t.element_size()
    return t.data_ptr() % 16 == 0 and t.stride(-1) == 1 and all(s % elements == 0 for s in t.stride()[:-1])


def fused_inputs(q, k, v):
    """q, k, v as ``(B, H, N, D)`` views, kernel-ready, with K/V heads repeated to q's."""
    heads = q.shape[2]
    return tuple(kernel_ready(t).transpose(1, 2) for t in (q, repeat_kv(k, heads), repeat_kv(v, heads)))


def output_and_lse(op, result):
    """Pick (output, logsumexp) from a private op's result by the schema's return names."""
    names = [r.name for r in op._schema.returns]
    lse_at = next((i for i, n in enumerate(names) if "sumexp" in n), 1)
    return result[names.index("output") if "output" in names else 0], result[lse_at]


def run_math(q, k, v, *, scale, left, right, attn_mask, cu_seqlens_q=None, cu_seqlens_k=None):
    """SDPA forced to the math backend under one explicit boolean mask (torch's ``is_causal``
    is top-left aligned, so never used); no lse (the public API returns none). Packed input
    (``cu_seqlens_*``) runs as a dense batch of one under :func:`document_mask`, its output
    returned packed."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if cu_seqlens_q is not None:
        mask = document_mask(cu_seqlens_q, cu_seqlens_k, left, right)[None, None]
        out, _ = run_math(q[None], k[None], v[None], scale=scale, left=-1, right=-1, attn_mask=mask)
        return out[0], None
    mask = band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    gqa = {"enable_gqa": q.shape[2] != k.shape[2]}
    if not HAS_GQA:
        k, v, gqa = repeat_kv(k, q.shape[2]), repeat_kv(v, q.shape[2]), {}
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask, scale=scale, **gqa)
    return out.transpose(1, 2), None


def run_flash(q, k, v, *, scale, causal):
    """``aten._scaled_dot_product_flash_attention`` (its ``is_causal`` only where Nq == Nk,
    where top-left and bottom-right agree): out ``(B, Nq, H, D)`` and lse (natural log)."""
    op = torch.ops.aten._scaled_dot_product_flash_attention.default
    result = op(*fused_inputs(q, k, v), dropout_p=0.0, is_causal=causal, return_debug_mask=False, scale=scale)
    out, lse = output_and_lse(op, result)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse


def run_cudnn(q, k, v, *, scale, causal):
    """``aten._scaled_dot_product_cudnn_attention``, as :func:`run_flash`; its lse's trailing
    stats dimension of size 1 dropped."""
    op = torch.ops.aten._scaled_dot_product_cudnn_attention.default
    result = op(*fused_inputs(q, k, v), attn_bias=None, compute_log_sumexp=True, dropout_p=0.0, is_causal=causal,
                return_debug_mask=False, scale=scale)
    out, lse = output_and_lse(op, result)
    if lse.dim() == 4:
        lse = lse.squeeze(-1)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse


def run_efficient(q, k, v, *, scale, causal, left, right, attn_mask):
    """``aten._scaled_dot_product_efficient_attention``: its own ``is_causal`` for plain causal
    with Nq == Nk; every other restriction as an additive 0/-inf bias (:func:`additive_bias`);
    its lse, padded along the queries to a multiple of 32, sliced back to Nq."""
    op = torch.ops.aten._scaled_dot_product_efficient_attention.default
    nq = q.shape[1]
    native_causal = causal and nq == k.shape[1] and left == -1 and attn_mask is None
    allowed = None if native_causal else band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    bias = None if allowed is None else additive_bias(allowed, q.dtype, q.shape[0], q.shape[2])
    result = op(*fused_inputs(q, k, v), attn_bias=bias, compute_log_sumexp=True, dropout_p=0.0,
                is_causal=native_causal, scale=scale)
    out, lse = output_and_lse(op, result)
    return out.transpose(1, 2)[..., : q.shape[-1]], lse[..., :nq]
