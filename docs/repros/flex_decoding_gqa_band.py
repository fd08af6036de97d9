"""Compiled FlexAttention fails to compile its decoding kernel for short GQA queries under a band
block mask ("NoValidChoicesError"); its standard Triton kernel compiles and is right.

Standalone (torch only), on a CUDA GPU:

    python flex_decoding_gqa_band.py

flex_attention picks a decoding kernel for short query lengths. Each call below runs q of Nq
queries and 8 query heads on 1 KV head (GQA 8:1) under a block mask of the band (0, 16) (a query
sees itself and the 16 keys after it), first with flex's default kernel choice, then with
kernel_options={"BACKEND": "TRITON"}, and compares each output that compiles with float64
attention under the same band.
"""
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

# Each (length, dtype, kernel option) is a compilation of its own; dynamo's default limit of 8
# would send the later calls to the uncompiled fallback, which is not the kernel shown here.
torch._dynamo.config.recompile_limit = 64
compiled = torch.compile(flex_attention)


def band(b, h, q_idx, kv_idx):
    return (kv_idx >= q_idx) & (kv_idx <= q_idx + 16)


def exact(q, k, v):
    q, k, v = (t.double() for t in (q, k, v))
    k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], 1) for t in (k, v))
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    i = torch.arange(q.shape[2], device=q.device)[:, None]
    j = torch.arange(k.shape[2], device=q.device)[None, :]
    s = s.masked_fill(~((j >= i) & (j <= i + 16)), float("-inf"))
    return torch.softmax(s, -1) @ v


def run(n, dtype, heads=8, kv_heads=1, head_dim=64, options=None):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, heads, n, head_dim, device="cuda", generator=g).to(dtype)
    k, v = (torch.randn(1, kv_heads, n, head_dim, device="cuda", generator=g).to(dtype) for _ in range(2))
    mask = create_block_mask(band, None, None, n, n, device="cuda")
    label = f"Nq=Nk={n:3} {str(dtype):14} heads {heads}:{kv_heads} kernel {'TRITON' if options else 'default'}:"
    try:
        out = compiled(q, k, v, block_mask=mask, enable_gqa=heads != kv_heads, kernel_options=options)
        torch.cuda.synchronize()
    except Exception as error:  # the compile error is the finding
        print(f"{label} raised {type(error).__name__}: {' '.join(str(error).split())[:400]}", flush=True)
        return False
    print(f"{label} ran, largest error against float64 {(out.double() - exact(q, k, v)).abs().max().item():.3g}",
          flush=True)
    return True


if __name__ == "__main__":
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    failed = 0
    for n in (20, 64, 128):
        for dtype in (torch.bfloat16, torch.float32):
            failed += not run(n, dtype)
            run(n, dtype, options={"BACKEND": "TRITON"})
    run(20, torch.bfloat16, heads=8, kv_heads=8)
    raise SystemExit(1 if failed else 0)
