"""FlashAttention-2's call in plain torch: how flashcheck turns the protocol's arguments into
``flash_attn``'s.

Shared by the ``fa2`` adapters (:mod:`flashcheck.peers.fa2`) and by the standalone script of an
``fa2`` failure, which carries this source (:mod:`flashcheck.repro.calls`) and so makes the very
call the adapter made; its one import, :mod:`flashcheck.peers.plain_packing`, travels with it.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0), which is FA2's own
``window_size``. The lse comes back detached: FA2's autograd functions discard its gradient.
"""

from flashcheck.peers.plain_packing import pack_dense, unpack_dense


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
        batch, nq = q.shape[0], q.shape[1]
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k = pack_dense(q, k, v)
    out, lse, _ = flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                         dropout_p=0.0, softmax_scale=scale, causal=causal,
                                         window_size=(left, right), return_attn_probs=True)
    return unpack_dense(out, lse.detach(), batch, nq) if dense_batch else (out, lse.detach())
