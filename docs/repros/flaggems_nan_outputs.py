"""FlagGems' attention returns NaN where float64 attention is finite.

Standalone (torch and flag_gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_nan_outputs.py

Three situations, each printed with the largest error against a float64 softmax(scale q k^T) v
written out by hand and the number of NaN in the output:

1. flash_attention_forward with causal=True and more queries than keys (bottom-right aligned,
   as FlashAttention-2 defines it): the first Nq - Nk query rows have no key; FlashAttention-2
   documents an output of 0 for such rows. FlagGems returns NaN there.
2. scaled_dot_product_attention (bfloat16, GQA through enable_gqa) on logits of a few hundred,
   which a kernel must keep from overflowing exp by subtracting the row maximum.
3. a negative softmax scale, through flash_attention_forward and flash_attn_varlen_func.
"""

import math

import torch

import flag_gems.ops as ops


def reference(q, k, v, scale, causal=False):
    """(B, N, H, D) float64 attention; causal bottom-right; a row without keys gives 0."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = scale * q @ k.transpose(-1, -2)
    if causal:
        nq, nk = scores.shape[-2:]
        i = torch.arange(nq, device=q.device)[:, None]
        j = torch.arange(nk, device=q.device)[None, :]
        scores = scores.masked_fill(j > i + nk - nq, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # rows without keys: 0
    return (weights @ v).transpose(1, 2)


def report(label, out, expected):
    error = (out.double() - expected).abs().nan_to_num(float("inf")).max().item()
    print(f"{label}: max error {error:.3g}, NaN in output: {int(out.isnan().sum())} of {out.numel()}")


def randn(*shape, dtype, std=1.0):
    return (torch.randn(*shape, device="cuda", dtype=torch.float64) * std).to(dtype)


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name())

    # 1. causal with Nq > Nk: rows without keys
    q, k, v = randn(1, 129, 4, 128, dtype=torch.float16), randn(1, 128, 2, 128, dtype=torch.float16), \
        randn(1, 128, 2, 128, dtype=torch.float16)
    scale = 1 / math.sqrt(128)
    out, *_ = ops.flash_attention_forward(q, k, v, None, None, 129, 128, 0.0, True, False, scale=scale,
                                          window_size_left=-1, window_size_right=-1)
    report("1. flash_attention_forward causal Nq=129 Nk=128 float16", out, reference(q, k, v, scale, causal=True))
    print("   NaN rows:", sorted(set(out.isnan().any(dim=-1).any(dim=-1).nonzero()[:, 1].tolist())))

    # 2. large logits, bfloat16, GQA
    std = math.sqrt(200 / (scale * math.sqrt(128)))
    q, k = randn(1, 17, 14, 128, dtype=torch.bfloat16, std=std), randn(1, 8, 2, 128, dtype=torch.bfloat16, std=std)
    v = randn(1, 8, 2, 128, dtype=torch.bfloat16)
    out = ops.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=None,
                                           dropout_p=0.0, is_causal=False, scale=scale, enable_gqa=True)
    report("2. scaled_dot_product_attention bfloat16 GQA logits ~200", out.transpose(1, 2), reference(q, k, v, scale))

    # 3. negative scale
    q, k, v = (randn(1, 16, 2, 64, dtype=torch.float16) for _ in range(3))
    for scale in (0.125, -0.125, -1.0):
        out, *_ = ops.flash_attention_forward(q, k, v, None, None, 16, 16, 0.0, False, False, scale=scale,
                                              window_size_left=-1, window_size_right=-1)
        report(f"3. flash_attention_forward float16 scale={scale:+}", out, reference(q, k, v, scale))
    cu = torch.tensor([0, 16], dtype=torch.int32, device="cuda")
    table = torch.arange(16, dtype=torch.int32, device="cuda")[None, :]
    seqused = torch.tensor([16], dtype=torch.int32, device="cuda")
    for scale in (0.125, -0.125):
        out, _ = ops.flash_attn_varlen_func(q[0], k[0].reshape(16, 1, 2, 64), v[0].reshape(16, 1, 2, 64),
                                            max_seqlen_q=16, cu_seqlens_q=cu, max_seqlen_k=16, seqused_k=seqused,
                                            dropout_p=0.0, softmax_scale=scale, causal=False, window_size=(-1, -1),
                                            block_table=table, return_softmax_lse=True)
        report(f"3. flash_attn_varlen_func float16 scale={scale:+}", out[None], reference(q, k, v, scale))
