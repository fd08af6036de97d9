# Compiled FlexAttention on CUDA with an empty query axis: with a band mask, with none.
import torch, traceback
from flashcheck.peers.flex_call import run_flex
torch.manual_seed(0)
q = torch.randn(1, 0, 2, 64, device="cuda", dtype=torch.float16)
k = torch.randn(1, 5, 2, 64, device="cuda", dtype=torch.float16); v = torch.randn_like(k)
for name, kw in [("causal band", dict(left=-1, right=0, attn_mask=None)), ("no mask", dict(left=-1, right=-1, attn_mask=None))]:
    try:
        out, lse = run_flex(q, k, v, scale=None, **kw)
        print(name, "ran: out", tuple(out.shape), "lse", None if lse is None else tuple(lse.shape))
    except Exception as e:
        print(name, "raised", type(e).__name__, str(e).splitlines()[0][:200])
