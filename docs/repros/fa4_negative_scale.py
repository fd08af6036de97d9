"""FlashAttention-4 returns NaN outputs and an infinite lse for a negative softmax_scale.

Standalone (torch and flash-attn-4 only). Run on a Hopper or newer GPU:

    python docs/repros/fa4_negative_scale.py

flash_attn.cute.flash_attn_func takes any float as softmax_scale ("the scaling of QK^T before
applying softmax"); for each scale the script prints the largest error of the output against a
float64 softmax(scale q k^T) v written out by hand, the NaN count, and the lse's range.
"""

import torch

from flash_attn.cute import flash_attn_func


def reference(q, k, v, scale):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = scale * q @ k.transpose(-1, -2)
    return (torch.softmax(scores, dim=-1) @ v).transpose(1, 2), torch.logsumexp(scores, dim=-1)


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for dtype in (torch.float16, torch.bfloat16):
        q = torch.randn(1, 16, 10, 64, device="cuda", dtype=dtype)
        k, v = (torch.randn(1, 16, 1, 64, device="cuda", dtype=dtype) for _ in range(2))
        for scale in (0.125, -0.125, -1.0):
            out, lse = flash_attn_func(q, k, v, softmax_scale=scale, return_lse=True)
            expected, expected_lse = reference(q, k, v, scale)
            error = (out.double() - expected).abs().nan_to_num(float("inf")).max().item()
            print(f"{dtype} scale={scale:+}: max error {error:.3g}, NaN in out: {int(out.isnan().sum())} of "
                  f"{out.numel()}, lse in [{lse.min().item():.4g}, {lse.max().item():.4g}] "
                  f"(float64: [{expected_lse.min().item():.4g}, {expected_lse.max().item():.4g}])")
