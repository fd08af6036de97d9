"""The public kernel function, flashcheck.kernels.flash_attention: input validation and the
documented calling conventions.

Bad input is rejected before any launch with TypeError or ValueError, the message starts
with the name of the offending argument, and a caller's ``out``/``lse_out`` buffers are left
exactly as they were; packed variable-length calls and boolean masks included. The happy-path tests are tiny: on the CPU the kernel runs in the interpreter.
"""
from __future__ import annotations

import math

import pytest
import torch

from flashcheck.kernels import flash_attention, forward, launcher
from flashcheck.oracle import reference

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
SENTINEL = 7.0

B, NQ, NK, H, HKV, D = 2, 3, 5, 4, 2, 8


def tensors(device, *, b=B, nq=NQ, nk=NK, h=H, hkv=HKV, d=D, dtype=torch.float16, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(b, nq, h, d, generator=generator).to(dtype).to(device)
    k = torch.randn(b, nk, hkv, d, generator=generator).to(dtype).to(device)
    v = torch.randn(b, nk, hkv, d, generator=generator).to(dtype).to(device)
    return q, k, v


@pytest.fixture
def launches(monkeypatch):
    """Records the grid of every launch of the Triton forward kernel; validation failures
    must leave it empty. Every launch of the project's kernels goes through
    ``flashcheck.kernels.launcher.launch``, which after a key's first launch runs the cached
    compiled kernel without touching the kernel object: so the spy sits there, not on the
    kernel, and sees cached launches too."""
    calls = []
    launch = launcher.launch

    def spy(kernel, grid, *args, **kwargs):
        if kernel is forward._attention_forward:
            calls.append(grid)
        return launch(kernel, grid, *args, **kwargs)

    monkeypatch.setattr(launcher, "launch", spy)
    return calls


# -- rejected input ------------------------------------------------------------------------
def good(device, **changes):
    """Keyword arguments of a valid call, with ``changes`` applied."""
    q, k, v = tensors(device)
    args = dict(q=q, k=k, v=v)
    args.update(changes)
    return args


def t(*shape, dtype=torch.float16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


# A packed batch of three sequences: (2, 1), (0, 4) and (3, 0) queries and keys.
TQ, TK, CU_Q, CU_K = 5, 5, [0, 2, 2, 5], [0, 1, 5, 5]


def offsets(values, device, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype, device=device)


def packed(device, **changes):
    """Keyword arguments of a valid packed variable-length call, with ``changes`` applied;
    a change to None drops the argument."""
    args = dict(q=t(TQ, H, D, device=device), k=t(TK, HKV, D, device=device), v=t(TK, HKV, D, device=device),
                cu_seqlens_q=offsets(CU_Q, device), cu_seqlens_k=offsets(CU_K, device), max_seqlen_q=3, max_seqlen_k=4)
    args.update(changes)
    return {key: value for key, value in args.items() if value is not None or key in ("q", "k", "v")}


def mask(*shape, device="cpu"):
    return torch.rand(*shape, device=device) < 0.5


# (argument named in the message, expected error, function device -> call kwargs)
BAD_CALLS = {
    # q, k, v themselves
    "q not a tensor": ("q", TypeError, lambda dev: good(dev, q=[[1.0]])),
    "k is None": ("k", TypeError, lambda dev: good(dev, k=None)),
    "v a list": ("v", TypeError, lambda dev: good(dev, v=[0.0] * 4)),
    "q with 3 dims": ("q", ValueError, lambda dev: good(dev, q=t(NQ, H, D, device=dev))),
    "q with 5 dims": ("q", ValueError, lambda dev: good(dev, q=t(B, NQ, H, D, 1, device=dev))),
    "k with 3 dims": ("k", ValueError, lambda dev: good(dev, k=t(NK, HKV, D, device=dev))),
    "v with 5 dims": ("v", ValueError, lambda dev: good(dev, v=t(B, NK, HKV, D, 1, device=dev))),
    # dtypes
    "float64 inputs": ("q", TypeError, lambda dev: dict(zip("qkv", (x.double() for x in tensors(dev))))),
    "int32 inputs": ("q", TypeError, lambda dev: dict(zip("qkv", (x.int() for x in tensors(dev))))),
    "bool inputs": ("q", TypeError, lambda dev: dict(zip("qkv", (x > 0 for x in tensors(dev))))),
    "k float32 with float16 q": ("k", TypeError, lambda dev: good(dev, k=t(B, NK, HKV, D, dtype=torch.float32, device=dev))),
    "v bfloat16 with float16 q": ("v", TypeError, lambda dev: good(dev, v=t(B, NK, HKV, D, dtype=torch.bfloat16, device=dev))),
    # shapes
    "k batch differs": ("k", ValueError, lambda dev: good(dev, k=t(B + 1, NK, HKV, D, device=dev), v=t(B + 1, NK, HKV, D, device=dev))),
    "v seqlen differs from k": ("v", ValueError, lambda dev: good(dev, v=t(B, NK + 1, HKV, D, device=dev))),
    "v heads differ from k": ("v", ValueError, lambda dev: good(dev, v=t(B, NK, 1, D, device=dev))),
    "v head dim differs from k": ("v", ValueError, lambda dev: good(dev, v=t(B, NK, HKV, D + 1, device=dev))),
    "k and v head dim differ from q": ("k", ValueError, lambda dev: good(dev, k=t(B, NK, HKV, 2 * D, device=dev), v=t(B, NK, HKV, 2 * D, device=dev))),
    "head dim 0": ("q", ValueError, lambda dev: dict(zip("qkv", tensors(dev, d=0)))),
    "head dim 257": ("q", ValueError, lambda dev: dict(zip("qkv", tensors(dev, nq=1, nk=1, h=1, hkv=1, d=257)))),
    "heads not a multiple of kv heads": ("k", ValueError, lambda dev: dict(zip("qkv", tensors(dev, h=3, hkv=2)))),
    "more kv heads than heads": ("k", ValueError, lambda dev: dict(zip("qkv", tensors(dev, h=2, hkv=4)))),
    "zero kv heads": ("k", ValueError, lambda dev: dict(zip("qkv", tensors(dev, h=2, hkv=0)))),
    # window and causal
    "window not a pair": ("window", TypeError, lambda dev: good(dev, window=(3,))),
    "window a triple": ("window", TypeError, lambda dev: good(dev, window=(1, 2, 3))),
    "window an int": ("window", TypeError, lambda dev: good(dev, window=3)),
    "window None": ("window", TypeError, lambda dev: good(dev, window=None)),
    "window of floats": ("window", TypeError, lambda dev: good(dev, window=(1.0, 2.0))),
    "window with a bool": ("window", TypeError, lambda dev: good(dev, window=(True, -1))),
    "window left below -1": ("window", ValueError, lambda dev: good(dev, window=(-2, 0))),
    "window right below -1": ("window", ValueError, lambda dev: good(dev, window=(0, -3))),
    "causal with right bound 3": ("window", ValueError, lambda dev: good(dev, causal=True, window=(-1, 3))),
    "causal with window (2, 1)": ("window", ValueError, lambda dev: good(dev, causal=True, window=(2, 1))),
    "causal an int": ("causal", TypeError, lambda dev: good(dev, causal=1)),
    "causal None": ("causal", TypeError, lambda dev: good(dev, causal=None)),
    "causal a string": ("causal", TypeError, lambda dev: good(dev, causal="True")),
    # softmax_scale
    "softmax_scale nan": ("softmax_scale", ValueError, lambda dev: good(dev, softmax_scale=float("nan"))),
    "softmax_scale inf": ("softmax_scale", ValueError, lambda dev: good(dev, softmax_scale=float("inf"))),
    "softmax_scale -inf": ("softmax_scale", ValueError, lambda dev: good(dev, softmax_scale=-math.inf)),
    "softmax_scale a string": ("softmax_scale", (TypeError, ValueError), lambda dev: good(dev, softmax_scale="0.5")),
    "softmax_scale a bool": ("softmax_scale", (TypeError, ValueError), lambda dev: good(dev, softmax_scale=True)),
    "softmax_scale a complex": ("softmax_scale", (TypeError, ValueError), lambda dev: good(dev, softmax_scale=1j)),
    # out and lse_out
    "out wrong shape": ("out", ValueError, lambda dev: good(dev, out=t(B, NQ, H, D + 1, device=dev))),
    "out in (B, H, Nq, D) shape": ("out", ValueError, lambda dev: good(dev, out=t(B, H, NQ, D, device=dev))),
    "out wrong dtype": ("out", ValueError, lambda dev: good(dev, out=t(B, NQ, H, D, dtype=torch.float32, device=dev))),
    "out not a tensor": ("out", TypeError, lambda dev: good(dev, out=[0.0])),
    "out with overlapping elements": ("out", ValueError, lambda dev: good(dev, out=t(1, NQ, H, D, device=dev).expand(B, NQ, H, D))),
    "lse_out in (B, Nq, H) shape": ("lse_out", ValueError, lambda dev: good(dev, lse_out=t(B, NQ, H, dtype=torch.float32, device=dev))),
    "lse_out float16": ("lse_out", ValueError, lambda dev: good(dev, lse_out=t(B, H, NQ, dtype=torch.float16, device=dev))),
    "lse_out float64": ("lse_out", ValueError, lambda dev: good(dev, lse_out=t(B, H, NQ, dtype=torch.float64, device=dev))),
    "lse_out not a tensor": ("lse_out", TypeError, lambda dev: good(dev, lse_out=0.0)),
    # attn_mask
    "attn_mask float": ("attn_mask", TypeError, lambda dev: good(dev, attn_mask=torch.ones(NQ, NK, device=dev))),
    "attn_mask int8": ("attn_mask", TypeError, lambda dev: good(dev, attn_mask=torch.ones(NQ, NK, dtype=torch.int8, device=dev))),
    "attn_mask a list": ("attn_mask", TypeError, lambda dev: good(dev, attn_mask=[[True] * NK] * NQ)),
    "attn_mask Nk wrong": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(NQ, NK + 1, device=dev))),
    "attn_mask Nq wrong": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(B, 1, NQ + 1, NK, device=dev))),
    "attn_mask heads wrong": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(HKV + 1, NQ, NK, device=dev))),
    "attn_mask batch wrong": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(B + 1, H, NQ, NK, device=dev))),
    "attn_mask transposed": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(NK, NQ, device=dev))),
    "attn_mask with 5 dims": ("attn_mask", ValueError, lambda dev: good(dev, attn_mask=mask(1, B, H, NQ, NK, device=dev))),
    "attn_mask with varlen": ("attn_mask", ValueError, lambda dev: packed(dev, attn_mask=mask(1, 1, device=dev))),
    # the four packed variable-length arguments come together
    "cu_seqlens_q alone": ("cu_seqlens_k", ValueError, lambda dev: good(dev, cu_seqlens_q=offsets([0, NQ], dev))),
    "max_seqlen_k alone": ("cu_seqlens_q", ValueError, lambda dev: good(dev, max_seqlen_k=NK)),
    "varlen without max_seqlen_q": ("max_seqlen_q", ValueError, lambda dev: packed(dev, max_seqlen_q=None)),
    "varlen without cu_seqlens_k": ("cu_seqlens_k", ValueError, lambda dev: packed(dev, cu_seqlens_k=None)),
    # packed q, k, v
    "varlen q with 4 dims": ("q", ValueError, lambda dev: packed(dev, q=t(1, TQ, H, D, device=dev))),
    "varlen k with 4 dims": ("k", ValueError, lambda dev: packed(dev, k=t(1, TK, HKV, D, device=dev))),
    "varlen v tokens differ from k": ("v", ValueError, lambda dev: packed(dev, v=t(TK + 1, HKV, D, device=dev))),
    "varlen k head dim differs from q": ("k", ValueError, lambda dev: packed(dev, k=t(TK, HKV, D + 1, device=dev), v=t(TK, HKV, D + 1, device=dev))),
    "varlen heads not a multiple of kv heads": ("k", ValueError, lambda dev: packed(dev, k=t(TK, 3, D, device=dev), v=t(TK, 3, D, device=dev))),
    "varlen k float32 with float16 q": ("k", TypeError, lambda dev: packed(dev, k=t(TK, HKV, D, dtype=torch.float32, device=dev))),
    # cu_seqlens
    "cu_seqlens_q int64": ("cu_seqlens_q", TypeError, lambda dev: packed(dev, cu_seqlens_q=offsets(CU_Q, dev, torch.int64))),
    "cu_seqlens_k float32": ("cu_seqlens_k", TypeError, lambda dev: packed(dev, cu_seqlens_k=offsets(CU_K, dev, torch.float32))),
    "cu_seqlens_q a list": ("cu_seqlens_q", TypeError, lambda dev: packed(dev, cu_seqlens_q=CU_Q)),
    "cu_seqlens_q 2-d": ("cu_seqlens_q", ValueError, lambda dev: packed(dev, cu_seqlens_q=offsets([CU_Q], dev))),
    "cu_seqlens_k with no entry": ("cu_seqlens_k", ValueError, lambda dev: packed(dev, cu_seqlens_k=offsets([], dev))),
    "cu_seqlens_k one sequence more": ("cu_seqlens_k", ValueError, lambda dev: packed(dev, cu_seqlens_k=offsets(CU_K + [TK], dev))),
    "cu_seqlens_q first offset 1": ("cu_seqlens_q", ValueError, lambda dev: packed(dev, cu_seqlens_q=offsets([1, 2, 2, 5], dev))),
    "cu_seqlens_k decreasing": ("cu_seqlens_k", ValueError, lambda dev: packed(dev, cu_seqlens_k=offsets([0, 3, 2, 5], dev))),
    "cu_seqlens_q ends before Tq": ("cu_seqlens_q", ValueError, lambda dev: packed(dev, cu_seqlens_q=offsets([0, 2, 2, 4], dev))),
    "cu_seqlens_k ends past Tk": ("cu_seqlens_k", ValueError, lambda dev: packed(dev, cu_seqlens_k=offsets([0, 1, 5, 6], dev))),
    # max_seqlen
    "max_seqlen_q below the longest": ("max_seqlen_q", ValueError, lambda dev: packed(dev, max_seqlen_q=2)),
    "max_seqlen_k below the longest": ("max_seqlen_k", ValueError, lambda dev: packed(dev, max_seqlen_k=3)),
    "max_seqlen_k negative": ("max_seqlen_k", ValueError, lambda dev: packed(dev, max_seqlen_k=-1)),
    "max_seqlen_q a bool": ("max_seqlen_q", ValueError, lambda dev: packed(dev, max_seqlen_q=True)),
    "max_seqlen_k a float": ("max_seqlen_k", ValueError, lambda dev: packed(dev, max_seqlen_k=4.0)),
    "max_seqlen_q a tensor": ("max_seqlen_q", ValueError, lambda dev: packed(dev, max_seqlen_q=torch.tensor(3))),
    # packed out and lse_out
    "varlen out in the dense shape": ("out", ValueError, lambda dev: packed(dev, out=t(1, TQ, H, D, device=dev))),
    "varlen lse_out (Tq, H)": ("lse_out", ValueError, lambda dev: packed(dev, lse_out=t(TQ, H, dtype=torch.float32, device=dev))),
    "varlen lse_out in the dense shape": ("lse_out", ValueError, lambda dev: packed(dev, lse_out=t(1, H, TQ, dtype=torch.float32, device=dev))),
}


def sentinel_buffers(args, device):
    """Valid-looking out/lse_out filled with SENTINEL (shaped for q when q is a 4-d tensor,
    or a 3-d one in a packed call)."""
    q = args.get("q")
    if isinstance(q, torch.Tensor) and q.dim() == 4:
        shape, lse_shape = tuple(q.shape), (q.shape[0], q.shape[2], q.shape[1])
        dtype = q.dtype if q.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float16
    elif isinstance(q, torch.Tensor) and q.dim() == 3:
        shape, lse_shape = tuple(q.shape), (q.shape[1], q.shape[0])
        dtype = q.dtype if q.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.float16
    else:
        shape, lse_shape, dtype = (B, NQ, H, D), (B, H, NQ), torch.float16
    out = torch.full(shape, SENTINEL, dtype=dtype, device=device)
    lse = torch.full(lse_shape, SENTINEL, dtype=torch.float32, device=device)
    return out, lse


@pytest.mark.parametrize("name, error, make", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_input_is_rejected_before_launch_naming_the_argument(name, error, make, device, launches):
    args = make(device)
    out, lse = sentinel_buffers(args, device)
    args.setdefault("out", out)
    args.setdefault("lse_out", lse)
    given = {key: args[key] for key in ("out", "lse_out") if isinstance(args[key], torch.Tensor)}
    before = {key: buffer.clone() for key, buffer in given.items()}
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")

    with pytest.raises(error, match=rf"^{name}\b"):
        flash_attention(q, k, v, **args)

    assert launches == [], "validation must happen before any launch"
    for key, buffer in given.items():
        assert torch.equal(buffer, before[key]), f"{key} was modified by a rejected call"


def test_errors_are_raised_even_when_grad_is_required(device, launches):
    q, k, v = tensors(device)
    q.requires_grad_(True)
    with pytest.raises(ValueError, match="^softmax_scale"):
        flash_attention(q, k, v, softmax_scale=math.nan)
    assert launches == []


@needs_cuda
@pytest.mark.parametrize("which", ["k", "v"])
def test_device_mismatch_names_the_argument(which, launches):
    args = good("cuda")
    args[which] = args[which].cpu()
    with pytest.raises(ValueError, match=rf"^{which}\b.*device"):
        flash_attention(args["q"], args["k"], args["v"])
    assert launches == []


@pytest.mark.parametrize("dim, shape", [("B", (B + 1, 1, 1, 1)), ("H", (3, 1, 1)), ("Nq", (NQ + 2, 1)), ("Nk", (NK - 1,))])
def test_mask_error_names_the_dimension_that_does_not_broadcast(dim, shape, device, launches):
    q, k, v = tensors(device)
    with pytest.raises(ValueError, match=rf"^attn_mask: .*dim {dim} has size"):
        flash_attention(q, k, v, attn_mask=mask(*shape, device=device))
    assert launches == []


def test_a_partial_set_of_varlen_arguments_names_what_is_missing(device, launches):
    args = packed(device, max_seqlen_k=None, cu_seqlens_k=None)
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
    with pytest.raises(ValueError, match="^cu_seqlens_k: .*together; got cu_seqlens_q, max_seqlen_q without"):
        flash_attention(q, k, v, **args)
    assert launches == []


@needs_cuda
@pytest.mark.parametrize("which", ["cu_seqlens_q", "cu_seqlens_k", "attn_mask"])
def test_mask_and_offsets_on_another_device_are_rejected(which, launches):
    args = packed("cuda") if which != "attn_mask" else good("cuda", attn_mask=mask(NQ, NK, device="cuda"))
    args[which] = args[which].cpu()
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
    with pytest.raises(ValueError, match=rf"^{which}\b.*device"):
        flash_attention(q, k, v, **args)
    assert launches == []


@needs_cuda
def test_out_on_another_device_is_rejected(launches):
    q, k, v = tensors("cuda")
    out = torch.full(q.shape, SENTINEL, dtype=q.dtype)
    with pytest.raises(ValueError, match="^out"):
        flash_attention(q, k, v, out=out)
    assert (out == SENTINEL).all() and launches == []


# -- happy path ------------------------------------------------------------------------------
def assert_close_to_reference(q, k, v, out, lse, **kwargs):
    """Loose: these tests are about conventions, not accuracy (the properties test that)."""
    ref_out, ref_lse = reference.attention(q, k, v, **kwargs)
    atol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}[q.dtype]
    torch.testing.assert_close(out.double().cpu(), ref_out.cpu(), atol=atol, rtol=atol)
    torch.testing.assert_close(lse.double().cpu(), ref_lse.cpu(), atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_returns_out_and_lse_with_documented_shapes_and_dtypes(dtype, device, launches):
    q, k, v = tensors(device, dtype=dtype)
    result = flash_attention(q, k, v)
    assert isinstance(result, tuple) and len(result) == 2
    out, lse = result
    assert out.shape == (B, NQ, H, D) and out.dtype == dtype and out.device == q.device
    assert lse.shape == (B, H, NQ) and lse.dtype == torch.float32 and lse.device == q.device
    assert len(launches) == 1
    assert_close_to_reference(q, k, v, out, lse)


def test_given_buffers_are_written_in_place_and_returned(device):
    q, k, v = tensors(device, dtype=torch.float32)
    expected_out, expected_lse = flash_attention(q, k, v, causal=True)
    out = torch.full(q.shape, SENTINEL, dtype=q.dtype, device=device)
    lse = torch.full((B, H, NQ), SENTINEL, dtype=torch.float32, device=device)
    got_out, got_lse = flash_attention(q, k, v, causal=True, out=out, lse_out=lse)
    assert got_out is out and got_lse is lse
    assert torch.equal(out, expected_out) and torch.equal(lse, expected_lse)


def test_given_buffers_are_returned_as_is_when_inputs_require_grad(device):
    q, k, v = tensors(device, dtype=torch.float32)
    out = torch.full(q.shape, SENTINEL, dtype=q.dtype, device=device)
    lse = torch.full((B, H, NQ), SENTINEL, dtype=torch.float32, device=device)
    got_out, got_lse = flash_attention(q.requires_grad_(True), k, v, out=out, lse_out=lse)
    assert not (out == SENTINEL).any() and not (lse == SENTINEL).any()  # written in place
    assert got_out is out and got_lse is lse


def test_strided_buffers_are_written_in_place_without_touching_the_rest(device):
    """out and lse_out may have any strides: here views into larger sentinel buffers."""
    q, k, v = tensors(device, dtype=torch.float32)
    expected_out, expected_lse = flash_attention(q, k, v)
    out_storage = torch.full((B, H, NQ + 2, D + 3), SENTINEL, device=device)
    out = out_storage[:, :, 1 : NQ + 1, :D].transpose(1, 2)  # (B, NQ, H, D), heads-first, padded
    lse_storage = torch.full((B, NQ, H + 1), SENTINEL, device=device)
    lse = lse_storage[:, :, :H].transpose(1, 2)  # (B, H, NQ), non-contiguous
    got_out, got_lse = flash_attention(q, k, v, out=out, lse_out=lse)
    assert got_out is out and got_lse is lse
    assert torch.equal(out, expected_out) and torch.equal(lse, expected_lse)
    inside = torch.zeros_like(out_storage, dtype=torch.bool)
    inside[:, :, 1 : NQ + 1, :D] = True
    assert (out_storage[~inside] == SENTINEL).all(), "out padding was written"
    assert (lse_storage[:, :, H] == SENTINEL).all(), "lse_out padding was written"


@pytest.mark.parametrize(
    "nq, nk, causal",
    [(1, 1, False), (1, 1, True), (1, 6, False), (1, 6, True), (6, 1, False), (6, 1, True)],
)
def test_single_query_or_single_key(nq, nk, causal, device):
    q, k, v = tensors(device, nq=nq, nk=nk, dtype=torch.float32)
    out, lse = flash_attention(q, k, v, causal=causal)
    assert out.shape == (B, nq, H, D) and lse.shape == (B, H, nq)
    assert_close_to_reference(q, k, v, out, lse, causal=causal)
    if nk == 1 and not causal:
        # one key: the output is its value (query head h reads kv head h // 2)
        expected = v[:, :1].repeat_interleave(H // HKV, dim=2).expand(B, nq, H, D)
        torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("causal, window", [(False, (-1, -1)), (True, (-1, -1)), (False, (2, 1))])
def test_no_keys_gives_zero_output_and_minus_infinity_lse(causal, window, device):
    q, k, v = tensors(device, nk=0)
    out = torch.full(q.shape, SENTINEL, dtype=q.dtype, device=device)
    lse = torch.full((B, H, NQ), SENTINEL, device=device)
    flash_attention(q, k, v, causal=causal, window=window, out=out, lse_out=lse)
    assert (out == 0).all()
    assert (lse == -math.inf).all()


def test_rows_without_keys_are_zero_with_minus_infinity_lse(device):
    """Nq=6, Nk=2 causal: queries 0..3 see nothing."""
    q, k, v = tensors(device, nq=6, nk=2, dtype=torch.float32)
    out, lse = flash_attention(q, k, v, causal=True)
    assert (out[:, :4] == 0).all() and (lse[:, :, :4] == -math.inf).all()
    assert torch.isfinite(lse[:, :, 4:]).all()
    assert_close_to_reference(q, k, v, out, lse, causal=True)


@pytest.mark.parametrize("b, nq, h, hkv", [(0, NQ, H, HKV), (B, 0, H, HKV), (B, NQ, 0, 1)])
def test_empty_problems_return_empty_results(b, nq, h, hkv, device):
    q, k, v = tensors(device, b=b, nq=nq, h=h, hkv=hkv)
    out, lse = flash_attention(q, k, v, causal=True)
    assert out.shape == (b, nq, h, D) and out.dtype == q.dtype
    assert lse.shape == (b, h, nq) and lse.dtype == torch.float32


@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_gradient_reaches_each_input_alone(which, device):
    """Gradients flow to whichever input requires them, in its shape and dtype (their values
    are the property suite's business)."""
    q, k, v = tensors(device, dtype=torch.float32)
    inputs = dict(q=q, k=k, v=v)
    inputs[which].requires_grad_(True)
    out, lse = flash_attention(q, k, v)
    assert out.requires_grad and lse.requires_grad
    (out.sum() + lse.sum()).backward()
    grad = inputs[which].grad
    assert grad.shape == inputs[which].shape and grad.dtype == inputs[which].dtype
    assert torch.isfinite(grad).all()


def test_packed_call_returns_documented_shapes(device, launches):
    """Generous max_seqlen_* and strided (non-contiguous) offsets are accepted."""
    args = packed(device, max_seqlen_q=9, max_seqlen_k=4,
                  cu_seqlens_q=offsets([0, 7, 2, 1, 2, 0, 5, 3], device)[::2])
    q, k, v = args.pop("q"), args.pop("k"), args.pop("v")
    out, lse = flash_attention(q, k, v, causal=True, **args)
    assert out.shape == (TQ, H, D) and out.dtype == q.dtype and lse.shape == (H, TQ) and lse.dtype == torch.float32
    assert len(launches) == 1
    assert (out[:2, :] != 0).any() and (lse[:, 2:] == -math.inf).all()  # the third sequence has no keys


def test_forward_under_requires_grad_matches_the_plain_call(device):
    q, k, v = tensors(device, dtype=torch.float32)
    plain_out, plain_lse = flash_attention(q, k, v, window=(1, 1))
    out, lse = flash_attention(q.clone().requires_grad_(True), k, v, window=(1, 1))
    assert torch.equal(out.detach(), plain_out) and torch.equal(lse.detach(), plain_lse)
