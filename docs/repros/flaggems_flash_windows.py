"""FlagGems' flash_attention_forward gets sliding windows wrong.

Standalone (torch and flag_gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_flash_windows.py

Each line is one call of flag_gems.ops.flash_attention_forward (the replacement of aten's
``_flash_attention_forward``: layout (B, N, H, D), FlashAttention-2's conventions: a query i sees
the keys j with i + Nk - Nq - left <= j <= i + Nk - Nq + right, -1 an unbounded side, causal
the right side 0), head dim 64, softmax scale 0.125, random normal inputs, with the largest
error of its output and its lse against float64 attention written out by hand below.

What it shows ([5.0.2, torch 2.11, one H200]; the output is flaggems_flash_windows.h200.txt):

1. A window with one unbounded side is wrong at every length: (4, -1) and (-1, 4), and a side
   at least Nk long, which mha_fwd turns into -1 ((12, 31) with 31 keys; (30, 30) with 20).
   The source (src/flag_gems/ops/flash_api.py, mha_fwd) marks a call local only where both
   sides are bounded (``is_local = window_size_left >= 0 and window_size_right >= 0``), so a
   window with one unbounded side runs with no band at all, where FlashAttention-2 makes both
   sides of a local window finite first. It is wrong wherever the side it ignores hides a key:
   (30, -1) with 31 queries and keys hides none and was right on an H100 (2026-12-06).
2. A window bounded on both sides is right up to 50 queries and wrong with 200 (where the
   queries leave a 128-query block part filled: flaggems_flash_window_blocks.py): (4, 4),
   (4, 0), (0, 0), causal with left 4, (30, 30). Every configuration FlagGems keeps for this
   kernel has 128-query blocks.
3. Plain causal, and no window, are right at every size tried here. These one-head calls are
   small enough for FlagGems' split-KV kernel; its other kernel, flash_fwd_kernel, gets plain
   causal wrong where the queries do not fill whole 128-query blocks
   (flaggems_flash_causal_blocks.py).

"lse err inf" where Nq > Nk with a causal or bounded band is the rows without keys: FlagGems
writes lse +inf there, float64 -inf (FlashAttention-2's convention; declared separately).
"""
import torch

import flag_gems.ops as ops

def reference(q, k, v, scale, causal, left, right):
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    i = torch.arange(nq, device=q.device)[:, None] + nk - nq
    j = torch.arange(nk, device=q.device)[None, :]
    if causal:
        right = 0
    hide = torch.zeros(nq, nk, dtype=torch.bool, device=q.device)
    if left >= 0: hide |= j < i - left
    if right >= 0: hide |= j > i + right
    s = s.masked_fill(hide, float("-inf"))
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1).nan_to_num(0.0) @ v).transpose(1, 2), lse

def case(label, d, h, hk, nq, nk, causal, left, right, scale, dtype=torch.bfloat16, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(1, nq, h, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(1, nk, hk, d, device="cuda", generator=g).to(dtype)
    v = torch.randn(1, nk, hk, d, device="cuda", generator=g).to(dtype)
    try:
        out, lse, *_ = ops.flash_attention_forward(q, k, v, None, None, nq, nk, 0.0, causal, False, scale=scale,
                                                   window_size_left=left, window_size_right=right)
        torch.cuda.synchronize()
    except Exception as e:
        print(f"{label}: raised {type(e).__name__}: {str(e)[:120]}", flush=True); return
    ro, rl = reference(q, k, v, scale, causal, left, right)
    print(f"{label:<40}: out err {(out.double() - ro).abs().max().item():.3g}, lse err "
          f"{(lse.double() - rl).abs().max().item():.3g}", flush=True)


for dtype in (torch.bfloat16, torch.float16):
    for (h, hk, nq, nk) in ((1, 1, 31, 31), (4, 1, 31, 31), (1, 1, 20, 50), (1, 1, 50, 20), (1, 1, 200, 200)):
        for causal, left, right in ((False, -1, -1), (True, -1, -1), (False, 4, -1), (False, -1, 4), (False, 4, 4),
                                    (False, 4, 0), (True, 4, -1), (False, 0, 0), (False, 12, 31), (False, 30, 30)):
            case(f"{str(dtype)[6:]} h{h}:{hk} {nq}x{nk} causal={causal} w=({left},{right})", 64, h, hk, nq, nk,
                 causal, left, right, 0.125, dtype)
