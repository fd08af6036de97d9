"""Unit tests of the adapters of torch's kernels (flashcheck.peers.sdpa, flashcheck.peers.flex)
and of the registry (flashcheck.peers): convention translation, feature declarations, resolve().

The peers are compared with a float64 attention written here, independently of
flashcheck.oracle.reference, so that an error in either shows up as a disagreement.
"""
from __future__ import annotations

import inspect
import math
import subprocess
import sys

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from flashcheck import protocol
from flashcheck.cases import sizes as case_sizes
from flashcheck.cases.case import Case
from flashcheck.engine import property_cases
from flashcheck.peers import REGISTRY, common, resolve, sdpa, sdpa_call
from flashcheck.properties import PROPERTIES
from flashcheck.protocol import DEFAULT_FEATURES, DTYPE_NAMES, PROTOCOL_FEATURES, features_of

TORCH_PEERS = ["sdpa-math", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "flex"]
CPU_PEERS = ["sdpa-math", "flex"]
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")


def allowed_keys(nq, nk, causal, window, mask):
    """Bool broadcastable to (B, H, nq, nk), written from the protocol text."""
    left, right = window
    if causal:
        right = 0
    i = torch.arange(nq)[:, None]
    j = torch.arange(nk)[None, :]
    diag = i + nk - nq
    allowed = torch.ones(nq, nk, dtype=torch.bool)
    if left >= 0:
        allowed &= j >= diag - left
    if right >= 0:
        allowed &= j <= diag + right
    return allowed if mask is None else allowed & mask.cpu()


def reference(q, k, v, *, causal=False, window=(-1, -1), attn_mask=None, softmax_scale=None):
    """Float64 attention in protocol layout; differentiable, with zero gradient through empty rows."""
    b, nq, h, d = q.shape
    nk, hkv = k.shape[1], k.shape[2]
    q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))
    k = k.repeat_interleave(h // hkv, dim=1)
    v = v.repeat_interleave(h // hkv, dim=1)
    scale = 1 / math.sqrt(d) if softmax_scale is None else softmax_scale
    allowed = allowed_keys(nq, nk, causal, window, attn_mask).to(q.device).expand(b, h, nq, nk)
    row_has_key = allowed.any(-1, keepdim=True)
    scores = (q @ k.transpose(-1, -2) * scale).masked_fill(~allowed, -math.inf)
    scores = scores.masked_fill(~row_has_key, 0.0)  # keeps softmax finite; rows zeroed below
    probs = torch.softmax(scores, -1).masked_fill(~allowed, 0.0)
    lse = torch.logsumexp(scores, -1).masked_fill(~row_has_key[..., 0], -math.inf)
    return (probs @ v).transpose(1, 2), lse


def make_inputs(b, nq, nk, h, hkv, d, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, n, heads, d, generator=g) for n, heads in ((nq, h), (nk, hkv), (nk, hkv)))
    return tuple(t.to(device=device, dtype=dtype) for t in (q, k, v))


def random_mask(b, nq, nk, seed=1, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(b, 1, nq, nk, generator=g) > 0.3).to(device)


def assert_lse_close(lse, expected, atol):
    lse, expected = lse.double().cpu(), expected.double().cpu()
    assert lse.dtype == torch.float64 and lse.shape == expected.shape
    assert torch.equal(torch.isneginf(lse), torch.isneginf(expected)), "-inf rows differ"
    finite = torch.isfinite(expected)
    torch.testing.assert_close(lse[finite], expected[finite], atol=atol, rtol=0)


# (b, nq, nk, h, hkv, d, causal, window, with_mask)
CASES = [
    (2, 5, 9, 4, 4, 16, False, (-1, -1), False),
    (2, 5, 9, 6, 2, 16, True, (-1, -1), False),  # Nq < Nk, GQA ratio 3
    (1, 9, 5, 4, 2, 8, True, (-1, -1), False),  # Nq > Nk: rows 0..3 see no key
    (2, 7, 11, 4, 2, 16, False, (2, 1), False),  # window, GQA ratio 2
    (2, 11, 7, 6, 2, 8, True, (2, -1), True),  # causal + left window + mask, Nq > Nk
    (1, 6, 6, 2, 1, 16, False, (-1, -1), True),  # mask only, MQA
]
CASE_IDS = [
    f"nq{c[1]}-nk{c[2]}-h{c[3]}/{c[4]}-{'causal' if c[6] else 'full'}-w{c[7]}{'-mask' if c[8] else ''}"
    for c in CASES
]


# ------------------------------------------------------------- declarations


def test_registry_holds_the_named_peers():
    assert {"flash", *TORCH_PEERS} <= set(REGISTRY)


def test_importing_the_registry_imports_neither_triton_nor_the_kernel():
    code = (
        "import sys, flashcheck.peers as a; a.REGISTRY['sdpa-math'](); a.REGISTRY['flex']();"
        "print('triton' in sys.modules, 'flashcheck.kernels' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.parametrize("name", TORCH_PEERS)
def test_adapter_declares_name_devices_and_features(name):
    impl = resolve(name)
    assert impl.name == name
    assert impl.device_kinds <= {"cpu", "cuda"} and "cuda" in impl.device_kinds
    assert impl.flashcheck_features <= PROTOCOL_FEATURES | DTYPE_NAMES
    assert impl.flashcheck_features & DTYPE_NAMES, "dtype names must always be listed"
    assert ("varlen" in impl.flashcheck_features) == (impl.name in ("sdpa-math", "flex"))
    for kind in impl.device_kinds:
        assert features_of(impl, kind) <= impl.flashcheck_features


@pytest.mark.parametrize("name", TORCH_PEERS)
def test_adapter_has_exactly_the_protocol_signature(name):
    expected = ["q", "k", "v", "causal", "window", "softmax_scale", "attn_mask",
                "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k"]
    params = inspect.signature(resolve(name)).parameters
    assert list(params) == expected
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in expected[3:])
    assert params["causal"].default is False and params["window"].default == (-1, -1)
    assert all(params[p].default is None for p in expected[5:])


def test_declared_features_per_peer():
    assert features_of(resolve("sdpa-math"), "cpu") == {"causal", "window", "gqa", "mask", "varlen", "backward"} | DTYPE_NAMES
    for name in ("sdpa-flash", "sdpa-cudnn"):
        impl = resolve(name)
        assert impl.device_kinds == {"cuda"}
        assert impl.flashcheck_features == {"causal", "gqa", "backward", "lse", "float16", "bfloat16"}
    efficient = resolve("sdpa-efficient")
    assert efficient.flashcheck_features == {"causal", "window", "mask", "gqa", "backward", "lse"} | DTYPE_NAMES
    flex = resolve("flex")
    assert "backward" not in features_of(flex, "cpu") and "backward" in features_of(flex, torch.device("cuda", 0))
    assert {"lse", "mask", "window", "causal", "gqa"} <= features_of(flex, "cpu")
    assert features_of(resolve("sdpa-flash"), "cpu") == frozenset()


def test_features_of_defaults_and_dtype_completion():
    def plain(q, k, v, **kw):
        return None, None

    assert features_of(plain) == DEFAULT_FEATURES
    assert "varlen" not in DEFAULT_FEATURES and DTYPE_NAMES <= DEFAULT_FEATURES
    plain.flashcheck_features = {"causal", "lse"}
    assert features_of(plain) == {"causal", "lse"} | DTYPE_NAMES
    plain.flashcheck_features = {"causal", "float16"}
    assert features_of(plain) == {"causal", "float16"}
    assert features_of(plain, "cuda") == {"causal", "float16"}  # no per-device declaration


@pytest.mark.parametrize("declared, message", [
    ({"empty_row_exact": "x"}, "flashcheck_not_applicable names unknown property 'empty_row_exact' (did you mean "
                               "'empty_rows_exact'?); 'flashcheck list' lists the properties"),
    ({"a": "x", "b": "y"}, "flashcheck_not_applicable names unknown properties 'a', 'b'"),
    ({"empty_rows_exact": ""}, "flashcheck_not_applicable['empty_rows_exact'] must be the reason"),
    ({"empty_rows_exact": None}, "flashcheck_not_applicable['empty_rows_exact'] must be the reason"),
    (["empty_rows_exact"], "flashcheck_not_applicable must be a mapping from property name to the reason"),
    ("empty_rows_exact", "flashcheck_not_applicable must be a mapping from property name to the reason"),
], ids=["typo", "two-unknown", "empty-reason", "no-reason", "list", "string"])
def test_a_not_applicable_declaration_is_checked_when_the_implementation_is_loaded(declared, message):
    def attention(q, k, v, **kw):
        return None, None

    attention.flashcheck_not_applicable = declared
    with pytest.raises(ValueError) as raised:
        protocol.check_declaration(attention)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_declared_property_and_only_it_is_not_applicable_with_the_declared_reason():
    def attention(q, k, v, **kw):
        return None, None

    attention.flashcheck_not_applicable = {"deterministic": "  the kernel documents\n  no such guarantee "}
    protocol.check_declaration(attention)
    assert protocol.not_applicable(attention) == {"deterministic": "the kernel documents no such guarantee"}
    reasons = {name: property_cases.not_applicable_because(prop, attention, "cpu") for name, prop in PROPERTIES.items()}
    assert reasons["deterministic"] == f"{property_cases.DECLARED}: the kernel documents no such guarantee"
    assert property_cases.declared_not_applicable(PROPERTIES["deterministic"], attention) == reasons["deterministic"]
    declared = [name for name, reason in reasons.items() if reason and property_cases.DECLARED in reason]
    assert declared == ["deterministic"], "only the property it names"
    assert reasons["out_matches_reference"] is None
    # A feature that excludes the property is reported first: it holds whatever is declared.
    attention.flashcheck_not_applicable = {"grads_match_reference": "no backward"}
    attention.flashcheck_features = {"lse"}
    assert property_cases.not_applicable_because(PROPERTIES["grads_match_reference"], attention) == "needs the feature backward"


# ------------------------------------------------------------- resolve


@pytest.mark.parametrize("name", TORCH_PEERS)
def test_resolve_registry_name(name):
    assert resolve(name).name == name


def test_resolve_module_attr():
    assert resolve("math:sqrt") is math.sqrt
    assert resolve("flashcheck.protocol:features_of") is features_of
    public_sdpa = torch.nn.functional.scaled_dot_product_attention
    assert resolve("torch.nn.functional:scaled_dot_product_attention") is public_sdpa
    assert resolve("flashcheck.peers.common:Peer.__call__") is common.Peer.__call__


def test_resolve_flash_returns_the_project_kernel():
    kernels = pytest.importorskip("flashcheck.kernels")
    assert resolve("flash") is kernels.flash_attention


@pytest.mark.parametrize(
    "spec, words",
    [
        ("no-such-peer", ["unknown", "sdpa-math", "flex"]),
        ("", ["non-empty"]),
        ("flashcheck_no_such_module:f", ["cannot import"]),
        ("math:no_such_function", ["no attribute"]),
        ("math:pi", ["not a callable"]),
        (":sqrt", ["module:attr"]),
        ("math:", ["module:attr"]),
    ],
)
def test_resolve_rejects_bad_specs(spec, words):
    with pytest.raises(ValueError) as error:
        resolve(spec)
    assert all(word in str(error.value) for word in words), str(error.value)


# ------------------------------------------------------------- CPU peers vs float64


@pytest.mark.parametrize("name", CPU_PEERS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_cpu_peer_matches_float64(name, case):
    b, nq, nk, h, hkv, d, causal, window, with_mask = case
    q, k, v = make_inputs(b, nq, nk, h, hkv, d)
    kwargs = dict(causal=causal, window=window, attn_mask=random_mask(b, nq, nk) if with_mask else None)
    out, lse = resolve(name)(q, k, v, **kwargs)
    ref_out, ref_lse = reference(q, k, v, **kwargs)
    assert out.shape == q.shape and out.dtype == q.dtype
    # Empty rows are compared too: both peers give exactly 0 there on this torch.
    torch.testing.assert_close(out.double(), ref_out, atol=2e-6, rtol=0)
    if "lse" in resolve(name).flashcheck_features:
        assert lse.dtype == torch.float32 and lse.shape == (b, h, nq)
        assert_lse_close(lse, ref_lse, atol=2e-6)
    else:
        assert lse is None


@pytest.mark.parametrize("name", CPU_PEERS)
def test_cpu_peer_softmax_scale_and_half_dtypes(name):
    q, k, v = make_inputs(1, 6, 10, 4, 2, 16, seed=3)
    ref_out, ref_lse = reference(q, k, v, causal=True, softmax_scale=0.3)
    for dtype in (torch.bfloat16, torch.float16):
        out, lse = resolve(name)(q.to(dtype), k.to(dtype), v.to(dtype), causal=True, softmax_scale=0.3)
        assert out.dtype == dtype
        torch.testing.assert_close(out.double(), ref_out, atol=3e-2, rtol=0)
        if lse is not None:
            assert lse.dtype == torch.float32
            assert_lse_close(lse, ref_lse, atol=3e-2)


def test_flex_lse_is_natural_log():
    # Large logits make ln and log2 differ by far more than rounding.
    q, k, v = make_inputs(1, 4, 8, 2, 2, 16, seed=5)
    _, lse = resolve("flex")(q * 4, k, v)
    _, natural = reference(q * 4, k, v)
    torch.testing.assert_close(lse.double(), natural, atol=1e-5, rtol=0)
    assert (lse.double() - natural / math.log(2)).abs().max() > 0.1


def test_sdpa_math_gradients_match_float64_including_empty_rows():
    q, k, v = (t.requires_grad_() for t in make_inputs(2, 9, 5, 4, 2, 8, seed=7))
    kwargs = dict(causal=True, window=(3, -1), attn_mask=random_mask(2, 9, 5, seed=8))
    out, _ = resolve("sdpa-math")(q, k, v, **kwargs)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(9))
    got = torch.autograd.grad(out, (q, k, v), grad)
    ref_out, _ = reference(q, k, v, **kwargs)
    want = torch.autograd.grad(ref_out, (q, k, v), grad.double())
    for name, g, w in zip("qkv", got, want):
        torch.testing.assert_close(g.double(), w.double(), atol=1e-5, rtol=0, msg=lambda m, n=name: f"d{n}: {m}")


# ------------------------------------------------------------- refusals and validation


def test_incomplete_varlen_arguments_are_rejected_by_name():
    """Packed input needs all four arguments and 3-D tensors; a partial set is an error
    naming what is wrong (adapters without "varlen" refuse it: tests/test_adapters_varlen.py)."""
    q, k, v = make_inputs(1, 4, 4, 2, 2, 8)
    cu = torch.tensor([0, 4], dtype=torch.int32)
    for name in CPU_PEERS:
        for arg, value in [("cu_seqlens_q", cu), ("cu_seqlens_k", cu), ("max_seqlen_q", 4), ("max_seqlen_k", 4)]:
            with pytest.raises((TypeError, ValueError), match="q, k, v|cu_seqlens"):
                resolve(name)(q, k, v, **{arg: value})
            with pytest.raises((TypeError, ValueError), match="cu_seqlens|max_seqlen"):
                resolve(name)(q[0], k[0], v[0], **{arg: value})


def test_flex_refuses_backward_on_cpu():
    q, k, v = make_inputs(1, 4, 4, 2, 2, 8)
    with pytest.raises(NotImplementedError, match="backward"):
        resolve("flex")(q.requires_grad_(), k, v)
    with torch.no_grad():
        resolve("flex")(q, k, v)  # no gradient asked for: runs


@pytest.mark.parametrize("packed", [False, True], ids=["dense", "packed"])
@pytest.mark.parametrize("nq, nk, reason", [(4, 0, "no keys"), (0, 4, "no queries")], ids=["no-keys", "no-queries"])
def test_flex_declines_calls_with_an_empty_axis(packed, nq, nk, reason):
    """flex's block mask cannot be built over an empty key or query axis, and without one flex
    returns no lse over empty queries: declined, not failed (a packed sequence called alone had
    no query in a campaign)."""
    q, k, v = make_inputs(1, nq, nk, 2, 1, 8)
    kwargs = {}
    if packed:
        q, k, v = q[0], k[0], v[0]
        kwargs = dict(cu_seqlens_q=torch.tensor([0, nq], dtype=torch.int32),
                      cu_seqlens_k=torch.tensor([0, nk], dtype=torch.int32), max_seqlen_q=nq, max_seqlen_k=nk)
    for band in ({"causal": True}, {}):
        with pytest.raises(NotImplementedError, match=reason):
            resolve("flex")(q, k, v, **band, **kwargs)


def test_flex_s_float16_range_divergence_covers_a_campaign_case_on_the_gradient_properties_own_inputs():
    known = resolve("flex").flashcheck_known_divergences
    # dK -inf where float64 gives -617.0 on an H200: exact |dS| 8.8e4, a single query head's dK 7.0e5.
    overflowing = Case.from_spec("batch=3 seqlen_q=127 seqlen_k=127 heads=2 kv_heads=1 head_dim=115 dtype=float16 "
                                 "causal=False window=-1,-1 softmax_scale=None layout=mixed values=outliers seed=16442")
    for name in ("grads_match_reference", "gqa_grads_match_repeated_kv"):
        assert known[name].explains(overflowing), name
    assert not known["grads_match_reference"].explains(overflowing.replace(values="normal"))
    assert not known["grads_match_reference"].explains(overflowing.replace(dtype="bfloat16"))
    assert "out_matches_reference" not in known


def test_flex_s_domain_holds_every_length_from_one_and_float32_head_dims_to_128_on_cuda():
    from flashcheck.peers import flex

    on_cpu, on_cuda = (protocol.case_domain_of(flex.flex(), kind) for kind in ("cpu", "cuda"))
    for domain in (on_cpu, on_cuda):
        assert domain.outside_because(Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 kv_heads=1 head_dim=32 "
                                                     "dtype=float32 seed=0 seqlens=0:1/4:3"))
    assert on_cuda.outside_because(Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 kv_heads=1 head_dim=136 "
                                                  "dtype=float32 seed=0"))
    assert on_cuda.outside_because(Case.from_spec("batch=1 seqlen_q=4 seqlen_k=4 heads=1 kv_heads=1 head_dim=136 "
                                                  "dtype=float16 seed=0")) is None


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-efficient", "sdpa-cudnn"])
def test_cuda_only_peers_refuse_cpu_tensors(name):
    q, k, v = make_inputs(1, 4, 4, 2, 2, 8, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="cuda"):
        resolve(name)(q, k, v)


def _as_cpu_adapter(name):
    """The peer's CUDA declaration on a CPU stand-in, to test the refusals without a GPU."""
    impl = resolve(name)
    return common.Peer(name, common.TORCH, {"cpu": features_of(impl, "cuda")}, lambda module, q, k, v, req: (q, None))


def _request(batch, nq, nk, heads, kv_heads, scale, causal, left, right, head_dim=8) -> common.Request:
    """A dense request as :meth:`flashcheck.peers.common.Peer.request` validates it (float16, CPU)."""
    return common.Request(batch, nq, nk, heads, kv_heads, head_dim, torch.float16, torch.device("cpu"), scale,
                          causal, left, right)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-cudnn"])
def test_flash_and_cudnn_declarations_refuse_what_they_cannot_express(name):
    impl = _as_cpu_adapter(name)
    q, k, v = make_inputs(1, 4, 4, 2, 2, 8, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="window"):
        impl(q, k, v, window=(2, 1))
    with pytest.raises(NotImplementedError, match="window"):
        impl(q, k, v, causal=True, window=(2, 0))
    with pytest.raises(NotImplementedError, match="attn_mask"):
        impl(q, k, v, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="float32"):
        impl(q.float(), k.float(), v.float())
    impl(q, k, v, causal=True, window=(-1, 0))  # causal spelled as a window is still causal
    impl(q, k[:, :, :1], v[:, :, :1])  # MQA is declared


@pytest.mark.parametrize("run", [sdpa._run_sdpa_flash, sdpa._run_sdpa_cudnn])
def test_flash_and_cudnn_refuse_non_square_causal_before_calling_torch(run):
    q, k, v = make_inputs(1, 4, 6, 2, 2, 8, dtype=torch.float16)
    request = _request(1, 4, 6, 2, 2, 0.35, True, -1, 0)
    with pytest.raises(NotImplementedError, match="Nq != Nk"):
        run(torch, q, k, v, request)


@pytest.mark.parametrize("name", ["sdpa-flash", "sdpa-cudnn"])
@pytest.mark.parametrize("size", ["interpreter", "gpu"])
def test_what_flash_and_cudnn_declare_not_applicable_draws_only_cases_they_decline(name, size):
    """Their declaration (flashcheck_not_applicable) hides nothing that could run: every case the
    two properties draw inside their CUDA features has rows without keys only through causal
    with Nq > Nk, which the adapter declines before calling torch."""
    impl = resolve(name)
    declared = protocol.not_applicable(impl)
    assert set(declared) == {"empty_rows_exact", "empty_rows_get_zero_dq"}
    for prop_name in declared:
        strategy = property_cases.cases_for(PROPERTIES[prop_name], impl, "cuda", case_sizes.choose(size))

        @settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(strategy)
        def declined(case):
            assert case.mask.is_none and not case.varlen and case.causal
            left, right = case.band
            request = _request(case.batch, case.seqlen_q, case.seqlen_k, case.heads, case.kv_heads, 1.0,
                               case.causal, left, right)
            with pytest.raises(NotImplementedError, match="Nq != Nk"):
                sdpa._square_causal(name, request)

        declined()


@pytest.mark.parametrize("name", ["sdpa-math", "sdpa-efficient", "flex", "flash"])
def test_the_other_torch_adapters_declare_nothing_not_applicable(name):
    # sdpa-efficient gets rows without keys wrong (lse 0), which is a known divergence, not a
    # documented limit.
    assert protocol.not_applicable(resolve(name)) == {}


@pytest.mark.parametrize("name, declared", [
    ("sdpa-flash", "negative softmax_scale"), ("sdpa-cudnn", "negative softmax_scale"),
    ("sdpa-efficient", "lse 0 instead of -inf"),
])
def test_what_a_torch_backend_gets_wrong_is_declared_on_the_cases_it_covers_not_declined(name, declared):
    # Declining what a kernel gets wrong would hide it; a known divergence is still run and reported.
    base = "batch=1 heads=2 kv_heads=1 head_dim=16 dtype=float16 seed=0"
    covered = {"negative softmax_scale": f"seqlen_q=4 seqlen_k=4 {base} softmax_scale=-1.0",
               "lse 0 instead of -inf": f"seqlen_q=6 seqlen_k=3 {base} causal=True"}[declared]
    ordinary = Case.from_spec(f"seqlen_q=4 seqlen_k=6 {base}")
    known = resolve(name).flashcheck_known_divergences["out_matches_reference"]
    assert declared in str(known) and known.explains(Case.from_spec(covered)) and not known.explains(ordinary)


def test_sdpa_math_refuses_nothing_it_declares_and_validates_inputs():
    impl = resolve("sdpa-math")
    q, k, v = make_inputs(1, 4, 4, 4, 2, 8)
    with pytest.raises(ValueError, match="multiple of Hkv"):
        impl(q[:, :, :3], k, v)
    with pytest.raises(TypeError, match="bool"):
        impl(q, k, v, attn_mask=torch.ones(4, 4))
    with pytest.raises(ValueError, match="broadcast"):
        impl(q, k, v, attn_mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="causal"):
        impl(q, k, v, causal=True, window=(2, 1))
    with pytest.raises(ValueError, match="dtypes differ"):
        impl(q, k.double(), v)


def test_additive_bias_is_exact_aligned_and_broadcast():
    from flashcheck.peers import sdpa_public_call

    allowed = allowed_keys(5, 7, False, (2, 1), random_mask(3, 5, 7))
    bias = sdpa_public_call.additive_bias(allowed, torch.float16, 3, 4)
    assert bias.shape == (3, 4, 5, 7) and bias.dtype == torch.float16
    assert bias.stride(-2) % 16 == 0 and bias.stride(1) == 0
    assert torch.equal(bias == 0, allowed.expand(3, 4, 5, 7))
    assert torch.isneginf(bias[~allowed.expand(3, 4, 5, 7)]).all()


def test_kernel_ready_pads_head_dim_and_aligns_storage():
    odd = torch.randn(2, 5, 3, 20, dtype=torch.bfloat16)
    ready = sdpa_call.kernel_ready(odd)
    assert ready.shape == (2, 5, 3, 24) and torch.equal(ready[..., :20], odd) and (ready[..., 20:] == 0).all()
    view = torch.zeros(2, 7, 4, 72, dtype=torch.bfloat16)[:, 1:6, 1:4, 4:68]  # pointer 8 bytes off
    ready = sdpa_call.kernel_ready(view)
    assert torch.equal(ready, view) and ready.is_contiguous() and ready.data_ptr() % 16 == 0
    aligned = torch.randn(2, 5, 3, 64, dtype=torch.float16).transpose(1, 2).contiguous().transpose(1, 2)
    assert sdpa_call.kernel_ready(aligned) is aligned  # heads-first storage is fine as it is


@pytest.mark.parametrize(
    "op", ["_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
           "_scaled_dot_product_cudnn_attention"],
)
def test_private_op_outputs_are_picked_by_schema_name(op):
    packet = getattr(torch.ops.aten, op).default
    names = [r.name for r in packet._schema.returns]
    out, lse = sdpa_call.output_and_lse(packet, list(range(len(names))))
    assert names[out] == "output" and "sumexp" in names[lse]


# ------------------------------------------------------------- CUDA peers


# (b, nq, nk, h, hkv, d, causal, window, with_mask). Rows without any key are left out
# of the comparison: what a peer returns there is the property suite's business.
CUDA_CASES = [
    (2, 128, 128, 4, 4, 64, False, (-1, -1), False),
    (2, 97, 97, 6, 2, 64, True, (-1, -1), False),
    (1, 64, 200, 4, 1, 128, False, (-1, -1), False),
    (2, 77, 150, 4, 2, 64, True, (-1, -1), False),  # non-square causal: efficient, flex, math only
    (2, 150, 77, 4, 2, 64, False, (32, 8), True),  # mask (2, 1, Nq, Nk)
]


def _cuda_case_supported(impl, case, dtype):
    b, nq, nk, h, hkv, d, causal, window, with_mask = case
    feats = features_of(impl, "cuda")
    needs = {common.dtype_name(dtype)}
    needs |= {"causal"} if causal else set()
    needs |= {"window"} if window != (-1, -1) else set()
    needs |= {"mask"} if with_mask else set()
    needs |= {"gqa"} if h != hkv else set()
    square_only = impl.name in ("sdpa-flash", "sdpa-cudnn")
    return needs <= feats and not (square_only and causal and nq != nk)


@needs_cuda
@pytest.mark.parametrize("name", TORCH_PEERS)
@pytest.mark.parametrize("index", range(len(CUDA_CASES)), ids=lambda i: f"case{i}")
def test_cuda_peer_matches_float64(name, index):
    # One dtype per case, cycling through the peer's dtypes: compiled flex pays a
    # compilation (5-60 s) for every variant, so the full product would take many
    # minutes; for the same reason flex is checked here in half precision only.
    impl, case = resolve(name), CUDA_CASES[index]
    candidates = (torch.float16, torch.bfloat16) if name == "flex" else (torch.float16, torch.bfloat16, torch.float32)
    dtypes = [t for t in candidates if common.dtype_name(t) in impl.flashcheck_features]
    dtype = dtypes[index % len(dtypes)]
    if not _cuda_case_supported(impl, case, dtype):
        pytest.skip(f"{name} does not declare what this case needs")
    b, nq, nk, h, hkv, d, causal, window, with_mask = case
    q, k, v = make_inputs(b, nq, nk, h, hkv, d, dtype=dtype, device="cuda")
    mask = random_mask(b, nq, nk, device="cuda") if with_mask else None
    kwargs = dict(causal=causal, window=window, attn_mask=mask)
    try:
        out, lse = impl(q, k, v, **kwargs)
    except NotImplementedError as declined:  # a known divergence the adapter declines
        pytest.skip(str(declined))
    ref_out, ref_lse = reference(q, k, v, **kwargs)
    has_key = torch.isfinite(ref_lse)  # (b, h, nq)
    atol = {torch.float16: 4e-3, torch.bfloat16: 3e-2, torch.float32: 1e-3}[dtype]  # f32: TF32 may be on
    assert out.shape == q.shape and out.dtype == dtype
    torch.testing.assert_close(out.double()[has_key.transpose(1, 2)], ref_out[has_key.transpose(1, 2)],
                               atol=atol, rtol=0)
    if "lse" in impl.flashcheck_features:
        assert lse.dtype == torch.float32 and lse.shape == (b, h, nq)
        lse_atol = 1e-2 if dtype != torch.float32 else 1e-3
        torch.testing.assert_close(lse.double()[has_key], ref_lse[has_key], atol=lse_atol, rtol=0)


@needs_cuda
@pytest.mark.parametrize("name", TORCH_PEERS)
def test_cuda_peer_gradients_match_float64(name):
    impl = resolve(name)
    case = (1, 64, 64, 4, 2, 64, True, (-1, -1), False)
    if not _cuda_case_supported(impl, case, torch.bfloat16):
        pytest.skip(f"{name} does not declare what this case needs")
    q, k, v = (t.requires_grad_() for t in make_inputs(1, 64, 64, 4, 2, 64, dtype=torch.bfloat16, device="cuda"))
    out, _ = impl(q, k, v, causal=True)
    grad = torch.randn_like(out)
    got = torch.autograd.grad(out, (q, k, v), grad)
    ref_out, _ = reference(q, k, v, causal=True)
    want = torch.autograd.grad(ref_out, (q, k, v), grad.double())
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w.double(), atol=6e-2, rtol=0)


@needs_cuda
@pytest.mark.parametrize("name", TORCH_PEERS)
@pytest.mark.parametrize("d", [20, 72])
def test_cuda_peer_accepts_odd_head_dims_and_misaligned_views(name, d):
    impl = resolve(name)
    q, k, v = make_inputs(2, 33, 45, 4, 2, d, dtype=torch.bfloat16, device="cuda")
    storage = torch.full((2, 40, 6, d + 8), float("nan"), dtype=torch.bfloat16, device="cuda")
    view = storage[:, 3:36, 1:5, 4 : 4 + d]  # strided, pointer 8 bytes past alignment
    view.copy_(q)
    out, lse = impl(view, k, v, softmax_scale=0.2)
    ref_out, ref_lse = reference(q, k, v, softmax_scale=0.2)
    torch.testing.assert_close(out.double(), ref_out, atol=3e-2, rtol=0)
    if lse is not None:
        torch.testing.assert_close(lse.double(), ref_lse, atol=3e-2, rtol=0)
