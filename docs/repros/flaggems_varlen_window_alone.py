"""FlagGems flash_attn_varlen_func drops a window side at the longest key length of the call.

``mha_varlan_fwd`` (src/flag_gems/ops/flash_api.py) drops a side of the window at least
``max_seqlen_k`` long. The same sequence of 3 queries and 3 keys under the window (3, 1) is
therefore run right inside a packed call whose longest sequence has 896 keys (the side is kept)
and wrong when called alone (its left side dropped, the right side alone then ignored): its first
query attends a key the window hides. (2, 1), whose left side is shorter than 3, is right alone.
Each output is compared with float64 attention, windows aligned bottom-right; keys as one-token
pages (``block_table``) and packed (``cu_seqlens_k``). Standalone: needs torch, flag_gems, a GPU.

    python flaggems_varlen_window_alone.py
"""
import torch
import flag_gems.ops as ops


def reference(q, k, v, scale, left, right):
    q, k, v = (t.double().transpose(0, 1) for t in (q, k, v))  # (H, N, D), as many KV heads as heads
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    i = torch.arange(nq, device=q.device)[:, None] + nk - nq
    j = torch.arange(nk, device=q.device)[None, :]
    hide = torch.zeros(nq, nk, dtype=torch.bool, device=q.device)
    if left >= 0:
        hide |= j < i - left
    if right >= 0:
        hide |= j > i + right
    return (torch.softmax(s.masked_fill(hide, float("-inf")), -1) @ v).transpose(0, 1)


def errors(lens, left, right, paged, heads=5, d=64, dtype=torch.float16):
    g = torch.Generator(device="cuda").manual_seed(1)
    tq, tk = sum(a for a, _ in lens), sum(b for _, b in lens)
    q, k, v = (torch.randn(t, heads, d, device="cuda", generator=g).to(dtype) for t in (tq, tk, tk))
    cq = torch.tensor([0] + [sum(a for a, _ in lens[:i + 1]) for i in range(len(lens))], device="cuda").int()
    ck = torch.tensor([0] + [sum(b for _, b in lens[:i + 1]) for i in range(len(lens))], device="cuda").int()
    mk = max(b for _, b in lens)
    kw = dict(max_seqlen_q=max(a for a, _ in lens), cu_seqlens_q=cq, max_seqlen_k=mk, dropout_p=0.0,
              softmax_scale=d ** -0.5, causal=False, window_size=(left, right), return_softmax_lse=True)
    if paged:
        table = (ck[:-1, None].long() + torch.arange(mk, device="cuda")[None, :]).clamp(max=tk - 1).int()
        out, _ = ops.flash_attn_varlen_func(q, k.reshape(tk, 1, heads, d), v.reshape(tk, 1, heads, d),
                                            seqused_k=(ck[1:] - ck[:-1]).int(), block_table=table, **kw)
    else:
        out, _ = ops.flash_attn_varlen_func(q, k, v, cu_seqlens_k=ck, **kw)
    found = []
    for s in range(len(lens)):
        want = reference(q[cq[s]:cq[s + 1]], k[ck[s]:ck[s + 1]], v[ck[s]:ck[s + 1]], d ** -0.5, left, right)
        err = (out[cq[s]:cq[s + 1]].double() - want).abs().amax(dim=(1, 2))
        found.append(f"sequence {s} {lens[s]}: error {err.max().item():.3g}"
                     + (f" (rows {err.gt(0.01).nonzero().flatten().tolist()})" if err.max() > 0.01 else ""))
    return "; ".join(found)


if __name__ == "__main__":
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for paged in (True, False):
        for left, right in ((3, 1), (2, 1)):
            for lens in ([(180, 180), (896, 896), (3, 3)], [(3, 3)]):
                print(f"{'paged' if paged else 'packed'} keys, window ({left}, {right}), sequences {lens}: "
                      f"{errors(lens, left, right, paged)}", flush=True)
