"""FlagGems flash_attn_varlen_func gets one-sided sliding windows wrong.

``mha_varlan_fwd`` (src/flag_gems/ops/flash_api.py) calls a window local only where its left
side is bounded (``is_local = window_size_left >= 0``) and, unlike ``mha_fwd``, does not turn
(-1, 0) into causal: a right side alone is ignored, and a local window's unbounded right side
reaches the kernel as the bound -1. Each call below, with ordinary N(0, 1) inputs, is compared
per sequence with float64 attention (windows aligned bottom-right, as FlashAttention's), through
both of its key layouts: packed keys (cu_seqlens_k) and a paged cache of one-token pages.
Standalone: needs torch, flag_gems and a GPU.

    python flaggems_varlen_windows.py
"""
import torch
import flag_gems.ops as ops

def ref_seq(q, k, v, scale, causal, left, right):
    # q (Nq, H, D), k/v (Nk, Hk, D): float64, bottom-right aligned
    g = q.shape[1] // k.shape[1]
    q = q.double().transpose(0, 1)
    k, v = (t.double().repeat_interleave(g, 1).transpose(0, 1) for t in (k, v))
    s = scale * q @ k.transpose(-1, -2)
    nq, nk = s.shape[-2:]
    i = torch.arange(nq, device=q.device)[:, None] + nk - nq
    j = torch.arange(nk, device=q.device)[None, :]
    if causal: right = 0
    hide = torch.zeros(nq, nk, dtype=torch.bool, device=q.device)
    if left >= 0: hide |= j < i - left
    if right >= 0: hide |= j > i + right
    s = s.masked_fill(hide, float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ v).transpose(0, 1), torch.logsumexp(s, -1)

def run(lens, h, hk, d, causal, left, right, paged, dtype=torch.float16):
    g = torch.Generator(device="cuda").manual_seed(1)
    tq = sum(a for a, _ in lens); tk = sum(b for _, b in lens)
    q = torch.randn(tq, h, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    v = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    cq = torch.tensor([0] + list(torch.tensor([a for a, _ in lens]).cumsum(0)), dtype=torch.int32, device="cuda")
    ck = torch.tensor([0] + list(torch.tensor([b for _, b in lens]).cumsum(0)), dtype=torch.int32, device="cuda")
    mq, mk = max(a for a, _ in lens), max(b for _, b in lens)
    scale = d ** -0.5
    kw = dict(max_seqlen_q=mq, cu_seqlens_q=cq, max_seqlen_k=mk, dropout_p=0.0, softmax_scale=scale, causal=causal,
              window_size=(left, right), return_softmax_lse=True)
    try:
        if paged:
            table = (ck[:-1, None].long() + torch.arange(mk, device="cuda")[None, :]).clamp(max=tk - 1).to(torch.int32)
            out, lse = ops.flash_attn_varlen_func(q, k.reshape(tk, 1, hk, d), v.reshape(tk, 1, hk, d),
                                                  seqused_k=(ck[1:] - ck[:-1]).to(torch.int32), block_table=table,
                                                  **kw)
        else:
            out, lse = ops.flash_attn_varlen_func(q, k, v, cu_seqlens_k=ck, **kw)
        torch.cuda.synchronize()
    except Exception as e:
        return f"raised {type(e).__name__}: {str(e)[:100]}"
    oe = le = 0.0
    for s, (a, b) in enumerate(lens):
        ro, rl = ref_seq(q[cq[s]:cq[s + 1]], k[ck[s]:ck[s + 1]], v[ck[s]:ck[s + 1]], scale, causal, left, right)
        oe = max(oe, (out[cq[s]:cq[s + 1]].double() - ro).abs().max().item())
        fin = rl.isfinite()
        le = max(le, (lse[:, cq[s]:cq[s + 1]].double()[fin] - rl[fin]).abs().max().item() if fin.any() else 0.0)
    return f"out err {oe:.3g}, lse err {le:.3g}"

for paged in (False, True):
    for lens in ([(5, 5), (17, 17), (40, 40)], [(30, 50), (200, 200)]):
        for h, hk in ((8, 2), (2, 2)):
            for causal, left, right in ((False, -1, -1), (True, -1, -1), (False, -1, 2), (False, -1, 0), (False, 3, -1),
                                        (False, 2, 2), (True, 4, -1)):
                print(f"paged={paged} lens={lens} heads {h}:{hk} d64 fp16 causal={causal} window=({left},{right}): "
                      f"{run(lens, h, hk, 64, causal, left, right, paged)}", flush=True)
