"""FlagGems flash_attn_varlen_func at three edges, against float64 per sequence.

- One query a sequence, more query heads than key heads: ``mha_varlan_fwd`` swaps the query
  groups into the sequence axis (``seqlenq_ngroups_swapped``); with two sequences or more, lse
  comes back wrong while the output is right.
- The same swap with a sequence that has no query: the reshape it makes fails.
- A right window side at least the longest key length is dropped (made -1), though with more
  queries than keys it still hides keys (the window's other bugs:
  docs/repros/flaggems_varlen_windows.py).

Packed keys (cu_seqlens_k), N(0, 1) inputs, head dim 64, float16. Standalone: needs torch,
flag_gems and a GPU.

    python flaggems_varlen_edges.py
"""
import torch
import flag_gems.ops as ops

def ref_seq(q, k, v, scale, left, right):
    g = q.shape[1] // k.shape[1]
    q = q.double().transpose(0, 1)
    k, v = (t.double().repeat_interleave(g, 1).transpose(0, 1) for t in (k, v))
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    i = torch.arange(nq, device=q.device)[:, None] + nk - nq
    j = torch.arange(nk, device=q.device)[None, :]
    hide = torch.zeros(nq, nk, dtype=torch.bool, device=q.device)
    if left >= 0: hide |= j < i - left
    if right >= 0: hide |= j > i + right
    s = s.masked_fill(hide, float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ v).transpose(0, 1), torch.logsumexp(s, -1)

def run(lens, h, hk, d, left, right, dtype=torch.float16):
    g = torch.Generator(device="cuda").manual_seed(2)
    tq = sum(a for a, _ in lens); tk = sum(b for _, b in lens)
    q = torch.randn(tq, h, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    v = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    cq, ck = (torch.tensor([0] + [sum(pair[side] for pair in lens[:i + 1]) for i in range(len(lens))],
                           dtype=torch.int32, device="cuda") for side in (0, 1))
    scale = d ** -0.5
    try:
        out, lse = ops.flash_attn_varlen_func(q, k, v, max_seqlen_q=max(a for a, _ in lens), cu_seqlens_q=cq,
                                              max_seqlen_k=max(b for _, b in lens), cu_seqlens_k=ck, dropout_p=0.0,
                                              softmax_scale=scale, causal=False, window_size=(left, right),
                                              return_softmax_lse=True)
        torch.cuda.synchronize()
    except Exception as e:
        return f"raised {type(e).__name__}: {str(e)[:100]}"
    oe = le = 0.0
    for s_, (a, b) in enumerate(lens):
        if a == 0:
            continue
        ro, rl = ref_seq(q[cq[s_]:cq[s_ + 1]], k[ck[s_]:ck[s_ + 1]], v[ck[s_]:ck[s_ + 1]], scale, left, right)
        oe = max(oe, (out[cq[s_]:cq[s_ + 1]].double() - ro).abs().max().item())
        le = max(le, (lse[:, cq[s_]:cq[s_ + 1]].double() - rl).abs().max().item())
    return f"out err {oe:.3g}, lse err {le:.3g}"

for lens in ([(1, 5)], [(1, 5), (1, 9)], [(1, 5), (1, 9), (1, 3)]):
    for h, hk in ((8, 2), (2, 2), (7, 1)):
        print(f"one query a sequence {lens} heads {h}:{hk}: {run(lens, h, hk, 64, -1, -1)}", flush=True)
for lens in ([(1, 5), (0, 0)], [(1, 5), (0, 3)], [(0, 4), (1, 5)]):
    for h, hk in ((8, 2), (2, 2)):
        print(f"a sequence without queries {lens} heads {h}:{hk}: {run(lens, h, hk, 64, -1, -1)}", flush=True)
for lens, win in (([(63, 17)], (55, 46)), ([(63, 17)], (-1, 20)), ([(40, 10), (5, 5)], (-1, 12)),
                  ([(30, 30)], (-1, 40))):
    print(f"right side >= longest keys {lens} window {win}: {run(lens, 2, 1, 64, *win)}", flush=True)
