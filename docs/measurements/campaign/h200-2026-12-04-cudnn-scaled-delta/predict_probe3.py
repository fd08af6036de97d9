"""probe3.txt's part 3 (random q and k) against |scale * delta| / e^lse >= 65520, in float64 on the CPU from the
same inputs (drawn on the CPU by seed): prints each call's rows observed and predicted, then how many agree.

    python predict_probe3.py probe3.txt
"""
import math
import re
import sys

import torch

observed = {}
for line in open(sys.argv[1]):
    found = re.match(r"\s+seed (\d) scale\*delta\s+(\d+): NaN rows (\S+),", line)
    if found:
        observed[(int(found[1]), int(found[2]))] = found[3]
mask = torch.zeros(8, 64, dtype=torch.bool)
mask[torch.arange(8), 56 + torch.arange(8)] = True
agree = 0
for seed in range(6):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 1, 8, 64, generator=generator, dtype=torch.float64).half().double()
    k = torch.randn(1, 1, 64, 64, generator=generator, dtype=torch.float64).half().double()
    lse = torch.logsumexp((q[0, 0] @ k[0, 0].T / 8).masked_fill(~mask, -math.inf), -1)
    for g in (25.0, 50.0, 100.0, 200.0, 400.0):
        scaled_delta = 64 * 16 * g / 8  # one visible key: O = V = 16, dO = g
        predicted = "".join("x" if row else "." for row in scaled_delta * torch.exp(-lse) >= 65520)
        got = observed[(seed, int(scaled_delta))]
        agree += got == predicted
        print(f"seed {seed} scale*delta {scaled_delta:6.0f}: observed {got} predicted {predicted}")
print(f"agree in {agree} of {len(observed)} calls")
