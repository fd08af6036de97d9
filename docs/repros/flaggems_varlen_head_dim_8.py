"""FlagGems 5.0.2: flash_attn_varlen_func accepts head dim 8 (its mha_varlan_fwd asks a multiple
of 8 up to 256), then its Triton kernel fails to compile.

Standalone (torch and flag-gems only). Run on a CUDA GPU:

    python docs/repros/flaggems_varlen_head_dim_8.py

One sequence of 4 queries and 4 keys, keys as a paged cache of one-token pages, head dims 8,
16 and 32, against float64 attention.
"""

import torch
from flag_gems import ops


def run(head_dim, heads=2, n=4):
    q = torch.randn(n, heads, head_dim, dtype=torch.float16, device="cuda")
    k, v = (torch.randn(n, 1, heads, head_dim, dtype=torch.float16, device="cuda") for _ in range(2))
    cu = torch.tensor([0, n], dtype=torch.int32, device="cuda")
    table = torch.arange(n, dtype=torch.int32, device="cuda")[None]
    seqused = torch.tensor([n], dtype=torch.int32, device="cuda")
    try:
        out, _ = ops.flash_attn_varlen_func(q, k, v, max_seqlen_q=n, cu_seqlens_q=cu, max_seqlen_k=n,
                                            seqused_k=seqused, dropout_p=0.0, softmax_scale=head_dim ** -0.5,
                                            causal=False, window_size=(-1, -1), block_table=table,
                                            return_softmax_lse=True)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - the compile failure is what this reports
        print(f"head dim {head_dim}: raised {type(error).__name__}: {' '.join(str(error).split())[:160]}")
        return
    scores = torch.einsum("qhd,khd->hqk", q.double(), k[:, 0].double()) * head_dim ** -0.5
    exact = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v[:, 0].double())
    print(f"head dim {head_dim}: ran, max error {(out.double() - exact).abs().max().item():.3g}")


if __name__ == "__main__":
    torch.manual_seed(0)
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for head_dim in (8, 16, 32):
        run(head_dim)
