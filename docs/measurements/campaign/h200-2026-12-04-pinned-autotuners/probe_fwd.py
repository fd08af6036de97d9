"""FlagGems SDPA forward, each configuration, its output pre-filled with a sentinel: elements
never written stay 12345; NaN elements were computed."""
import math, torch
from flashcheck.cases.case import Case
import flag_gems.ops.attention as att

SPEC = ("batch=1 seqlen_q=1 seqlen_k=2 heads=14 kv_heads=2 head_dim=128 dtype=bfloat16 causal=False "
        "window=-1,-1 softmax_scale=None layout={layout} values=normal seed=0")
SENTINEL = 12345.0

tuner = att._attn_fwd.fn
configs = list(tuner.configs)
specs = (SPEC.format(layout="padded"), SPEC.format(layout="contiguous"),
         SPEC.replace("seqlen_k=2", "seqlen_k=100").format(layout="contiguous"),
         SPEC.replace("heads=14 kv_heads=2", "heads=2 kv_heads=2").format(layout="contiguous"))
inputs = [Case.from_spec(spec).materialize("cuda") for spec in specs]
empty_like = torch.empty_like
torch.empty_like = lambda *a, **k: empty_like(*a, **k).fill_(SENTINEL)
for spec, (q, k, v) in zip(specs, inputs):
    print(spec)
    summary = []
    for i, c in enumerate(configs):
        tuner.configs = [c]
        for cache in att._attn_fwd.kernel_cache:
            cache.clear()
        try:
            out = att.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)), enable_gqa=True,
                                                   scale=1 / math.sqrt(128))
            torch.cuda.synchronize()
        except Exception as e:  # noqa
            summary.append(f"{i}:raised")
            continue
        unwritten = int((out == SENTINEL).sum())
        nan = int(torch.isnan(out).sum())
        if unwritten or nan:
            heads = sorted({int(h) for h in (out == SENTINEL).nonzero()[:, 1].tolist()})
            summary.append(f"{i}:unwritten {unwritten} nan {nan} heads {heads[:3]}..{heads[-1:]} "
                           f"[{c.kwargs['BLOCK_M']}x{c.kwargs['BLOCK_N']} w{c.num_warps} s{c.num_stages} "
                           f"pre{int(c.kwargs['PRE_LOAD_V'])}]")
    print("  ", len(summary), "of", len(configs), "configurations:", "; ".join(summary) or "all right")
