"""Fakes of the peer libraries, for the CPU tests of flashcheck.peers.

Each fake stands in for one library module (injected into ``sys.modules`` by the tests) and
follows that library's documented conventions, not the protocol's: its layout, its window
encoding, its lse shape and units. It checks what reaches it the way the library does (an
argument in the wrong encoding is an AssertionError, as the library's own asserts would
raise), records every call, and computes its result with :func:`attention`, a float64
softmax attention written from the protocol's text. An adapter passes its test only if its
translation into the library's conventions and back is exact.

The fakes are torch code, so gradients flow through them by autograd.
"""
from __future__ import annotations

import dataclasses
import math
import types

import torch


def band(nq: int, nk: int, left: int | None, right: int | None) -> torch.Tensor:
    """Bool ``(nq, nk)``: query ``i`` may attend key ``j`` iff ``i + nk - nq - left <= j <=
    i + nk - nq + right`` (bottom-right aligned); ``None`` bounds nothing."""
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    diagonal = i + nk - nq
    keep = torch.ones(nq, nk, dtype=torch.bool)
    if left is not None:
        keep &= j >= diagonal - left
    if right is not None:
        keep &= j <= diagonal + right
    return keep


def attention(q, k, v, *, scale: float, keep=None):
    """Softmax attention in float64 on ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)`` (query
    head ``h`` reads KV head ``h // (H // Hkv)``), ``keep`` a bool broadcastable to
    ``(B, H, Nq, Nk)`` (None: every key). Returns out ``(B, Nq, H, D)`` in q's dtype and the
    natural-log lse ``(B, H, Nq)`` float32; a row without keys gets out 0 and lse -inf.
    Differentiable in q, k, v."""
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    kd, vd = (t.repeat_interleave(h // hkv, dim=1) if hkv else t for t in (kd, vd))
    keep = torch.ones(1, 1, nq, nk, dtype=torch.bool) if keep is None else keep.cpu()
    keep = keep.to(q.device).expand(b, h, nq, nk)
    has_key = keep.any(-1, keepdim=True)
    scores = (qd @ kd.transpose(-1, -2) * scale).masked_fill(~keep, -math.inf).masked_fill(~has_key, 0.0)
    probs = torch.softmax(scores, -1).masked_fill(~keep, 0.0)
    lse = torch.logsumexp(scores, -1).masked_fill(~has_key[..., 0], -math.inf)
    return (probs @ vd).transpose(1, 2).to(q.dtype), lse.float()


def packed_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, *, scale: float, left=None, right=None):
    """:func:`attention` on packed ``(T, H, D)`` tensors, each sequence on its own with the
    band aligned bottom-right in it: out ``(Tq, H, D)``, lse ``(H, Tq)``."""
    outs, lses = [], []
    offsets_q, offsets_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for s in range(len(offsets_q) - 1):
        qs = q[offsets_q[s]:offsets_q[s + 1]].unsqueeze(0)
        ks, vs = (t[offsets_k[s]:offsets_k[s + 1]].unsqueeze(0) for t in (k, v))
        out, lse = attention(qs, ks, vs, scale=scale, keep=band(qs.shape[1], ks.shape[1], left, right))
        outs.append(out[0])
        lses.append(lse[0])
    return torch.cat(outs), torch.cat(lses, dim=-1)


def _module(name: str, version: str = "0.0-fake") -> types.ModuleType:
    module = types.ModuleType(name)
    module.__version__ = version
    module.calls = []
    return module


# ---------------------------------------------------------------- FlashAttention-4


def _fa4_window(causal, window_size):
    """flash_attn/cute/interface.py _resolve_causal_local_window: None is unbounded, and
    causal makes the right side 0."""
    left, right = window_size
    for side in (left, right):
        assert side is None or (isinstance(side, int) and side >= 0), \
            f"FA4 encodes an unbounded window side as None, got window_size={window_size}"
    return left, 0 if causal else right


def fake_fa4() -> types.ModuleType:
    """``flash_attn.cute``: flash_attn_func and flash_attn_varlen_func, lse natural log,
    ``(B, H, Nq)`` dense and ``(H, Tq)`` packed."""
    module = _module("flash_attn.cute", "4.0.0b-fake")

    def flash_attn_func(q, k, v, qv=None, gather_kv_indices=None, softmax_scale=None, causal=False,
                        window_size=(None, None), learnable_sink=None, softcap=0.0, num_splits=1, pack_gqa=None,
                        deterministic=False, score_mod=None, score_mod_bwd=None, mask_mod=None, aux_tensors=None,
                        aux_scalars=None, block_sparse_tensors=None, block_sparse_tensors_bwd=None, return_lse=False):
        module.calls.append(dict(function="flash_attn_func", q=q, k=k, v=v, softmax_scale=softmax_scale, causal=causal,
                                 window_size=window_size, deterministic=deterministic, return_lse=return_lse))
        assert q.dim() == 4 and k.shape[:2] == (q.shape[0], k.shape[1]) and q.shape[2] % k.shape[2] == 0
        left, right = _fa4_window(causal, window_size)
        scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(q.shape[-1])
        out, lse = attention(q, k, v, scale=scale, keep=band(q.shape[1], k.shape[1], left, right))
        return out, lse if return_lse else None

    def flash_attn_varlen_func(q, k, v, qv=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
                               max_seqlen_k=None, min_seqlen_k=None, seqused_q=None, seqused_k=None,
                               gather_kv_indices=None, page_table=None, softmax_scale=None, causal=False,
                               window_size=(None, None), learnable_sink=None, softcap=0.0, num_splits=1,
                               pack_gqa=None, deterministic=False, score_mod=None, score_mod_bwd=None, mask_mod=None,
                               block_sparse_tensors=None, aux_tensors=None, aux_scalars=None, return_lse=False,
                               scheduler_metadata=None, seqlen_k_per_split=None, disable_scheduler_metadata=False):
        module.calls.append(dict(function="flash_attn_varlen_func", q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q,
                                 cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
                                 softmax_scale=softmax_scale, causal=causal, window_size=window_size,
                                 deterministic=deterministic, return_lse=return_lse))
        assert q.dim() == 3 and k.dim() == 3, "packed q (total_q, H, D), k and v (total_k, Hkv, D)"
        for t in (cu_seqlens_q, cu_seqlens_k):
            assert t.dtype == torch.int32 and t.stride(0) == 1, "cu_seqlens must be contiguous int32"
        left, right = _fa4_window(causal, window_size)
        scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(q.shape[-1])
        out, lse = packed_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, scale=scale, left=left, right=right)
        return out, lse if return_lse else None

    module.flash_attn_func = flash_attn_func
    module.flash_attn_varlen_func = flash_attn_varlen_func
    return module


# ---------------------------------------------------------------- FlashAttention-2


def _fa2_window(causal, window_size):
    """flash_attn_func's docstring: (left, right), -1 unbounded; csrc/flash_api.cpp: causal
    makes the right side 0."""
    left, right = window_size
    for side in (left, right):
        assert isinstance(side, int) and side >= -1, f"FA2 encodes an unbounded side as -1, got {window_size}"
    left, right = (None if side == -1 else side for side in (left, right))
    return left, 0 if causal else right


def fake_fa2() -> types.ModuleType:
    """``flash_attn``: flash_attn_func and flash_attn_varlen_func; with
    return_attn_probs=True they return ``(out, softmax_lse, S_dmask)``, lse natural log
    ``(B, H, Nq)`` dense and ``(H, Tq)`` packed (v2.6+)."""
    module = _module("flash_attn", "2.8.3-fake")

    def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                        softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
        module.calls.append(dict(function="flash_attn_func", q=q, k=k, v=v, dropout_p=dropout_p,
                                 softmax_scale=softmax_scale, causal=causal, window_size=window_size,
                                 return_attn_probs=return_attn_probs))
        left, right = _fa2_window(causal, window_size)
        scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
        out, lse = attention(q, k, v, scale=scale, keep=band(q.shape[1], k.shape[1], left, right))
        return (out, lse, torch.empty(0)) if return_attn_probs else out

    def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                               softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                               deterministic=False, return_attn_probs=False, block_table=None):
        module.calls.append(dict(function="flash_attn_varlen_func", q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q,
                                 cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
                                 dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal,
                                 window_size=window_size, return_attn_probs=return_attn_probs))
        assert cu_seqlens_q.dtype == torch.int32 and cu_seqlens_k.dtype == torch.int32
        left, right = _fa2_window(causal, window_size)
        scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
        out, lse = packed_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, scale=scale, left=left, right=right)
        return (out, lse, torch.empty(0)) if return_attn_probs else out

    module.flash_attn_func = flash_attn_func
    module.flash_attn_varlen_func = flash_attn_varlen_func
    return module


# ---------------------------------------------------------------- FlagGems


class _GemsSdpa(torch.autograd.Function):
    """FlagGems' ScaleDotProductAttention: the forward and backward of torch's SDPA contract,
    with the backward's asserts (scaled_dot_product_attention_backward)."""

    @staticmethod
    def forward(ctx, q, k, v, keep, scale):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(t.requires_grad) for t in (q, k, v)]
            out, _ = attention(*(t.transpose(1, 2) for t in leaves), scale=scale, keep=keep)
            out = out.transpose(1, 2)
        ctx.save_for_backward(q, k, v)
        ctx.graph = (leaves, out)
        return out.detach()

    @staticmethod
    def backward(ctx, do):
        q, k, v = ctx.saved_tensors
        assert do.is_contiguous(), "FlagGems: assert do.is_contiguous()"
        assert q.is_contiguous() and k.is_contiguous() and v.is_contiguous(), "FlagGems: q, k, v contiguous"
        assert q.stride() == do.stride() and k.stride() == v.stride(), "FlagGems: stride asserts"
        leaves, out = ctx.graph
        grads = torch.autograd.grad(out, [t for t in leaves if t.requires_grad], do, allow_unused=True)
        it = iter(grads)
        return (*(next(it) if t.requires_grad else None for t in leaves), None, None)


def fake_flaggems() -> types.ModuleType:
    """``flag_gems.ops``: scaled_dot_product_attention (torch's SDPA contract: (B, H, N, D),
    top-left is_causal, boolean mask True = attend, read as a 4-D (B, H, Nq, Nk) tensor),
    flash_attention_forward (aten._flash_attention_forward's: (B, N, H, D), FlashAttention-2's
    window, lse (B, H, Nq)) and flash_attn_varlen_func (vLLM's: paged keys through
    block_table and seqused_k, lse (H, Tq))."""
    module = _module("flag_gems.ops", "3.0-fake")

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
        module.calls.append(dict(function="scaled_dot_product_attention", q=query, k=key, v=value,
                                 attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                                 enable_gqa=enable_gqa))
        assert query.shape[-1] in {16, 32, 64, 128, 256}
        assert enable_gqa or query.shape[1] == key.shape[1], "enable_gqa must be True to support different head numbers"
        nq, nk = query.shape[2], key.shape[2]
        keep = None
        if is_causal:  # torch's is_causal: top-left, ones(L, S).tril()
            keep = torch.ones(nq, nk, dtype=torch.bool).tril()
        if attn_mask is not None:
            assert attn_mask.dtype == torch.bool and attn_mask.shape == (query.shape[0], query.shape[1], nq, nk), \
                "the kernel reads the mask through all four strides: (B, H, Nq, Nk)"
            keep = attn_mask if keep is None else keep & attn_mask
        if torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value)):
            return _GemsSdpa.apply(query, key, value, keep, scale)
        out, _ = attention(*(t.transpose(1, 2) for t in (query, key, value)), scale=scale, keep=keep)
        return out.transpose(1, 2)

    def flash_attention_forward(query, key, value, cumulative_sequence_length_q, cumulative_sequence_length_k, max_q,
                                max_k, dropout_p, is_causal, return_debug_mask, *, scale=None, softcap=0.0,
                                window_size_left=None, window_size_right=None, seqused_k=None, alibi_slopes=None,
                                disable_splitkv=False):
        module.calls.append(dict(function="flash_attention_forward", q=query, k=key, v=value,
                                 cu_q=cumulative_sequence_length_q, cu_k=cumulative_sequence_length_k, max_q=max_q,
                                 max_k=max_k, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                                 window_size_left=window_size_left, window_size_right=window_size_right))
        assert cumulative_sequence_length_q is None and cumulative_sequence_length_k is None, "varlen is not supported"
        assert all(t.stride(-1) == 1 for t in (query, key, value)), "Input tensor must have contiguous last dimension"
        assert query.dtype in (torch.float16, torch.bfloat16)
        left = -1 if window_size_left is None else window_size_left
        right = -1 if window_size_right is None else window_size_right
        left, right = _fa2_window(is_causal, (left, right))
        out, lse = attention(query, key, value, scale=scale or query.shape[-1] ** -0.5,
                             keep=band(query.shape[1], key.shape[1], left, right))
        return out, lse, None, None, None

    def flash_attn_varlen_func(q, k, v, max_seqlen_q, cu_seqlens_q, max_seqlen_k, cu_seqlens_k=None, seqused_k=None,
                               q_v=None, dropout_p=0.0, softmax_scale=None, causal=False, window_size=None,
                               softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False,
                               block_table=None, return_softmax_lse=False, out=None, **_):
        module.calls.append(dict(function="flash_attn_varlen_func", q=q, k=k, v=v, max_seqlen_q=max_seqlen_q,
                                 cu_seqlens_q=cu_seqlens_q, max_seqlen_k=max_seqlen_k, cu_seqlens_k=cu_seqlens_k,
                                 seqused_k=seqused_k, softmax_scale=softmax_scale, causal=causal,
                                 window_size=window_size, block_table=block_table,
                                 return_softmax_lse=return_softmax_lse))
        assert cu_seqlens_k is None or seqused_k is None, "cu_seqlens_k and seqused_k cannot be provided at the same time"
        assert block_table is not None and seqused_k is not None, "mha_varlan_fwd: page_table is not None"
        assert k.dim() == 4 and k.shape == v.shape and k.stride() == v.stride(), "paged k, v (pages, page size, Hkv, D)"
        assert block_table.dtype == torch.int32 and seqused_k.dtype == torch.int32
        left, right = _fa2_window(causal, (-1, -1) if window_size is None else tuple(window_size))
        page = k.shape[1]
        rows_k, rows_v = k.reshape(-1, *k.shape[2:]), v.reshape(-1, *v.shape[2:])
        keys, values, offsets = [], [], [0]
        for s, used in enumerate(seqused_k.tolist()):
            index = torch.arange(used)
            rows = block_table[s].long()[index // page] * page + index % page
            keys.append(rows_k[rows])
            values.append(rows_v[rows])
            offsets.append(offsets[-1] + used)
        cu_k = torch.tensor(offsets, dtype=torch.int32)
        out, lse = packed_attention(q, torch.cat(keys), torch.cat(values), cu_seqlens_q, cu_k,
                                    scale=softmax_scale or q.shape[-1] ** -0.5, left=left, right=right)
        return (out, lse) if return_softmax_lse else out

    module.scaled_dot_product_attention = scaled_dot_product_attention
    module.flash_attention_forward = flash_attention_forward
    module.flash_attn_varlen_func = flash_attn_varlen_func
    return module


# ---------------------------------------------------------------- xformers


class LowerTriangularFromBottomRightMask:
    """xformers.ops.fmha.attn_bias: causal, aligned bottom-right."""

    def make_local_attention(self, window_size):
        return LowerTriangularFromBottomRightLocalAttentionMask(window_size)

    def keep(self, nq, nk):
        return band(nq, nk, None, 0)


@dataclasses.dataclass
class LowerTriangularFromBottomRightLocalAttentionMask(LowerTriangularFromBottomRightMask):
    """Causal bottom-right, keeping ``window_size`` keys: key distance from the end in
    ``[X, X + window_size)`` for a query at distance X from the end."""

    _window_size: int

    def __post_init__(self):
        assert self._window_size > 0, f"Expected `window_size > 0`, but window_size={self._window_size}"

    def keep(self, nq, nk):
        return band(nq, nk, self._window_size - 1, 0)


@dataclasses.dataclass
class LocalAttentionFromBottomRightMask:
    """q - window_left <= k + s <= q + window_right, s = num_queries - num_keys."""

    window_left: int
    window_right: int

    def __post_init__(self):
        assert self.window_left >= 0 and self.window_right >= 0

    def keep(self, nq, nk):
        return band(nq, nk, self.window_left, self.window_right)


@dataclasses.dataclass
class Inputs:
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    attn_bias: object = None
    p: float = 0.0
    scale: float | None = None


def fake_xformers(refuse: str | None = None) -> types.ModuleType:
    """``xformers.ops``: memory_efficient_attention on ``[B, M, H, K]`` or ``[B, M, G, H, K]``,
    attn_bias a class above or an additive tensor; ``fmha._dispatch_fw``/``_dispatch_bw``
    raise xformers' "No operator found" NotImplementedError when ``refuse`` is set."""
    module = _module("xformers.ops", "0.0.35-fake")
    attn_bias = types.SimpleNamespace(
        LowerTriangularFromBottomRightMask=LowerTriangularFromBottomRightMask,
        LowerTriangularFromBottomRightLocalAttentionMask=LowerTriangularFromBottomRightLocalAttentionMask,
        LocalAttentionFromBottomRightMask=LocalAttentionFromBottomRightMask)

    def dispatch(name):
        def run(inp, *args, **kwargs):
            module.calls.append(dict(function=name, inputs=inp, args=args, kwargs=kwargs))
            if refuse:
                raise NotImplementedError(
                    f"No operator found for `memory_efficient_attention_forward` with inputs:\n"
                    f"     query       : shape={tuple(inp.query.shape)}\n"
                    f"`fa2F@2.8.3` is not supported because:\n    {refuse}\n"
                    f"`cutlassF-pt` is not supported because:\n    {refuse}")
            return object()
        return run

    def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None, *, op=None,
                                   output_dtype=None):
        module.calls.append(dict(function="memory_efficient_attention", q=query, k=key, v=value, attn_bias=attn_bias,
                                 p=p, scale=scale))
        assert all(t.stride(-1) == 1 for t in (query, key, value)), "we only require the last dimension's stride to be 1"
        five = query.dim() == 5
        b, nq, nk = query.shape[0], query.shape[1], key.shape[1]
        flat = [t.reshape(*t.shape[:2], -1, t.shape[-1]) if five else t for t in (query, key, value)]
        if five:  # [B, M, G, H, K], K/V expanded over each group's heads
            g, hg = query.shape[2], query.shape[3]
            assert key.stride(3) == 0 and key.shape[2:4] == (g, hg), "GQA: K/V expanded over the group's heads"
        keep = None
        if isinstance(attn_bias, torch.Tensor):
            expected = (b, *query.shape[2:4], nq, nk) if five else (b, query.shape[2], nq, nk)
            assert attn_bias.shape == expected and attn_bias.dtype == query.dtype, "tensor bias [B, (G,) H, Mq, Mkv]"
            keep = (attn_bias.reshape(b, -1, nq, nk) == 0)
            assert bool(((attn_bias == 0) | (attn_bias == -math.inf)).all()), "a 0 / -inf bias here"
        elif attn_bias is not None:
            keep = attn_bias.keep(nq, nk)
        out, _ = attention(*flat, scale=scale if scale is not None else query.shape[-1] ** -0.5, keep=keep)
        return out.reshape(query.shape)

    module.fmha = types.SimpleNamespace(attn_bias=attn_bias, Inputs=Inputs, _dispatch_fw=dispatch("_dispatch_fw"),
                                        _dispatch_bw=dispatch("_dispatch_bw"))
    module.memory_efficient_attention = memory_efficient_attention
    return module


def on_cpu(adapter):
    """``adapter`` with its CUDA features declared for the CPU too, so that its translation
    can run on CPU tensors against a fake (its other declines are unchanged)."""
    adapter.flashcheck_features_by_device = {**adapter.flashcheck_features_by_device,
                                             "cpu": adapter.flashcheck_features_by_device["cuda"]}
    return adapter


def inputs(b, nq, nk, h, hkv, d, dtype=torch.float16, seed=0, requires_grad=False):
    """q ``(B, Nq, H, D)``, k and v ``(B, Nk, Hkv, D)``, seeded normal values."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, n, heads, d, generator=g).to(dtype).requires_grad_(requires_grad)
                 for n, heads in ((nq, h), (nk, hkv), (nk, hkv)))


def packed_inputs(lengths, h, hkv, d, dtype=torch.float16, seed=0):
    """Packed q ``(Tq, H, D)``, k and v ``(Tk, Hkv, D)`` for ``lengths`` [(nq, nk), ...], and
    the protocol's packed keyword arguments."""
    g = torch.Generator().manual_seed(seed)
    tq, tk = sum(n for n, _ in lengths), sum(n for _, n in lengths)
    q, k, v = (torch.randn(t, heads, d, generator=g).to(dtype) for t, heads in ((tq, h), (tk, hkv), (tk, hkv)))
    cu = [torch.tensor([0, *torch.tensor(side).cumsum(0).tolist()], dtype=torch.int32)
          for side in ([n for n, _ in lengths], [n for _, n in lengths])]
    kwargs = dict(cu_seqlens_q=cu[0], cu_seqlens_k=cu[1], max_seqlen_q=max(n for n, _ in lengths),
                  max_seqlen_k=max(n for _, n in lengths))
    return q, k, v, kwargs


def reference(q, k, v, *, causal=False, window=(-1, -1), attn_mask=None, softmax_scale=None):
    """The protocol's answer for a dense call, written from docs/protocol.md: out and lse."""
    left, right = (None if side == -1 else side for side in window)
    if causal:
        right = 0
    keep = band(q.shape[1], k.shape[1], left, right)
    if attn_mask is not None:
        keep = keep & attn_mask
    scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(q.shape[-1])
    return attention(q, k, v, scale=scale, keep=keep)


def packed_reference(q, k, v, *, cu_seqlens_q, cu_seqlens_k, causal=False, window=(-1, -1), softmax_scale=None,
                     **_):
    """The protocol's answer for a packed call: out ``(Tq, H, D)``, lse ``(H, Tq)``."""
    left, right = (None if side == -1 else side for side in window)
    if causal:
        right = 0
    scale = softmax_scale if softmax_scale is not None else 1 / math.sqrt(q.shape[-1])
    return packed_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, scale=scale, left=left, right=right)
