"""torch's public ``scaled_dot_product_attention`` called as flashcheck calls it: the protocol's
arguments translated into SDPA's, in plain torch.

The ``sdpa-public-*`` adapters (:mod:`flashcheck.peers.sdpa_public`) call these functions, and a
standalone reproduction script of their failures (:mod:`flashcheck.repro.calls`) carries this
module's source, so that the script calls SDPA exactly as flashcheck did, without flashcheck. It
imports nothing but torch.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0); ``attn_mask`` the protocol's
boolean mask (True = may attend) or None. torch's ``is_causal`` is top-left aligned, the
protocol's causal bottom-right: the two agree only for ``Nq == Nk``, so ``is_causal=True`` is
passed only for plain causal with ``Nq == Nk`` and no mask, and every other restriction is one
boolean ``attn_mask`` with the band folded in.
"""

import torch

#: GQA through ``enable_gqa`` (torch 2.5 and later); K/V heads repeated before that.
HAS_GQA = torch.torch_version.TorchVersion(torch.__version__) >= (2, 5)


def band(nq, nk, left, right, device):
    """Boolean ``(Nq, Nk)``: query i may attend key j iff ``-left <= j - i - (Nk - Nq) <= right``."""
    offset = torch.arange(nk, device=device)[None, :] - torch.arange(nq, device=device)[:, None] - (nk - nq)
    allowed = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if left != -1:
        allowed &= offset >= -left
    if right != -1:
        allowed &= offset <= right
    return allowed


def as_4d(mask):
    """A boolean mask broadcastable to ``(B, H, Nq, Nk)`` as a 4-D view (leading dims of one)."""
    return mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))


def band_and_mask(q, k, *, left, right, attn_mask):
    """The band AND the protocol's mask for ``(B, N, H, D)`` q and k, boolean ``(B|1, H|1, Nq,
    Nk)``; None when every key is allowed."""
    if left == -1 and right == -1 and attn_mask is None:
        return None
    allowed = band(q.shape[1], k.shape[1], left, right, q.device)[None, None]
    return allowed if attn_mask is None else allowed & as_4d(attn_mask)


def additive_bias(keep, dtype, batch, heads, align=16):
    """The boolean ``keep`` (True = may attend, broadcastable to ``(B, H, Nq, Nk)``) as an
    additive bias, 0 where kept and -inf elsewhere, in ``dtype``: ``(B, H, Nq, Nk)`` broadcast
    views of storage whose key axis is padded to a multiple of ``align`` elements (at least
    one multiple), the alignment memory-efficient kernels ask of a bias's rows. Used by the
    translations for kernels that take a bias rather than a mask (torch's private efficient
    operator, xformers)."""
    keep = as_4d(keep)
    bm, hm, nq, nk = keep.shape
    padded = max(-(-nk // align) * align, align)
    bias = torch.zeros(bm, hm, nq, padded, dtype=dtype, device=keep.device)[..., :nk]
    bias.masked_fill_(~keep, float("-inf"))
    return bias.expand(batch, heads, nq, nk)


def native_causal(causal, nq, nk, left, has_mask) -> bool:
    """Whether the band goes to SDPA as its own ``is_causal``: plain causal with ``Nq == Nk``
    and no mask (``is_causal`` is top-left aligned, the protocol's bottom-right)."""
    return causal and nq == nk and left == -1 and not has_mask


def arguments(q, k, v, *, causal, left, right, attn_mask):
    """``(q, k, v, attn_mask, is_causal, gqa_kwargs)`` as SDPA takes them: ``(B, H, N, D)``
    views, the band and the mask as one boolean mask broadcastable to ``(B, H, Nq, Nk)``."""
    native = native_causal(causal, q.shape[1], k.shape[1], left, attn_mask is not None)
    mask = None if native else band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    gqa = {"enable_gqa": q.shape[1] != k.shape[1]}
    if not HAS_GQA:
        k, v = (t.repeat_interleave(q.shape[1] // k.shape[1], dim=1) for t in (k, v))
        gqa = {}
    return q, k, v, mask, native, gqa


def run_backend(backend, q, k, v, mask, is_causal, gqa, *, scale):
    """SDPA under ``sdpa_kernel(backend)`` (an ``SDPBackend`` member's name) on
    :func:`arguments`' output: out back in ``(B, Nq, H, D)``, and no lse (the public API returns none)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, backend)):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0,
                                                               is_causal=is_causal, scale=scale, **gqa)
    return out.transpose(1, 2), None
