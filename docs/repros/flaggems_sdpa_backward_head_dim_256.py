"""FlagGems' scaled_dot_product_attention backward in float32 at head dim 256: OutOfResources
(shared memory) under every configuration it ships, where the forward runs.

Standalone (torch and flag_gems only). Run on an H100 or H200:

    python flaggems_sdpa_backward_head_dim_256.py            # each shipped backward configuration
    python flaggems_sdpa_backward_head_dim_256.py own-tuning # FlagGems' own autotuning instead

Each run calls flag_gems.ops.scaled_dot_product_attention (causal, 128 queries and keys, 2 heads,
(B, H, N, D) contiguous) forward and backward in a process of its own and prints what each did:
"ran", or the error raised.

By default the backward kernel ``_attn_bwd`` is held to one of the configurations FlagGems ships
(its autotuner's ``configs``, src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml,
``attention_bwd``), one process per configuration, all at once, and the forward ``_attn_fwd`` to
one small configuration FlagGems also ships (BLOCK_M 64, BLOCK_N 16, 2 stages, 4 warps): its own
autotuning compiles its 45 configurations one after another, about 100 s each in float32 at head
dim 256 on an H100, before the first call returns. float32 at head dim 128 and bfloat16 at 256
run as controls, under each shipped backward configuration too. ``own-tuning`` runs the three
cases under FlagGems' own autotuning of both kernels instead (hours in float32 at head dim 256).

What the source says (flag_gems 5.0.2): every configuration of ``_attn_bwd`` has BLOCK_N1 = 128,
and the kernel holds a 128-key tile of K and of V while it walks the queries: 128 x 256 x 4 bytes
each in float32 at head dim 256, 256 KiB together, past the 227 KiB of shared memory a Hopper
block may use. In bfloat16, or at head dim 128, the two tiles take half that.
"""

import concurrent.futures
import subprocess
import sys

import torch

CASES = [("float32", 256), ("float32", 128), ("bfloat16", 256)]
#: The forward's configuration in the default mode: one of FlagGems' own small-head-dim ones.
FORWARD = {"BLOCK_M": 64, "BLOCK_N": 16, "PRE_LOAD_V": 0}


def autotuner(kernel):
    """The Triton autotuner behind a FlagGems kernel (LibEntry holds it as ``.fn``)."""
    while not hasattr(kernel, "configs"):
        kernel = kernel.fn
    return kernel


def hold(backward: int | None) -> str:
    """Hold ``_attn_fwd`` to FORWARD and ``_attn_bwd`` to its shipped configuration number
    ``backward`` (None: FlagGems' own tuning of both); a description of what was held."""
    if backward is None:
        return "FlagGems' own tuning"
    import triton
    from flag_gems.ops import attention

    forward = autotuner(attention._attn_fwd)
    forward.configs = [triton.Config(dict(FORWARD), num_stages=2, num_warps=4)]
    tuner = autotuner(attention._attn_bwd)
    config = tuner.configs[backward]
    tuner.configs = [config]
    return f"backward configuration {backward + 1}: {config}"


def run(dtype_name: str, head_dim: int, backward: int | None) -> None:
    from flag_gems.ops import scaled_dot_product_attention

    label = f"{dtype_name} head dim {head_dim}, {hold(backward)}:"
    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, 2, 128, head_dim, device="cuda", dtype=dtype, generator=g).requires_grad_()
               for _ in range(3))
    try:
        out = scaled_dot_product_attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
    except Exception as error:  # noqa: BLE001 - what it raises is the finding
        print(f"{label} forward raised {type(error).__name__}: {str(error)[:160]}")
        return
    try:
        out.backward(torch.randn_like(out))
        torch.cuda.synchronize()
        print(f"{label} forward ran, backward ran")
    except Exception as error:  # noqa: BLE001
        print(f"{label} forward ran, backward raised {type(error).__name__}: {str(error)[:160]}")


def in_process(*argv) -> str:
    """Run one case in a fresh process (a tuning's cache stays in its process); its output."""
    done = subprocess.run([sys.executable, __file__, *map(str, argv)], capture_output=True, text=True, check=False)
    return done.stdout.strip() or f"{argv}: exit status {done.returncode}: {done.stderr.strip()[-300:]}"


def main(own_tuning: bool) -> None:
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    if own_tuning:
        runs = [(dtype_name, head_dim, "own") for dtype_name, head_dim in CASES]
    else:
        from flag_gems.ops import attention

        shipped = len(autotuner(attention._attn_bwd).configs)
        runs = [(dtype_name, head_dim, index) for dtype_name, head_dim in CASES for index in range(shipped)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(runs)) as pool:
        for line in pool.map(lambda argv: in_process(*argv), runs):
            print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 4:
        run(sys.argv[1], int(sys.argv[2]), None if sys.argv[3] == "own" else int(sys.argv[3]))
    else:
        main(own_tuning=sys.argv[1:] == ["own-tuning"])
