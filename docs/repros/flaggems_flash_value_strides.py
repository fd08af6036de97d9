"""FlagGems flash_attention_forward reads the values with the keys' strides.

flash_fwd_kernel (src/flag_gems/ops/flash_kernel.py) offsets the value pointer by the keys'
batch and head strides and steps through the values' rows by the keys' row stride, so values
stored otherwise than the keys are read from the wrong places. Each call below holds the same
numbers; only the storage of k and v differs. Outputs are compared with float64 attention.
Standalone: needs torch, flag_gems and a GPU.

    python flaggems_flash_value_strides.py
"""
import torch
import flag_gems.ops as ops


def attention64(q, k, v, causal):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], 1) for t in (k, v))
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:  # bottom-right, as FlashAttention's
        nq, nk = s.shape[-2:]
        s = s.masked_fill(torch.ones(nq, nk, dtype=torch.bool, device=s.device).triu(nk - nq + 1), float("-inf"))
    return (torch.softmax(s, -1) @ v).transpose(1, 2)


def stored(x, storage):
    """x (B, N, H, D) in a storage: 'rows' (B, N, H, D) contiguous, 'heads' (B, H, N, D) transposed."""
    return x.contiguous() if storage == "rows" else x.transpose(1, 2).contiguous().transpose(1, 2)


def run(n, heads, kv_heads, d, dtype, q_store, k_store, v_store, causal=False):
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(1, n, heads, d, device="cuda", generator=g).to(dtype)
    k, v = (torch.randn(1, n, kv_heads, d, device="cuda", generator=g).to(dtype) for _ in range(2))
    q, k, v = stored(q, q_store), stored(k, k_store), stored(v, v_store)
    out, *_ = ops.flash_attention_forward(q, k, v, None, None, n, n, 0.0, causal, False)
    err = (out.double() - attention64(q, k, v, causal)).abs().max().item()
    print(f"{n} queries and keys, heads {heads}:{kv_heads}, d{d}, {str(dtype)[6:]}, causal={causal}, "
          f"storage q {q_store}, k {k_store}, v {v_store}: error {err:.3g}", flush=True)


if __name__ == "__main__":
    import flag_gems
    print(f"flag_gems {getattr(flag_gems, '__version__', '?')}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}")
    for dtype in (torch.float16, torch.bfloat16):
        for n, heads, kv in ((2, 1, 1), (2, 4, 2), (64, 4, 4), (200, 2, 1)):
            for stores in (("heads", "heads", "heads"), ("heads", "heads", "rows"), ("rows", "rows", "heads")):
                run(n, heads, kv, 64, dtype, *stores)
    run(200, 2, 1, 64, torch.float16, "heads", "heads", "rows", causal=True)
