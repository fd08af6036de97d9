"""xformers' call as flashcheck makes it: the protocol's arguments translated into
``xformers.ops.memory_efficient_attention``'s, in plain torch.

The ``xformers`` adapter (:mod:`flashcheck.peers.xformers`, whose docstring says where in xformers
each convention is read) hands its call over through these functions, and so does the
standalone script of an ``xformers`` failure (:mod:`flashcheck.repro.calls`), which carries this
source and that of :mod:`flashcheck.peers.sdpa_public_call`, whose band and bias it uses.

``scale`` is the softmax scale in effect; ``left`` and ``right`` the band that ``causal`` and
``window`` make together (-1 unbounded, causal's right side 0); ``attn_mask`` the protocol's
boolean mask (True = may attend) or None.
"""

import torch

from flashcheck.peers.sdpa_public_call import additive_bias, band_and_mask

#: The key axis of a tensor bias is stored padded to this many elements (xformers' alignment
#: hint: "attn_bias.stride(-2) % alignment").
BIAS_ALIGNMENT = 16


def tensor_bias(q, k, left, right, attn_mask):
    """The band AND the mask as an additive bias, 0 where a key may be attended and -inf
    elsewhere, in q's dtype: ``(B, H, Nq, Nk)`` broadcast views of storage whose key axis is
    padded to :data:`BIAS_ALIGNMENT` (:func:`flashcheck.peers.sdpa_public_call.additive_bias`)."""
    keep = band_and_mask(q, k, left=left, right=right, attn_mask=attn_mask)
    return additive_bias(keep, q.dtype, q.shape[0], q.shape[2], BIAS_ALIGNMENT)


def attention_bias(attn_bias, q, k, *, left, right, attn_mask=None):
    """The ``attn_bias`` that expresses the band and the mask; ``attn_bias`` is
    ``xformers.ops.fmha.attn_bias``. No restriction is None; a band without a mask the bias
    class that expresses it (an unbounded side of a two-sided window becomes ``max(Nq, Nk)``,
    which bounds nothing); with a mask, one additive tensor (:func:`tensor_bias`)."""
    if attn_mask is not None:
        return tensor_bias(q, k, left, right, attn_mask)
    if left == -1 and right == -1:
        return None
    if right == 0 and left == -1:
        return attn_bias.LowerTriangularFromBottomRightMask()
    if right == 0:
        return attn_bias.LowerTriangularFromBottomRightMask().make_local_attention(left + 1)
    far = max(q.shape[1], k.shape[1])
    return attn_bias.LocalAttentionFromBottomRightMask(window_left=far if left == -1 else left,
                                                       window_right=far if right == -1 else right)


def arguments(attn_bias, q, k, v, *, left, right, attn_mask=None):
    """``(query, key, value, bias)`` as ``memory_efficient_attention`` takes them: inputs whose
    last dimension is strided copied contiguous ("we only require the last dimension's stride
    to be 1"), and with GQA/MQA the 5-D ``[B, M, G, H, K]`` format, K/V expanded over each
    group's heads and a tensor bias reshaped to ``[B, G, H, Mq, Mkv]``."""
    bias = attention_bias(attn_bias, q, k, left=left, right=right, attn_mask=attn_mask)
    q, k, v = (t if t.stride(-1) == 1 or t.shape[-1] <= 1 else t.contiguous() for t in (q, k, v))
    b, nq, heads, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    if heads != hkv:
        group = heads // hkv
        q = q.reshape(b, nq, hkv, group, d)
        k, v = (t.unsqueeze(3).expand(b, nk, hkv, group, d) for t in (k, v))
        if isinstance(bias, torch.Tensor):
            bias = bias.reshape(b, hkv, group, nq, nk)
    return q, k, v, bias


def call(memory_efficient_attention, q, k, v, bias, *, scale):
    """``memory_efficient_attention`` on :func:`arguments`' output: out ``(B, Nq, H, D)``, and no
    lse (it returns none)."""
    out = memory_efficient_attention(q, k, v, attn_bias=bias, p=0.0, scale=scale)
    return out.reshape(q.shape[0], q.shape[1], -1, out.shape[-1]), None


def memory_efficient(memory_efficient_attention, attn_bias, q, k, v, *, scale, causal, left, right, attn_mask=None):
    """:func:`arguments`, then :func:`call`: the whole call, as a script makes it."""
    return call(memory_efficient_attention, *arguments(attn_bias, q, k, v, left=left, right=right,
                                                       attn_mask=attn_mask), scale=scale)
