"""FlashAttention-2's call as flashcheck makes it: the protocol's arguments translated into
``flash_attn``'s, in plain torch.

The ``fa2`` adapters (:mod:`flashcheck.peers.fa2`) call these functions, and a standalone
reproduction script of an ``fa2`` failure (:mod:`flashcheck.repro.calls`) carries this module's
source, so that the script calls FlashAttention-2 exactly as flashcheck did, without flashcheck.
It imports nothing but torch.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0), which is FA2's own
``window_size``. The lse comes back detached: FA2's autograd functions discard its gradient.
"""

import torch


def dense(flash_attn_func, q, k, v, *, scale, causal, left, right):
    """``flash_attn_func`` with ``return_attn_probs=True``: out ``(B, Nq, H, D)``, lse ``(B, H, Nq)``."""
    out, lse, _ = flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=scale, causal=causal,
                                  window_size=(left, right), return_attn_probs=True)
    return out, lse.detach()


def varlen(flash_attn_varlen_func, q, k, v, *, scale, causal, left, right, cu_seqlens_q=None, cu_seqlens_k=None,
           max_seqlen_q=None, max_seqlen_k=None):
    """``flash_attn_varlen_func`` with ``return_attn_probs=True``: packed out ``(Tq, H, D)`` and
    lse ``(H, Tq)``; a dense batch (no ``cu_seqlens_q``) goes in packed as one sequence per
    batch entry (a reshape) and comes back dense, out ``(B, Nq, H, D)`` and lse ``(B, H, Nq)``."""
    dense_batch = cu_seqlens_q is None
    if dense_batch:
        batch, nq, nk = q.shape[0], q.shape[1], k.shape[1]
        steps = torch.arange(batch + 1, device=q.device, dtype=torch.int32)
        cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k = steps * nq, steps * nk, nq, nk
        q, k, v = (t.reshape(-1, *t.shape[2:]) for t in (q, k, v))
    out, lse, _ = flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                         dropout_p=0.0, softmax_scale=scale, causal=causal,
                                         window_size=(left, right), return_attn_probs=True)
    lse = lse.detach()
    if dense_batch:
        out = out.reshape(batch, nq, *out.shape[1:])
        lse = lse.reshape(lse.shape[0], batch, nq).permute(1, 0, 2)
    return out, lse
