"""torch's math SDPA on the CPU gives results that depend on the values' strides in the last bit.

Standalone (torch only), on the CPU:

    python docs/repros/sdpa_math_layout.py

Each call below is made twice on the same numbers: once with v contiguous, once with v a view
of a wider buffer (its rows two elements apart instead of one, every element equal). Attention
does not depend on how its operands are stored, yet at head dim 1 the two outputs differ in the
last bit on some draws: P·V is then a matrix-vector product, which torch sums in another order
when V's sequence stride is not 1. Both results are equally close to float64 attention: a
reproducibility defect (a layout-invariance failure), not an accuracy one.
"""

import sys

import torch
import torch.nn.functional as F


def exact(q, k, v):
    q, k, v = (t.double() for t in (q, k, v))
    return torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1) @ v


def strided_like(v):
    """v's values in a view whose rows are head_dim + 1 elements apart."""
    buffer = torch.zeros(*v.shape[:-1], v.shape[-1] + 1, dtype=v.dtype)
    buffer[..., : v.shape[-1]] = v
    return buffer[..., : v.shape[-1]]


def draw(seed, head_dim=1, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    n = int(torch.randint(2, 40, (1,), generator=generator))
    return [torch.randn(1, 1, n, head_dim, generator=generator).to(dtype) for _ in range(3)]


if __name__ == "__main__":
    print(f"torch {torch.__version__}, CPU, float32, head dim 1, 200 draws of 2-39 queries and keys")
    differing = 0
    for seed in range(200):
        q, k, v = draw(seed)
        contiguous = F.scaled_dot_product_attention(q, k, v)
        strided = F.scaled_dot_product_attention(q, k, strided_like(v))
        assert torch.equal(v, strided_like(v))
        changed = contiguous != strided
        if changed.any():
            differing += 1
            reference = exact(q, k, v)
            print(f"seed {seed}, {q.shape[2]} queries and keys: {int(changed.sum())} of {changed.numel()} outputs "
                  f"differ, by up to {(contiguous - strided).abs().max().item():.3g}; largest error against "
                  f"float64: contiguous {(contiguous.double() - reference).abs().max().item():.3g}, strided "
                  f"{(strided.double() - reference).abs().max().item():.3g}")
    print(f"{differing} of 200 draws differ between the two layouts")
    sys.exit(1 if differing else 0)
