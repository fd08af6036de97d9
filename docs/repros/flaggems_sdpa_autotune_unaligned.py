"""FlagGems scaled_dot_product_attention: does a configuration tuned on an unaligned call get
reused on aligned calls it does not fit?

_attn_fwd's autotuner (src/flag_gems/ops/attention.py, ``key=["KV_CTX", "HEAD_DIM"]``) keys its
choice on the key length, the head dim and the dtypes alone (``LibTuner.get_key``), and keeps it
in FlagGems' tuning database across processes, while the inputs' strides (whether they are
multiples of 16 bytes) select a different compiled variant. flashcheck found, at 7090 queries and
keys, head dim 256, bfloat16, on an H100, that _attn_fwd's configuration 5 of 45 (BLOCK_M 128,
BLOCK_N 128, 3 stages, 8 warps) runs on unaligned views and is refused (shared memory) on aligned
inputs. Where FlagGems' own timing of an unaligned call picks such a configuration, a later
aligned call of the same length raises OutOfResources: the mechanism of
flaggems_flash_autotune_unaligned.py, in the SDPA forward.

Each scenario runs in a fresh process with a tuning database of its own (FLAGGEMS_CACHE_DIR in a
new temporary folder): the aligned call twice, then an unaligned call followed by the aligned
one. Each call's output is compared with float64 attention, and the configuration it ran printed.
Standalone: needs torch, flag_gems and a GPU.

    python flaggems_sdpa_autotune_unaligned.py
"""
import os
import subprocess
import sys
import tempfile

import torch


def attention64(q, k, v, causal):
    q, k, v = (t.double() for t in (q, k, v))
    logits = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        n_q, n_k = logits.shape[-2:]
        logits = logits.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).triu(n_k - n_q + 1),
                                    float("-inf"))
    return torch.softmax(logits, -1) @ v


def unaligned_view(x):
    """x's values in a view whose rows are head_dim + 1 elements apart (not 16-byte multiples)."""
    buf = torch.zeros(*x.shape[:-1], x.shape[-1] + 1, dtype=x.dtype, device=x.device)
    buf[..., :x.shape[-1]] = x
    return buf[..., :x.shape[-1]]


def call(sdpa, n, d, dtype, aligned, causal=True):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, d, device="cuda", generator=g).to(dtype) for _ in range(3))
    if not aligned:
        q, k, v = (unaligned_view(t) for t in (q, k, v))
    label = f"  {'aligned' if aligned else 'unaligned'} call:"
    try:
        out = sdpa(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
    except Exception as e:  # the error is the finding
        print(f"{label} raised {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)
        return
    error = (out.double() - attention64(q, k, v, causal)).abs().max().item()
    print(f"{label} ran, error against float64 {error:.3g}", flush=True)


def scenario(n, d, dtype_name, order):
    from flag_gems.ops import attention
    from flag_gems.ops import scaled_dot_product_attention as sdpa

    dtype = getattr(torch, dtype_name)
    print(f"{n} queries and keys, head dim {d}, {dtype_name}, causal, fresh process and tuning database: "
          f"{' then '.join(order)}", flush=True)
    tuner = attention._attn_fwd.fn  # under FlagGems' LibEntry; best_config: the last call's choice
    for kind in order:
        call(sdpa, n, d, dtype, kind == "aligned")
        print(f"    its configuration: {getattr(tuner, 'best_config', '?')}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        scenario(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:])
        sys.exit()
    import flag_gems
    print(f"flag_gems {getattr(flag_gems, '__version__', '?')}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    # Each scenario tunes afresh: minutes, FlagGems compiling its 45 configurations one after another.
    for n, d, dtype in ((7090, 256, "bfloat16"), (1024, 256, "float16")):
        for order in (["aligned", "aligned"], ["unaligned", "aligned"]):
            with tempfile.TemporaryDirectory() as fresh:
                subprocess.run([sys.executable, __file__, str(n), str(d), dtype, *order], check=False,
                               env=dict(os.environ, FLAGGEMS_CACHE_DIR=fresh))
