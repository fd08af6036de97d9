"""FlagGems' flash_attention_forward with a window bounded on both sides: wrong past the first
128 queries only where the queries do not fill whole 128-query blocks?

Standalone (torch and flag_gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_flash_window_blocks.py

flaggems_flash_windows.py found bounded windows right at 20-50 queries and wrong at 200. A local
window always runs flash_fwd_kernel (mha_fwd takes its split-KV kernel only without a window),
whose bound of query block m's keys, ``seqlen_k + (m - num_m_blocks + 1) * BLOCK_M + right``,
falls short by ``num_m_blocks * 128 - Nq`` keys (flaggems_flash_causal_blocks.py): so the same
windows should be right wherever Nq is a multiple of 128. The kernel runs one configuration
here, 128 x 32 with 4 warps (the autotuner's usual pick, and the only kind that fits at head dim
256), so that nothing depends on timing.

Each line: the case (queries x keys, head dim, window (left, right), causal), the largest error
of the output against float64 attention written out by hand below, and the share of elements off
by more than 0.05 (bfloat16 outputs of these inputs are within about 0.01 where right).

What it shows ([5.0.2, torch 2.11, one H200]; the output is flaggems_flash_window_blocks.h200.txt):
every window right at 256, 384 and 512 queries and at 256 queries with 384 keys; every window
wrong at 129, 200 and 300 queries and at 200 with 384 keys (errors 0.6-4.2, 8-77% of the output),
at head dims 64 and 128 alike.
"""
import torch

import flag_gems.ops as ops
import flag_gems.ops.flash_kernel as kernels


def reference(q, k, v, scale, causal, left, right):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    i = torch.arange(nq, device=q.device)[:, None] + nk - nq
    j = torch.arange(nk, device=q.device)[None, :]
    if causal:
        right = 0
    hide = torch.zeros(nq, nk, dtype=torch.bool, device=q.device)
    if left >= 0:
        hide |= j < i - left
    if right >= 0:
        hide |= j > i + right
    return (torch.softmax(s.masked_fill(hide, float("-inf")), -1).nan_to_num(0.0) @ v).transpose(1, 2)


tuner = kernels.flash_fwd_kernel
while not hasattr(tuner, "configs"):
    tuner = tuner.fn
tuner.configs = [next(c for c in tuner.configs if c.kwargs["BLOCK_N"] == 32)]
print(f"flash_fwd_kernel forced to {tuner.configs[0]}", flush=True)

for d in (64, 128):
    for nq, nk in ((129, 129), (200, 200), (256, 256), (300, 300), (384, 384), (512, 512), (200, 384), (256, 384)):
        for left, right, causal in ((4, 4, False), (4, 0, False), (0, 0, False), (30, 30, False), (4, -1, True)):
            g = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(1, n, 1, d, device="cuda", generator=g).to(torch.bfloat16) for n in (nq, nk, nk))
            scale = d ** -0.5
            out, *_ = ops.flash_attention_forward(q, k, v, None, None, nq, nk, 0.0, causal, False, scale=scale,
                                                  window_size_left=left, window_size_right=right)
            err = (out.double() - reference(q, k, v, scale, causal, left, right)).abs()
            print(f"{nq}x{nk} d{d} w=({left},{right}) causal={causal}: err {err.max().item():.3g}, "
                  f"{100 * (err > 0.05).double().mean().item():.1f}% > 0.05", flush=True)
