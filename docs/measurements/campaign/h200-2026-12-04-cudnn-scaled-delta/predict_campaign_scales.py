"""The campaign's case at other scales (probe2.txt, part C): rows where |scale * delta| / e^lse >= 65520, and where
|scale * delta| alone is, in float64 on the CPU from the script's inputs (one visible key a row: the last, so that
lse is that key's scaled logit and delta = dO . V_last).

    python predict_campaign_scales.py SCRIPT   # SCRIPT: ../h200-2026-12-04-survey-8/sdpa-public-cudnn-repro-01-*.py.gz, unzipped
"""
import importlib.util
import sys

import torch

spec = importlib.util.spec_from_file_location("repro", sys.argv[1])
repro = importlib.util.module_from_spec(spec)
spec.loader.exec_module(repro)
data = repro.unpack(repro.PAYLOAD)
q, k, v, _ = repro.placed(data, "cpu")
grad_out = repro.place(data["grad_out"], "cpu").double()
group = q.shape[2] // k.shape[2]
q, k, v = q.double(), k.double().repeat_interleave(group, 2), v.double().repeat_interleave(group, 2)
for scale, observed in ((1 / 64, 0), (1 / 16, 4), (1 / 8, 22), (1 / 4, 37), (1.0, 49)):
    lse = (q[:, 0] * k[:, -1]).sum(-1) * scale  # (B, H)
    delta = (grad_out[:, 0] * v[:, -1]).sum(-1)
    quotient = (scale * delta).abs() * torch.exp(-lse)
    print(f"scale {scale}: rows NaN on the device {observed}; |scale * delta| / e^lse >= 65520 in "
          f"{int((quotient >= 65520).sum())}; |scale * delta| alone in {int(((scale * delta).abs() >= 65520).sum())}")
