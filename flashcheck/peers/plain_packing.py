"""A dense batch through a packed (variable-length) call, in plain torch: what every
plain-call module of a varlen kernel (:mod:`flashcheck.peers.fa2_call`,
:mod:`~flashcheck.peers.fa4_call`, :mod:`~flashcheck.peers.flaggems_call`) does with a case that
is not packed.

A standalone script carries this module's source before its translation's, without the
translation's import of it (:mod:`flashcheck.repro.calls`): it imports nothing but torch.
"""

import torch


def pack_dense(q, k, v):
    """Dense ``(B, N, H, D)`` q, k, v as one packed sequence per batch entry:
    ``(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)``, the tensors
    ``(B·N, H, D)`` (a reshape: a view where the strides allow), the offsets int32 on q's device."""
    batch, nq, nk = q.shape[0], q.shape[1], k.shape[1]
    steps = torch.arange(batch + 1, device=q.device, dtype=torch.int32)
    packed = (t.reshape(-1, *t.shape[2:]) for t in (q, k, v))
    return (*packed, steps * nq, steps * nk, nq, nk)


def unpack_dense(out, lse, batch, nq):
    """A packed call's out ``(B·N, H, D)`` and lse ``(H, B·N)`` of :func:`pack_dense`'s
    sequences back in the dense layouts ``(B, N, H, D)`` and ``(B, H, N)`` (views)."""
    out = out.reshape(batch, nq, *out.shape[1:])
    lse = lse.reshape(lse.shape[0], batch, nq).permute(1, 0, 2)
    return out, lse
