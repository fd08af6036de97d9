"""FlashAttention-4's call as flashcheck makes it: the protocol's arguments translated into
``flash_attn.cute``'s, in plain torch.

The ``fa4`` adapters (:mod:`flashcheck.peers.fa4`) call these functions, and a standalone
reproduction script of an ``fa4`` failure (:mod:`flashcheck.repro.calls`) carries this module's
source, so that the script calls FlashAttention-4 exactly as flashcheck did, without flashcheck.
It imports nothing but :mod:`flashcheck.peers.plain_packing`, whose source a script carries
too.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0).
"""

from flashcheck.peers.plain_packing import pack_dense, unpack_dense


def window_size(left, right):
    """The band as FA4's ``window_size``: -1 (unbounded) becomes None."""
    return tuple(None if side == -1 else side for side in (left, right))


def dense(flash_attn_func, q, k, v, *, scale, causal, left, right, deterministic):
    """``flash_attn_func`` with ``return_lse=True``: out ``(B, Nq, H, D)``, lse ``(B, H, Nq)``."""
    return flash_attn_func(q, k, v, softmax_scale=scale, causal=causal, window_size=window_size(left, right),
                           deterministic=deterministic, return_lse=True)


def varlen(flash_attn_varlen_func, q, k, v, *, scale, causal, left, right, cu_seqlens_q=None, cu_seqlens_k=None,
           max_seqlen_q=None, max_seqlen_k=None):
    """``flash_attn_varlen_func`` with ``return_lse=True``: packed out ``(Tq, H, D)`` and lse
    ``(H, Tq)``; a dense batch (no ``cu_seqlens_q``) goes in packed as one sequence per batch
    entry (a reshape) and comes back dense, out ``(B, Nq, H, D)`` and lse ``(B, H, Nq)``."""
    dense_batch = cu_seqlens_q is None
    if dense_batch:
        batch, nq = q.shape[0], q.shape[1]
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k = pack_dense(q, k, v)
    out, lse = flash_attn_varlen_func(q, k, v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                                      max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k, softmax_scale=scale,
                                      causal=causal, window_size=window_size(left, right), return_lse=True)
    return unpack_dense(out, lse, batch, nq) if dense_batch else (out, lse)
