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


def document_mask(cu_seqlens_q, cu_seqlens_k, left, right):
    """Boolean ``(Tq, Tk)`` of packed sequences run as one dense batch: query token i may attend
    key token j iff both are of the same sequence and, at their positions within it, j lies in
    the band ``[i + nk - nq - left, i + nk - nq + right]`` (bottom-right per sequence; -1
    unbounded). The same mask as flashcheck's own packed-as-dense translation, written here in
    plain torch so that a script carries it (tests/test_campaign.py checks the two agree)."""
    cq, ck = (c.to(torch.int64) for c in (cu_seqlens_q, cu_seqlens_k))
    queries = torch.arange(int(cq[-1]), device=cq.device)
    keys = torch.arange(int(ck[-1]), device=cq.device)
    seq_q = torch.searchsorted(cq, queries, right=True) - 1
    seq_k = torch.searchsorted(ck, keys, right=True) - 1
    diagonal = (queries - cq[seq_q]) + (ck[1:] - ck[:-1] - cq[1:] + cq[:-1])[seq_q]
    position_k = keys - ck[seq_k]
    allowed = seq_q[:, None] == seq_k[None, :]
    if left != -1:
        allowed &= position_k[None, :] >= diagonal[:, None] - left
    if right != -1:
        allowed &= position_k[None, :] <= diagonal[:, None] + right
    return allowed
