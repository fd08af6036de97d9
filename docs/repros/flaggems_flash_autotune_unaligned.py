"""FlagGems flash_attention_forward: a configuration tuned on one call is reused on calls it
does not fit.

flash_fwd_kernel's autotuner is keyed on the head dim, dropout and the dtypes alone
(``key=["d", "is_dropout"]``, src/flag_gems/ops/flash_kernel.py), while the inputs' strides
(whether they are multiples of 16 bytes) select a different compiled variant. Tuned on a call
whose views are not 16-byte aligned, it keeps a 128 x 128 configuration that fits there, and
every later aligned call of that head dim asks for more shared memory than the GPU has.

Each scenario runs in a fresh process (the tuning lives in the process): the aligned call
alone, then an unaligned call followed by the same aligned call. Each call's output is compared
with float64 attention. Standalone: needs torch, flag_gems and a GPU.

    python flaggems_flash_autotune_unaligned.py
"""
import subprocess
import sys

import torch


def attention64(q, k, v):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    k, v = (t.repeat_interleave(q.shape[1] // t.shape[1], 1) for t in (k, v))
    p = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, -1)
    return (p @ v).transpose(1, 2)


def unaligned_view(x):
    """x's values in a view whose rows are head_dim + 1 elements apart (not 16-byte multiples)."""
    buf = torch.zeros(*x.shape[:-1], x.shape[-1] + 1, dtype=x.dtype, device=x.device)
    buf[..., :x.shape[-1]] = x
    return buf[..., :x.shape[-1]]


def call(ops, d, dtype, aligned, n=2, heads=2):
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, n, h, d, device="cuda", generator=g).to(dtype) for h in (heads, 1, 1))
    if not aligned:
        q, k, v = (unaligned_view(t) for t in (q, k, v))
    label = f"  {'aligned' if aligned else 'unaligned'} call, {n} queries and keys, heads {heads}:1:"
    try:
        out, *_ = ops.flash_attention_forward(q, k, v, None, None, n, n, 0.0, False, False)
        torch.cuda.synchronize()
    except Exception as e:  # the error is the finding
        print(f"{label} raised {type(e).__name__}: {str(e).splitlines()[0][:110]}", flush=True)
        return
    print(f"{label} ran, error against float64 {(out.double() - attention64(q, k, v)).abs().max().item():.3g}",
          flush=True)


def scenario(d, dtype_name, order):
    import flag_gems.ops as ops
    from flag_gems.ops import flash_kernel
    dtype = getattr(torch, dtype_name)
    print(f"head dim {d}, {dtype_name}, fresh process: {' then '.join(order)}", flush=True)
    for kind in order:
        call(ops, d, dtype, kind == "aligned")
    tuner = getattr(flash_kernel.flash_fwd_kernel, "fn", None)
    for key, config in getattr(tuner, "cache", {}).items():
        print(f"  tuned for {key[:2]}: {config}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        scenario(int(sys.argv[1]), sys.argv[2], sys.argv[3:])
        sys.exit()
    import flag_gems
    print(f"flag_gems {getattr(flag_gems, '__version__', '?')}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    for d, dtype in ((192, "bfloat16"), (256, "bfloat16"), (256, "float16"), (128, "float16"), (96, "bfloat16"),
                     (64, "float16")):
        for order in (["aligned", "aligned"], ["unaligned", "aligned"]):
            subprocess.run([sys.executable, __file__, str(d), dtype, *order], check=False)
