"""FlagGems' scaled_dot_product_attention backward in float32 at head dim 256: OutOfResources
(shared memory) under every configuration it ships, where the forward runs.

Standalone (torch and flag_gems only). Run on an H100 or H200:

    python docs/repros/flaggems_sdpa_backward_head_dim_256.py

Each case runs flag_gems.ops.scaled_dot_product_attention (causal, 128 queries and keys, 2 heads,
(B, H, N, D) contiguous) forward and backward in a process of its own, under FlagGems' own
autotuning, and prints what the forward and the backward did: "ran", or the error raised. Each
case takes minutes from a cold tuning cache: FlagGems compiles and times its autotuners'
configurations one after another before the first call returns.

What the source says (flag_gems 5.0.2): every configuration of ``_attn_bwd``
(runtime/backend/_nvidia/tune_configs.yaml, ``attention_bwd``) has BLOCK_N1 = 128, and the kernel
holds a 128-key tile of K and of V while it walks the queries: 128 x 256 x 4 bytes each in
float32 at head dim 256, 256 KiB together, past the 227 KiB of shared memory a Hopper block may
use. In bfloat16, or at head dim 128, the two tiles take half that.
"""

import subprocess
import sys

import torch

CASES = [("float32", 256), ("float32", 128), ("bfloat16", 256)]


def run(dtype_name: str, head_dim: int) -> None:
    from flag_gems.ops import scaled_dot_product_attention

    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, head_dim, device="cuda", dtype=dtype, generator=g).requires_grad_()
               for _ in range(3))
    try:
        out = scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        print(f"{dtype_name} head dim {head_dim}: forward ran", flush=True)
    except Exception as error:  # noqa: BLE001 - what it raises is the finding
        print(f"{dtype_name} head dim {head_dim}: forward raised {type(error).__name__}: {str(error)[:160]}")
        return
    try:
        out.backward(torch.randn_like(out))
        torch.cuda.synchronize()
        print(f"{dtype_name} head dim {head_dim}: backward ran")
    except Exception as error:  # noqa: BLE001
        print(f"{dtype_name} head dim {head_dim}: backward raised {type(error).__name__}: {str(error)[:160]}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run(sys.argv[1], int(sys.argv[2]))
    else:
        print(torch.cuda.get_device_name(), torch.__version__, flush=True)
        for dtype_name, head_dim in CASES:  # each alone: a tuning's cache stays in its process
            subprocess.run([sys.executable, __file__, dtype_name, str(head_dim)], check=False)
