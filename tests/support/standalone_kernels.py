"""Held-out implementations in plain torch that import nothing of flashcheck, so that the
standalone reproduction scripts can be run on them with flashcheck not importable.

``correct`` is standard attention in float32 arithmetic (every protocol feature, a
differentiable lse, rows without keys giving out 0 and lse -inf); each other one plants
independent bugs in it:

- ``causal_off_by_one``: with ``causal``, each query also attends the key after the diagonal;
- ``lse_off_without_band``: lse is 0.01 too large on dense cases without band or mask;
- ``two_bugs``: both of those, which touch different properties and case classes;
- ``across_documents``: packed sequences attend keys of every sequence;
- ``ignores_mask``: ``attn_mask`` is ignored;
- ``scaled_dq``: dQ comes back 5% too large; ``packed_scaled_dq``: only from packed calls;
- ``crashes_when_dense_causal``: the process aborts on every dense causal case (not packed, no mask);
- ``layout_dependent``: the output moves one float32 step up when q is not contiguous;
- ``batch_coupled``: each row's maximum is taken over every batch entry and head, so that the
  last bits of a result depend on the others' values;
- ``gqa_modulo``: query head h reads KV head ``h % Hkv`` instead of ``h // (H // Hkv)``;
- ``key_order_weighted``: key j's weight is scaled by ``1 + j / (100·Nk)``, so that the output
  depends on the keys' order;
- ``output_biased``: the output comes back 0.001 too large, so that it is not linear in V;
- ``max_over_hidden_keys``: each row's maximum is taken over every key, hidden ones included
  (the mask applied after it), so that hidden keys change the last bits of a row's result, and
  huge ones make it NaN;
- ``max_not_subtracted``: the exponentials are taken of the scores themselves, so that keys
  shifted far enough overflow them;
- ``writes_into_q``: the call adds 1 to q's first element after computing its results;
- ``writes_into_k_in_backward``: the backward pass adds 1 to k's first element;
- ``writes_before_out``: with the feature "out" (``correct_out`` is correct with it), the call
  writes the element just before the given out;
- ``keeps_every_output``: every call's output is kept alive for good (device memory grows);
- ``reads_past_q``: packed calls add 0 times the element of memory just past q's last one.
"""

from __future__ import annotations

import math
import os

import torch

FEATURES = frozenset({"causal", "window", "gqa", "mask", "varlen", "lse", "backward"})


def _allowed(nq, nk, *, causal, window, attn_mask, cu_seqlens_q, cu_seqlens_k, device, right_extra=0,
             documents=True):
    """Boolean (1|B, 1|H, Nq, Nk): band aligned bottom-right (per sequence when packed), AND mask."""
    left, right = window
    if causal:
        right = 0
    if right != -1:
        right += right_extra
    if cu_seqlens_q is None:
        i = torch.arange(nq, device=device)[:, None]
        j = torch.arange(nk, device=device)[None, :]
        offset = j - i - (nk - nq)
        same = torch.ones(nq, nk, dtype=torch.bool, device=device)
    else:
        def where_in_sequence(cu, total):
            cu = cu.long()
            token = torch.arange(total, device=device)
            sequence = torch.searchsorted(cu[1:], token, right=True)
            return sequence, token - cu[sequence], (cu[1:] - cu[:-1])[sequence]

        sq, pq, lq = where_in_sequence(cu_seqlens_q, nq)
        sk, pk, lk = where_in_sequence(cu_seqlens_k, nk)
        same = sq[:, None] == sk[None, :] if documents else torch.ones(nq, nk, dtype=torch.bool, device=device)
        offset = pk[None, :] - pq[:, None] - (lk[None, :] - lq[:, None])
    allowed = same
    if left != -1:
        allowed = allowed & (offset >= -left)
    if right != -1:
        allowed = allowed & (offset <= right)
    allowed = allowed[None, None]
    if attn_mask is not None:
        mask = attn_mask
        while mask.dim() < 4:
            mask = mask[None]
        allowed = allowed & mask
    return allowed


class _ScaleGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, factor):
        ctx.factor = factor
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor, None


class _WriteInBackward(torch.autograd.Function):
    """The identity, whose backward pass adds 1 to the first element of the tensor it saw."""

    @staticmethod
    def forward(ctx, tensor):
        ctx.written = tensor
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx, grad):
        with torch.no_grad():
            ctx.written[(0,) * ctx.written.dim()] += 1
        return grad


def _attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None, cu_seqlens_q=None,
               cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None, bugs=frozenset()):
    packed = q.dim() == 3
    if "scaled_dq" in bugs or ("packed_scaled_dq" in bugs and packed):
        q = _ScaleGradient.apply(q, 1.05)
    if "writes_into_k_in_backward" in bugs and k.requires_grad:
        k = _WriteInBackward.apply(k)
    q4, k4, v4 = (t[None] if packed else t for t in (q, k, v))
    heads, kv_heads, head_dim = q4.shape[2], k4.shape[2], q4.shape[3]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
    allowed = _allowed(q4.shape[1], k4.shape[1], causal=causal, window=window,
                       attn_mask=None if "ignores_mask" in bugs else attn_mask,
                       cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, device=q.device,
                       right_extra=1 if causal and "causal_off_by_one" in bugs else 0,
                       documents="across_documents" not in bugs)
    group = heads // kv_heads
    qf = q4.float().transpose(1, 2)
    if "gqa_modulo" in bugs:
        kf, vf = (t.float().transpose(1, 2).repeat(1, group, 1, 1) for t in (k4, v4))
    else:
        kf, vf = (t.float().transpose(1, 2).repeat_interleave(group, dim=1) for t in (k4, v4))
    scores = scale * (qf @ kf.transpose(-1, -2))
    logits = scores.masked_fill(~allowed, -math.inf)
    if logits.shape[-1] and "max_over_hidden_keys" in bugs:
        row_max = scores.amax(dim=-1, keepdim=True).detach()
    elif logits.shape[-1] and "max_not_subtracted" in bugs:
        row_max = torch.zeros_like(logits[..., :1])
    elif logits.shape[-1] and "batch_coupled" in bugs:
        row_max = logits.amax(dim=(0, 1, 3), keepdim=True).detach().expand(*logits.shape[:-1], 1)
    elif logits.shape[-1]:
        row_max = logits.amax(dim=-1, keepdim=True).detach()
    else:  # no keys at all
        row_max = logits.new_full((*logits.shape[:-1], 1), -math.inf)
    empty = (logits.amax(dim=-1, keepdim=True) == -math.inf) if logits.shape[-1] else row_max == -math.inf
    row_max = torch.where(empty, torch.zeros_like(row_max), row_max)
    weights = torch.exp(logits - row_max)
    if "key_order_weighted" in bugs:
        weights = weights * (1 + torch.arange(weights.shape[-1], device=q.device) / (100 * weights.shape[-1]))
    total = torch.where(empty, torch.ones_like(row_max), weights.sum(dim=-1, keepdim=True))
    out = ((weights / total) @ vf).transpose(1, 2)
    if "output_biased" in bugs:
        out = out + 1e-3
    if "reads_past_q" in bugs and packed:
        storage = torch.empty(0, dtype=q.dtype, device=q.device).set_(q.untyped_storage())
        end = q.storage_offset() + sum((size - 1) * stride for size, stride in zip(q.shape, q.stride())) + 1
        if end < storage.numel():
            out = out + 0 * storage[end].float()
    if "layout_dependent" in bugs and not q.is_contiguous():
        out = torch.nextafter(out, torch.full_like(out, math.inf))
    out = out.to(q.dtype)
    lse = torch.where(empty, torch.full_like(row_max, -math.inf), row_max + torch.log(total)).squeeze(-1)
    banded = causal or tuple(window) != (-1, -1) or attn_mask is not None or packed
    if "lse_off_without_band" in bugs and not banded:
        lse = lse + 0.01
    return (out[0], lse[0]) if packed else (out, lse)


_KEPT = []  # what keeps_every_output holds on to


def _planted(*bugs, features=FEATURES):
    def attention(q, k, v, out=None, lse_out=None, **kwargs):
        dense = kwargs.get("attn_mask") is None and kwargs.get("cu_seqlens_q") is None
        if "crashes_when_dense_causal" in bugs and kwargs.get("causal") and dense:
            os.abort()
        result = _attention(q, k, v, bugs=frozenset(bugs), **kwargs)
        if "keeps_every_output" in bugs:
            _KEPT.append(result[0])
        if "writes_into_q" in bugs:
            with torch.no_grad():
                q[(0,) * q.dim()] += 1
        if out is not None:  # the feature "out": written in place
            with torch.no_grad():
                out.copy_(result[0])
                lse_out.copy_(result[1])
                if "writes_before_out" in bugs:
                    storage = torch.empty(0, dtype=out.dtype, device=out.device).set_(out.untyped_storage())
                    storage[out.storage_offset() - 1] = 0
            return out, lse_out
        return result

    attention.flashcheck_features = features
    return attention


correct = _planted()
causal_off_by_one = _planted("causal_off_by_one")
lse_off_without_band = _planted("lse_off_without_band")
two_bugs = _planted("causal_off_by_one", "lse_off_without_band")
across_documents = _planted("across_documents")
ignores_mask = _planted("ignores_mask")
scaled_dq = _planted("scaled_dq")
packed_scaled_dq = _planted("packed_scaled_dq")
crashes_when_dense_causal = _planted("crashes_when_dense_causal")
layout_dependent = _planted("layout_dependent")
batch_coupled = _planted("batch_coupled")
gqa_modulo = _planted("gqa_modulo")
key_order_weighted = _planted("key_order_weighted")
output_biased = _planted("output_biased")
max_over_hidden_keys = _planted("max_over_hidden_keys")
max_not_subtracted = _planted("max_not_subtracted")
writes_into_q = _planted("writes_into_q")
writes_into_k_in_backward = _planted("writes_into_k_in_backward")
correct_out = _planted(features=FEATURES | {"out"})
keeps_every_output = _planted("keeps_every_output")
reads_past_q = _planted("reads_past_q")
writes_before_out = _planted("writes_before_out", features=FEATURES | {"out"})
