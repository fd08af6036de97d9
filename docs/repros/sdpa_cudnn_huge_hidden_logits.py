"""torch SDPA's cuDNN backend (public API): do keys a boolean mask hides change the output when
their logits are huge? Yes, on an H200 (torch 2.11, cuDNN 9.19; the output beside this
script): at hidden logits of about 3e5 the hidden values appear in the rows they are hidden
from, at about 1e5 they do not; the math backend never lets them in.

Standalone (torch only). Run on a CUDA GPU with cuDNN attention:

    python docs/repros/sdpa_cudnn_huge_hidden_logits.py

Causal attention over 256 queries and keys (float16, head dim 40), the mask as a boolean
attn_mask. Keys 128.. are hidden from queries 0..127; they are set to SIZE times q's signs (so
that their logits, about SIZE · Σ|q| · scale, are huge and positive) and their values to
float16's largest magnitude. A key the mask hides cannot change those rows, whatever its logits
(the math backend, for comparison). An output equal to ±65504 is a hidden value leaking in.
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def rows_changed(backend, q, k, v, huge_k, huge_v, mask):
    with sdpa_kernel(backend):
        before = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        after = F.scaled_dot_product_attention(q, huge_k, huge_v, attn_mask=mask)
    changed = before[..., :128, :] != after[..., :128, :]
    leaked = after[..., :128, :].abs() == torch.finfo(q.dtype).max
    return int(changed.sum()), int(leaked.sum()), changed.numel()


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
    q, k, v = (torch.randn(1, 2, 256, 40, dtype=torch.float16, device="cuda") for _ in range(3))
    mask = torch.ones(256, 256, dtype=torch.bool, device="cuda").tril()
    signs = q.sign()[:, :, :1, :]  # every hidden key points along the first query's signs
    for size in (1e3, 1e4, 3e4):
        huge_k, huge_v = k.clone(), v.clone()
        huge_k[:, :, 128:] = (size * signs).to(torch.float16)
        huge_v[:, :, 128:] = torch.finfo(torch.float16).max
        logit = (size * (q[:, :, :1].abs().float().sum()) * 40 ** -0.5).item()
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)):
            changed, leaked, total = rows_changed(backend, q, k, v, huge_k, huge_v, mask)
            print(f"hidden keys at {size:g} (first row's hidden logits about {logit:.3g}): {name} changes {changed} "
                  f"of {total} elements of the rows they are hidden from, {leaked} equal to ±65504")
