"""On the GPU: which rows of cuDNN's dQ are NaN on the campaign's inputs, and are they the rows whose
|scale * dP| is beyond float16's range? Also: the same inputs with grad_out halved (every row in range),
with grad_out doubled, under the math and efficient backends, and in bfloat16."""
import importlib.util, math, sys
import torch
spec = importlib.util.spec_from_file_location("repro", sys.argv[1])
repro = importlib.util.module_from_spec(spec); spec.loader.exec_module(repro)
data = repro.unpack(repro.PAYLOAD)
q, k, v, kwargs = repro.placed(data, "cuda")
go = repro.place(data["grad_out"], "cuda")
print("kwargs", {a: (b if not torch.is_tensor(b) else tuple(b.shape)) for a, b in kwargs.items()})
print("shapes", tuple(q.shape), tuple(k.shape), q.stride(), k.stride())
B, N, H, D = q.shape
scale = 1 / math.sqrt(D)
def beyond_rows(go):
    value = v.double()[:, -1:].repeat_interleave(H // v.shape[2], dim=2)
    dp = (go.double() * value).sum(-1) * scale
    return dp.abs() >= 65520, dp
def run(backend, q, k, v, go):
    def attn(q, k, v, **kw):
        left, right = kw.get("window", (-1, -1))
        return repro.run_backend(backend, *repro.arguments(q, k, v, causal=False, left=left, right=right,
                                 attn_mask=kw.get("attn_mask")), scale=scale)
    (dq, dk, dv), _ = repro.backward(attn, q, k, v, kwargs, go, None)
    return dq
for label, factor in (("as drawn", 1.0), ("grad_out / 2", 0.5), ("grad_out x 2", 2.0), ("grad_out / 8", 0.125)):
    g = (go.double() * factor).to(go.dtype)
    beyond, dp = beyond_rows(g)
    for backend in ("CUDNN_ATTENTION", "MATH", "EFFICIENT_ATTENTION"):
        try:
            dq = run(backend, q, k, v, g)
        except Exception as e:
            print(f"{label:14s} {backend:20s} raised {type(e).__name__}: {str(e)[:100]}"); continue
        bad = (~torch.isfinite(dq)).any(-1)
        nz = ((dq != 0) & torch.isfinite(dq)).any(-1)
        same = bool((bad == beyond).all())
        print(f"{label:14s} {backend:20s} rows beyond range {int(beyond.sum()):3d}; dQ rows not finite {int(bad.sum()):3d} "
              f"(same rows: {same}); finite nonzero rows {int(nz.sum())}; max |finite dQ| "
              f"{float(dq[torch.isfinite(dq)].abs().max()):.3g}", flush=True)
# bfloat16: same data, no overflow expected
qb, kb, vb, gb = (t.to(torch.bfloat16) for t in (q, k, v, go))
dq = run("CUDNN_ATTENTION", qb, kb, vb, gb)
print("bfloat16 cudnn: dQ rows not finite", int((~torch.isfinite(dq)).any(-1).sum()), "max |dQ|", float(dq.abs().max()))
# float16, no GQA (K/V repeated) and contiguous
r = H // k.shape[2]
qc, kc, vc = q.contiguous(), k.repeat_interleave(r, 2).contiguous(), v.repeat_interleave(r, 2).contiguous()
dq = run("CUDNN_ATTENTION", qc, kc, vc, go)
print("float16 cudnn, KV repeated, contiguous: dQ rows not finite", int((~torch.isfinite(dq)).any(-1).sum()))
