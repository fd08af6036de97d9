"""FlagGems' scaled_dot_product_attention backward: wrong and NaN gradients, and an illegal
memory access, where the forward is right.

Standalone (torch and flag_gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_sdpa_backward.py

Each case calls flag_gems.ops.scaled_dot_product_attention on (B, H, N, D) contiguous tensors,
sums out * dO with a random dO, and takes the gradients with torch.autograd.grad. Printed per
case: whether dO's storage changed (a backward must only read it), and for the output and each
gradient the largest error against float64 attention written out by hand (softmax(scale q k^T
+ mask) v, GQA through repeated KV heads) with its NaN count; under a boolean mask, against
both torch's reading ("may attend") and its inverse, since FlagGems reads the mask inverted
(docs/repros/flaggems_layouts_and_masks.py); every mask keeps key 0 for every query. The
unmasked cases run in this process, one after another, so an illegal memory access ends the
script there; the masked ones, which ended the process in flashcheck's campaigns, each in a
child process (``python flaggems_sdpa_backward.py N`` runs case N alone).

What the source says (flag_gems 5.0.2, ops/attention.py): the backward (``_attn_bwd``) is the
causal fused backward of Triton's tutorial, run for every call. The autograd function passes it
``attn_mask=None`` and the kernel takes no causal flag: it always computes causal attention's
gradients (dQ of a query block over the keys up to the block's end, dK and dV of a key block
over the queries from its start, the diagonal blocks masked causally). Its grid is
``cdiv(Q_CTX, 128)`` programs, each writing dQ for BLOCK_M2 queries at ``pid * BLOCK_M2``
(BLOCK_M2 is 64 in two of the three tuned configurations: the other queries' dQ keeps
``torch.empty``'s contents); it loads dO without a bound and checks ``Q_CTX % BLOCK_M1 == 0``
only with ``tl.device_assert``, which a build without debugging skips. So every case here,
none causal, is wrong.
"""

import subprocess
import sys

import torch

# (label, batch, heads, kv_heads, queries, keys, head dim, dtype, causal, masked)
CASES = [
    ("no mask, 1 query, 128 keys, d64 float16", 1, 1, 1, 1, 128, 64, "float16", False, False),
    ("no mask, 1 query, 129 keys, d64 float16", 1, 1, 1, 1, 129, 64, "float16", False, False),
    ("no mask, 128 queries, 128 keys, d64 float16", 1, 1, 1, 128, 128, 64, "float16", False, False),
    ("no mask, 128 queries, 129 keys, d64 float16", 1, 1, 1, 128, 129, 64, "float16", False, False),
    ("no mask, 129 queries, 129 keys, d64 float16", 1, 1, 1, 129, 129, 64, "float16", False, False),
    ("no mask, 129 queries, 256 keys, d64 float16", 1, 1, 1, 129, 256, 64, "float16", False, False),
    ("no mask, 128 queries, 256 keys, d64 float32", 1, 2, 2, 128, 256, 64, "float32", False, False),
    ("no mask, 1 query, 1941 keys, GQA 7:1, d128 bfloat16", 1, 7, 1, 1, 1941, 128, "bfloat16", False, False),
    ("mask, 64 queries, 692 keys, d16 float32", 3, 5, 5, 64, 692, 16, "float32", False, True),
    ("mask, 1 query, 1941 keys, GQA 7:1, d128 bfloat16", 1, 7, 1, 1, 1941, 128, "bfloat16", False, True),
]


def reference(q, k, v, do, scale, allowed):
    """float64 out and gradients; ``allowed``: (B, H, Nq, Nk) boolean or None."""
    q, k, v, do = (t.detach().double().requires_grad_(t is not do) for t in (q, k, v, do))
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scores = scale * q @ kk.transpose(-1, -2)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    out = scores.softmax(-1) @ vv
    return (out.detach(), *torch.autograd.grad((out * do).sum(), (q, k, v)))


def run_case(index):
    from flag_gems import ops

    label, batch, heads, kv_heads, nq, nk, d, dtype, causal, masked = CASES[index]
    dtype = getattr(torch, dtype)
    torch.manual_seed(index)
    q = torch.randn(batch, heads, nq, d, device="cuda", dtype=dtype, requires_grad=True)
    k, v = (torch.randn(batch, kv_heads, nk, d, device="cuda", dtype=dtype, requires_grad=True) for _ in "kv")
    do = torch.randn(batch, heads, nq, d, device="cuda", dtype=dtype)
    allowed = None
    if masked:
        allowed = torch.rand(batch, heads, nq, nk, device="cuda") < 0.5
        allowed[..., 0] = True
    scale = d ** -0.5
    out = ops.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0, is_causal=causal, scale=scale,
                                           enable_gqa=heads != kv_heads)
    before = do.clone()
    grads = torch.autograd.grad((out * do).sum(), (q, k, v))
    torch.cuda.synchronize()
    changed = (do.view(torch.uint8) != before.view(torch.uint8)).sum().item()
    print(f"{label}: dO bytes changed by the backward {changed} of {do.numel() * do.element_size()}")
    readings = [("torch's mask", allowed)] + ([("inverted mask", ~allowed)] if masked else [])
    for name, mask in readings:
        exact = reference(q, k, v, do, scale, mask)
        errors = ", ".join(f"{what} {(got.double() - want).abs().max().item():.3g} ({got.isnan().sum().item()} NaN)"
                           for what, got, want in zip(("out", "dq", "dk", "dv"), (out, *grads), exact))
        print(f"  against float64 under {name}: {errors}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run_case(int(sys.argv[1]))
        sys.exit(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    for index, case in enumerate(CASES):
        if not case[-1]:
            run_case(index)
            continue
        child = subprocess.run([sys.executable, __file__, str(index)], capture_output=True, text=True)
        print(child.stdout, end="")
        if child.returncode != 0:
            last = [line for line in child.stderr.splitlines() if "Error" in line][-1:] or ["(no message)"]
            print(f"{case[0]}: the process failed (exit {child.returncode}): {last[0]}")
