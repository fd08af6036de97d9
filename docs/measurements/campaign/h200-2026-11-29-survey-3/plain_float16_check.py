"""Whether a plain float16 backward overflows where torch's flash backend did, on the inputs the two
sdpa-public-flash scripts of this folder embed (loaded bit for bit; no GPU needed).

For each, on the CPU: flashcheck's float64 gradients, flashcheck's plain same-precision backward
(:func:`flashcheck.oracle.same_precision.gradients`) and torch's SDPA math backend in float16
through autograd. Run from the repository's root:
``python docs/measurements/campaign/h200-2026-11-29-survey-3/plain_float16_check.py``.
"""

import gzip
import types
from pathlib import Path

import torch

from flashcheck.oracle import reference, same_precision

for name in ("sdpa-public-flash-01-grads_match_reference.py.gz", "sdpa-public-flash-02-grads_match_reference.py.gz"):
    script = types.ModuleType(name)
    source = gzip.decompress((Path(__file__).parent / name).read_bytes()).decode()
    exec(source.replace('if __name__ == "__main__"', "if False"), script.__dict__)
    data = script.unpack(script.PAYLOAD)
    q, k, v = (script.place(data["inputs"][key], "cpu") for key in ("q", "k", "v"))
    grad_out = script.place(data["grad_out"], "cpu")
    kwargs = dict(data["kwargs"])
    print(f"{name}: {kwargs}, largest |dO| {grad_out.abs().max().item():.5g}")
    exact = reference.gradients(q, k, v, grad_out, **kwargs)
    plain = same_precision.gradients(q, k, v, grad_out, **kwargs)
    for label, got, want in zip(("dq", "dk", "dv"), plain, exact):
        print(f"  {label}: flashcheck's plain float16 backward non-finite in {(~torch.isfinite(got)).sum().item()} "
              f"of {got.numel()}; float64 largest |{label}| {want.abs().max().item():.4g}")
    qh, kh, vh = (t.transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    out = torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, is_causal=bool(kwargs.get("causal")))
    (out.float() * grad_out.transpose(1, 2).float()).sum().backward()
    print(f"  dq: torch's math backend in float16 (autograd) non-finite in {(~torch.isfinite(qh.grad)).sum().item()} "
          f"of {qh.grad.numel()}")
