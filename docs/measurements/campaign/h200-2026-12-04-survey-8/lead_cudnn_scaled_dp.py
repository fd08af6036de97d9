"""The float64 side of the sdpa-public-cudnn lead of this folder, on the CPU: the campaign's case
(grads_match_reference_where_ds_exceeds_float16; 56 query rows, each with exactly one allowed
key, so that P = 1, dS = 0 and dQ = 0 exactly) and the rows whose |scale * dP| (= |scale *
delta|, since the output is that key's value) is beyond float16's range. The campaign reported
dQ NaN in 1408 of 3584 elements, 22 rows of 64; this prints how many rows are beyond range.

    python lead_cudnn_scaled_dp.py SCRIPT   # SCRIPT: the .py.gz of this folder, unzipped
"""
import importlib.util
import math
import sys

import torch

path = sys.argv[1]
spec = importlib.util.spec_from_file_location("repro", path)
repro = importlib.util.module_from_spec(spec)
spec.loader.exec_module(repro)
data = repro.unpack(repro.PAYLOAD)
q, k, v = (repro.place(data["inputs"][name], "cpu").double() for name in ("q", "k", "v"))
grad_out = repro.place(data["grad_out"], "cpu").double()
batch, _, heads, dim = q.shape
scale = 1 / math.sqrt(dim)
value = v[:, -1:].expand(batch, 1, heads, dim)  # window (0, 0), one query: the last key alone
dp = (grad_out * value).sum(-1) * scale
beyond = dp.abs() >= 65520  # float16 rounds these to infinity
print(f"rows {dp.numel()}, |scale * dP| beyond float16's range in {int(beyond.sum())} "
      f"(largest below {dp.abs()[~beyond].max():.6g}, smallest beyond {dp.abs()[beyond].min():.6g}); "
      f"row (0, 0, 0) beyond: {bool(beyond[0, 0, 0])}")
