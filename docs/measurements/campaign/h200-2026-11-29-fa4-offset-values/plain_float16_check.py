"""Whether a plain float16 backward overflows where FA4's did, on the case of d128b.py.gz.

Loads the inputs that script embeds bit for bit (FA4 is not needed: its import is stubbed) and
computes, on the CPU, flashcheck's float64 gradients, flashcheck's plain same-precision backward
and torch autograd through a plain float16 attention. Run from the repository's root:
``python docs/measurements/campaign/h200-2026-11-29-fa4-offset-values/plain_float16_check.py``.
"""

import gzip
import sys
import types
from pathlib import Path

import torch

from flashcheck.oracle import reference, same_precision

stub = types.ModuleType("flash_attn.cute")
stub.flash_attn_func = stub.flash_attn_varlen_func = None
sys.modules.update({"flash_attn": types.ModuleType("flash_attn"), "flash_attn.cute": stub})
script = types.ModuleType("d128b")
exec(gzip.decompress((Path(__file__).parent / "d128b.py.gz").read_bytes()), script.__dict__)
data = script.unpack(script.PAYLOAD)
q, k, v = (script.place(data["inputs"][name], "cpu") for name in ("q", "k", "v"))
grad_out, grad_lse = script.place(data["grad_out"], "cpu"), script.place(data["grad_lse"], "cpu")
kwargs = dict(data["kwargs"])

exact = reference.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
plain = same_precision.gradients(q, k, v, grad_out, grad_lse=grad_lse, **kwargs)
for name, got, want in zip(("dq", "dk", "dv"), plain, exact):
    print(f"{name}: flashcheck's plain float16 backward non-finite in {(~torch.isfinite(got)).sum().item()} "
          f"of {got.numel()}; float64 largest |{name}| {want.abs().max().item():.4g}")
print(f"dq at (0, 1, 0, 61): float64 {exact[0][0, 1, 0, 61].item():.6g}, plain {plain[0][0, 1, 0, 61].item()}")

# Torch autograd through a plain float16 attention (causal, the KV head repeated for the group).
group = q.shape[2] // k.shape[2]
qh = q.transpose(1, 2).detach().requires_grad_()
kh, vh = (t.transpose(1, 2).repeat_interleave(group, 1) for t in (k, v))
logits = (qh @ kh.transpose(-1, -2)) * q.shape[-1] ** -0.5
logits = logits.masked_fill(~torch.ones(logits.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
out = torch.softmax(logits.float(), -1).half() @ vh
lse = torch.logsumexp(logits.float(), -1)
((out.float() * grad_out.transpose(1, 2).float()).sum() + (lse * grad_lse.float()).sum()).backward()
print(f"dq: torch autograd in float16 non-finite in {(~torch.isfinite(qh.grad)).sum().item()} of {qh.grad.numel()}")
