"""FlagGems' flash_attention_forward cuts causal rows short of their keys where the queries do
not fill whole 128-query blocks.

Standalone (torch and flag_gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_flash_causal_blocks.py

flash_fwd_kernel (src/flag_gems/ops/flash_kernel.py) bounds the keys of query block m at
``seqlen_k + (m - num_m_blocks + 1) * BLOCK_M``: the last key the block's last row sees only
where the queries fill whole blocks. Otherwise every block but the last stops
``128 - Nq % 128`` keys early, rounded up to its key block; under the 128 x 32 configurations
(the only ones that fit at head dim 256, and the autotuner's choice at 64 to 192 here) the rows
of those blocks lose keys. FlagGems sends a call of less than a wave of tasks to its split-KV
kernel instead (B x H x ceil(Nq / 64) under 80% of the SMs), which is right: the rest of the
cases pass ``disable_splitkv=True`` so that each runs flash_fwd_kernel whatever its size.

The autotuner is keyed on the head dim and dropout alone, and which configuration wins is
timing: so each configuration runs in a process of its own, forced (the autotuner given that
one), over the same cases, then the cases run once more the autotuner choosing.

Each line: the kernel that ran (flash_fwd_kernel's configuration, or the split-KV kernel), the
case (batch, queries x keys, query:key heads, head dim, dtype, causal, storage), the largest
error of the output against float64 attention written out by hand below, where it is, and the
share of elements off by more than 0.05 (a float16 output of these inputs is within about 0.002
where right). Output on an H200: flaggems_flash_causal_blocks.h200.txt.
"""
import subprocess
import sys

import torch

#: batch, queries, keys, heads, key heads, head dim, dtype, causal, heads-first storage, split-KV
#: allowed. The first is the campaign's call as a user makes it (which FlagGems dispatches to
#: flash_fwd_kernel: its split-KV kernel only takes calls of less than a wave of 64-query tasks,
#: B x H x ceil(Nq / 64) under 80% of the SMs); the rest pass disable_splitkv=True, so that each
#: runs flash_fwd_kernel whatever its size.
CASES = [
    (2, 307, 307, 8, 4, 256, torch.float16, True, True, True),
    (1, 307, 307, 8, 4, 256, torch.float16, True, True, True),  # split-KV: right
    (1, 307, 307, 8, 4, 256, torch.float16, True, True, False),
    (1, 307, 307, 1, 1, 256, torch.float16, True, True, False),
    (1, 307, 307, 1, 1, 256, torch.float16, True, False, False),
    (1, 307, 307, 1, 1, 256, torch.bfloat16, True, False, False),
    (1, 307, 307, 1, 1, 256, torch.float16, False, False, False),
    (1, 256, 256, 1, 1, 256, torch.float16, True, False, False),
    (1, 300, 300, 1, 1, 256, torch.float16, True, False, False),
    (1, 129, 129, 1, 1, 256, torch.float16, True, False, False),
    (1, 128, 128, 1, 1, 256, torch.float16, True, False, False),
    (1, 100, 307, 1, 1, 256, torch.float16, True, False, False),
    (1, 1024, 1024, 1, 1, 256, torch.float16, True, False, False),
    (1, 307, 307, 1, 1, 192, torch.float16, True, False, False),
    (1, 307, 307, 1, 1, 128, torch.float16, True, False, False),
    (1, 307, 307, 1, 1, 64, torch.float16, True, False, False),
]


def reference(q, k, v, scale, causal):
    """float64 attention on (B, N, H, D) inputs, keys shared by groups of query heads, the causal
    band aligned to the bottom right (FlashAttention-2's convention)."""
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    if causal:
        i = torch.arange(nq, device=q.device)[:, None] + nk - nq
        s = s.masked_fill(torch.arange(nk, device=q.device)[None, :] > i, float("-inf"))
    return (torch.softmax(s, -1) @ v).transpose(1, 2)


def inputs(batch, nq, nk, h, hk, d, dtype, heads_first, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)

    def make(n, heads):
        if heads_first:  # stored (B, H, N, D), passed as its (B, N, H, D) view
            return torch.randn(batch, heads, n, d, device="cuda", generator=g).to(dtype).transpose(1, 2)
        return torch.randn(batch, n, heads, d, device="cuda", generator=g).to(dtype)
    return make(nq, h), make(nk, hk), make(nk, hk)


def tuner():
    """The Triton autotuner inside FlagGems' LibEntry wrapper of flash_fwd_kernel."""
    import flag_gems.ops.flash_kernel as kernels
    fn = kernels.flash_fwd_kernel
    while not hasattr(fn, "configs"):
        fn = fn.fn
    return fn


def run(cases, forced):
    import flag_gems.ops as ops
    autotuner = tuner()
    if forced is not None:
        autotuner.configs = [autotuner.configs[forced]]
    for batch, nq, nk, h, hk, d, dtype, causal, heads_first, split in cases:
        q, k, v = inputs(batch, nq, nk, h, hk, d, dtype, heads_first)
        scale = d ** -0.5
        label = (f"{batch} {nq}x{nk} {h}:{hk} d{d} {str(dtype)[6:]} causal={causal} "
                 f"{'heads-first' if heads_first else 'contiguous'}{'' if split else ' disable_splitkv'}")
        autotuner.best_config = None
        try:
            out, *_ = ops.flash_attention_forward(q, k, v, None, None, nq, nk, 0.0, causal, False, scale=scale,
                                                  disable_splitkv=not split)
            torch.cuda.synchronize()
        except Exception as e:
            print(f"{label}: raised {type(e).__name__}: {str(e).splitlines()[0][:100]}", flush=True)
            continue
        err = (out.double() - reference(q, k, v, scale, causal)).abs()
        worst = err.argmax().item()
        where = [int(i) for i in torch.unravel_index(torch.tensor(worst), err.shape)]
        config = autotuner.best_config  # None where flash_fwd_kernel did not run: the split-KV path
        ran = ("split-KV kernel" if config is None else f"BLOCK_M={config.kwargs.get('BLOCK_M')} "
               f"BLOCK_N={config.kwargs.get('BLOCK_N')} warps={config.num_warps} stages={config.num_stages}")
        print(f"{ran} | {label}: err {err.max().item():.3g} at "
              f"(b, i, h, d) = {tuple(where)}, {100 * (err > 0.05).double().mean().item():.1f}% > 0.05", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run(CASES, None if sys.argv[1] == "auto" else int(sys.argv[1]))
        sys.exit(0)
    count = len(tuner().configs)
    # The processes compile side by side; their outputs are printed in order.
    runs = {index: subprocess.Popen([sys.executable, __file__, str(index)], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True) for index in [*range(count), "auto"]}
    print(f"{count} configurations; each forced in a process of its own:", flush=True)
    for index, process in runs.items():
        if index == "auto":
            print("the autotuner choosing, in a fresh process:", flush=True)
        print(process.communicate()[0], end="", flush=True)
