"""torch SDPA's cuDNN backend: two identical backward passes do not always agree bitwise.

Standalone (torch only). Run on an H100 or H200:

    python sdpa_cudnn_backward_nondeterministic.py [repeats]

torch documents no nondeterminism for the cuDNN attention backward (it warns for the efficient
backend's, whose dQ is accumulated with atomics). Each repeat draws bfloat16 inputs of 4 batch
entries, 32 query heads, 2048 queries and keys, head dim 128 (the keys and values repeated from
8 heads, as GQA does), runs the forward once and the backward twice on the same output gradient
through F.scaled_dot_product_attention under sdpa_kernel(SDPBackend.CUDNN_ATTENTION), and
prints how many elements of dQ, dK and dV differ between the two passes. The same is done with
the math backend at a smaller size as a control (it must print 0 differences).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def two_backwards(backend, shape, causal, seed):
    """dQ, dK, dV of two backward passes through one forward."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    b, h, n, d = shape
    q = torch.randn(b, h, n, d, device="cuda", generator=gen).bfloat16().requires_grad_()
    # k and v are the repeated tensors themselves (not leaves): their gradients are cuDNN's own dK, dV.
    k, v = (torch.randn(b, h // 4, n, d, device="cuda", generator=gen).bfloat16().requires_grad_()
            .repeat_interleave(4, 1) for _ in range(2))
    grad = torch.randn(b, h, n, d, device="cuda", generator=gen).bfloat16()
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return [torch.autograd.grad(out, (q, k, v), grad, retain_graph=True) for _ in range(2)]


def main(repeats):
    print(torch.__version__, torch.cuda.get_device_name(), "cuDNN", torch.backends.cudnn.version())
    differed = 0
    for backend, shape in ((SDPBackend.CUDNN_ATTENTION, (4, 32, 2048, 128)), (SDPBackend.MATH, (1, 8, 512, 128))):
        for causal in (False, True):
            for seed in range(repeats):
                first, second = two_backwards(backend, shape, causal, seed)
                counts = {name: int((a != b).sum()) for name, a, b in zip(("dq", "dk", "dv"), first, second)}
                size = first[0].numel()
                print(f"{backend.name:16s} shape {shape} causal={causal!s:5s} seed {seed}: elements differing "
                      f"between two backward passes {counts} (of {size} each)")
                if backend is SDPBackend.CUDNN_ATTENTION:
                    differed += any(counts.values())
    print(f"cuDNN: {differed} of {2 * repeats} pairs of backward passes differed")
    return 1 if differed else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
