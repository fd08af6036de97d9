"""Probe: FlagGems varlen, two-sided windows, a short sequence after long ones."""
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
    return (torch.softmax(s, -1).nan_to_num(0.0) @ v).transpose(0, 1)

def run(lens, h, hk, d, left, right, paged, dtype=torch.float16):
    g = torch.Generator(device="cuda").manual_seed(1)
    tq = sum(a for a, _ in lens); tk = sum(b for _, b in lens)
    q = torch.randn(tq, h, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    v = torch.randn(tk, hk, d, device="cuda", generator=g).to(dtype)
    cq = torch.tensor([0] + [sum(a for a, _ in lens[:i + 1]) for i in range(len(lens))], dtype=torch.int32, device="cuda")
    ck = torch.tensor([0] + [sum(b for _, b in lens[:i + 1]) for i in range(len(lens))], dtype=torch.int32, device="cuda")
    mq, mk = max(a for a, _ in lens), max(b for _, b in lens)
    scale = d ** -0.5
    kw = dict(max_seqlen_q=mq, cu_seqlens_q=cq, max_seqlen_k=mk, dropout_p=0.0, softmax_scale=scale, causal=False,
              window_size=(left, right), return_softmax_lse=True)
    try:
        if paged:
            table = (ck[:-1, None].long() + torch.arange(mk, device="cuda")[None, :]).clamp(max=tk - 1).to(torch.int32)
            out, lse = ops.flash_attn_varlen_func(q, k.reshape(tk, 1, hk, d), v.reshape(tk, 1, hk, d),
                                                  seqused_k=(ck[1:] - ck[:-1]).to(torch.int32), block_table=table, **kw)
        else:
            out, lse = ops.flash_attn_varlen_func(q, k, v, cu_seqlens_k=ck, **kw)
        torch.cuda.synchronize()
    except Exception as e:
        return f"raised {type(e).__name__}: {str(e)[:100]}"
    bad = []
    for s, (a, b) in enumerate(lens):
        if a == 0: continue
        ro = ref_seq(q[cq[s]:cq[s + 1]], k[ck[s]:ck[s + 1]], v[ck[s]:ck[s + 1]], scale, left, right)
        err = (out[cq[s]:cq[s + 1]].double() - ro).abs()
        if err.max().item() > 0.05:
            rows = sorted(set(err.amax(dim=(1, 2)).gt(0.05).nonzero().flatten().tolist()))
            bad.append(f"seq{s}({a}:{b}) err {err.max().item():.3g} rows {rows[:8]}")
    return "ok" if not bad else "WRONG " + "; ".join(bad)

