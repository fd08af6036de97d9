"""Tests of flashcheck.cases.strategies (what cases are drawn), flashcheck.cases.sizes and
flashcheck.cases.hypothesis_profiles.

The strategy tests run hypothesis with explicit settings so that they behave the same
under any loaded profile; the reachability tests use ``hypothesis.find`` with a fixed
random seed, so they are deterministic.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import os
import subprocess
import sys
from random import Random

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from flashcheck.cases import compile_classes, hypothesis_profiles, sizes as case_sizes, strategies
from flashcheck.cases.case import LAYOUTS, VALUES, Case
from flashcheck.cases.sizes import CaseSizes, GPU, INTERPRETER

FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
#: For tests that bound how often something is drawn: the same draws on every run, so that a
#: count's bound, checked once, always holds (hypothesis's random draws lean to boundary
#: values, which made such counts fail about once in a hundred runs).
COUNTING = settings(FAST, derandomize=True)

#: Small enough that materialising every drawn case costs little.
TINY = CaseSizes(
    name="tiny", max_batch=2, max_heads=8, max_kv_ratio=8, max_seqlen=24, long_seqlen=24,
    max_head_dim=256, block_sizes=(16,), max_elements=2048,
)


def within(case: Case, sizes: CaseSizes) -> None:
    assert 1 <= case.batch <= sizes.max_batch
    assert 1 <= case.kv_heads <= case.heads <= sizes.max_heads
    assert case.heads % case.kv_heads == 0
    assert case.heads // case.kv_heads <= sizes.max_kv_ratio
    minimum = 0 if case.varlen else 1  # packed sequences may all be empty on a side
    assert minimum <= case.seqlen_q <= sizes.long_seqlen
    assert minimum <= case.seqlen_k <= sizes.long_seqlen
    assert 1 <= case.head_dim <= sizes.max_head_dim
    assert case.batch * case.heads * case.seqlen_q * case.seqlen_k <= sizes.max_elements
    assert case.dtype in sizes.dtypes
    assert case.layout in LAYOUTS and case.values in VALUES
    assert 0 <= case.seed < 2**32
    if case.causal:
        assert case.window[1] in (-1, 0)
    if case.softmax_scale is not None:
        assert case.softmax_scale != 0


def first(strategy, condition, *, examples=3000, shrink=False):
    """A draw of ``strategy`` satisfying ``condition``, deterministically; the simplest one
    with ``shrink`` (slower), else the first found."""
    phases = (Phase.generate, Phase.shrink) if shrink else (Phase.generate,)
    return find(
        strategy, condition,
        settings=settings(max_examples=examples, database=None, deadline=None, phases=phases),
        random=Random(0),
    )


# -- validity ---------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [INTERPRETER, GPU], ids=lambda p: p.name)
def test_drawn_cases_are_valid_and_within_the_sizes(sizes):
    @FAST
    @given(strategies.cases(sizes=sizes))
    def check(case):
        within(case, sizes)
        assert Case.from_spec(case.spec()) == case

    check()


@FAST
@given(strategies.cases(sizes=INTERPRETER))
def test_spec_round_trips(case):
    assert Case.from_spec(case.spec()) == case
    assert Case.from_spec(case.spec()).spec() == case.spec()


@settings(max_examples=25, deadline=None, database=None)
@given(strategies.cases(sizes=TINY))
def test_materialize_is_reproducible(case):
    first_inputs, second_inputs = case.materialize(), case.materialize()
    for a, b in zip(first_inputs, second_inputs):
        assert a.dtype == case.torch_dtype
        assert a.shape == b.shape and a.stride() == b.stride()
        assert torch.equal(a, b)
    q, k, _ = first_inputs
    assert q.shape == case.out_shape
    kv_shape = (case.seqlen_k, case.kv_heads, case.head_dim)
    assert k.shape == (kv_shape if case.varlen else (case.batch, *kv_shape))


# -- features and empty rows ------------------------------------------------------------------


@pytest.mark.parametrize(
    "features",
    [
        set(),
        {"causal"},
        {"window"},
        {"gqa"},
        {"causal", "window", "gqa", "float32"},
        {"bfloat16", "float16", "lse", "backward", "varlen", "mask", "out"},
    ],
    ids=lambda f: "+".join(sorted(f)) or "none",
)
def test_features_are_respected(features):
    named_dtypes = features & {"float16", "bfloat16", "float32"}

    @FAST
    @given(strategies.cases(sizes=INTERPRETER, features=features))
    def check(case):
        within(case, INTERPRETER)
        if "causal" not in features:
            assert not case.causal
        if "window" not in features:
            assert case.window == (-1, -1)
        if "gqa" not in features:
            assert case.kv_heads == case.heads
        if named_dtypes:
            assert case.dtype in named_dtypes
        if "mask" not in features:
            assert case.mask.is_none
        if "varlen" not in features:
            assert not case.varlen

    check()


@pytest.mark.parametrize("features", [None, {"causal"}, {"window"}], ids=str)
@pytest.mark.parametrize("empty_rows", [True, False])
def test_empty_rows_is_respected(empty_rows, features):
    @FAST
    @given(strategies.cases(sizes=INTERPRETER, features=features, empty_rows=empty_rows))
    def check(case):
        within(case, INTERPRETER)
        assert case.has_empty_rows == empty_rows
        if empty_rows and case.mask.is_none and not case.varlen:  # emptied by the band
            assert case.seqlen_q > case.seqlen_k

    check()


def test_empty_rows_without_a_mask_feature_is_rejected():
    with pytest.raises(InvalidArgument, match="causal"):
        strategies.cases(features={"gqa"}, empty_rows=True)


@FAST
@given(st.data(), st.integers(1, 40), st.integers(1, 40))
def test_empty_row_windows_empty_a_row(data, a, b):
    seqlen_q, seqlen_k = max(a, b) + 1, min(a, b)
    causal, window = data.draw(strategies.empty_row_windows(seqlen_q, seqlen_k))
    case = Case(seqlen_q=seqlen_q, seqlen_k=seqlen_k, causal=causal, window=window)
    assert case.has_empty_rows


def test_empty_row_windows_needs_more_queries_than_keys():
    with pytest.raises(InvalidArgument, match="bottom-right"):
        strategies.empty_row_windows(8, 8)


@FAST
@given(st.data(), st.integers(0, 10), st.booleans(), st.booleans())
def test_windows_are_valid_and_respect_min_right(data, min_right, allow_causal, allow_window):
    causal, window = data.draw(
        strategies.windows(allow_causal=allow_causal, allow_window=allow_window, min_right=min_right)
    )
    Case(causal=causal, window=window)  # validates the pair
    if not allow_causal or min_right > 0:
        assert not causal
    if not allow_window:
        assert window == (-1, -1)
    if window[1] != -1:
        assert window[1] >= min_right


# -- special values are reachable ---------------------------------------------------------------


@pytest.mark.parametrize("length", strategies.special_seqlens(INTERPRETER))
def test_special_lengths_are_reachable(length):
    assert first(strategies.seqlens(sizes=INTERPRETER), lambda n: n == length) == length


def test_special_lengths_include_block_neighbours():
    specials = set(strategies.special_seqlens(GPU))
    assert {1, 31, 32, 33, 63, 64, 65, 127, 128, 129} <= specials
    assert {1, 15, 16, 17, 31, 32, 33} <= set(strategies.special_seqlens(INTERPRETER))


@pytest.mark.parametrize(
    "description, condition",
    [
        ("length 1 both ways", lambda c: c.seqlen_q == 1 and c.seqlen_k == 1),
        ("Nq = 1 < Nk", lambda c: c.seqlen_q == 1 and c.seqlen_k > 1),
        ("Nq = block + 1 > Nk", lambda c: c.seqlen_q == 17 and c.seqlen_k < 17),
        ("Nq < Nk", lambda c: 1 < c.seqlen_q < c.seqlen_k),
        ("head dim 59", lambda c: c.head_dim == 59),
        ("head dim 1", lambda c: c.head_dim == 1),
        ("head dim 111", lambda c: c.head_dim == 111),
        ("MQA ratio 7", lambda c: c.heads == 7 and c.kv_heads == 1),
        ("GQA ratio 2 with several KV heads", lambda c: c.kv_heads > 1 and c.heads == 2 * c.kv_heads),
        ("batch 2", lambda c: c.batch == 2),
        ("causal with Nq > Nk", lambda c: c.causal and c.seqlen_q > c.seqlen_k),
        ("sliding window (1, 2)", lambda c: not c.causal and c.window == (1, 2)),
        ("left bound only", lambda c: c.window[0] >= 0 and c.window[1] == -1 and not c.causal),
        ("causal sliding window", lambda c: c.causal and c.window[0] >= 0),
        ("empty rows", lambda c: c.has_empty_rows),
        ("negative scale", lambda c: c.softmax_scale is not None and c.softmax_scale < 0),
        ("custom positive scale", lambda c: c.softmax_scale is not None and c.softmax_scale > 0),
        ("padded layout, large logits", lambda c: c.layout == "padded" and c.values == "large-logits"),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_interesting_cases_are_reachable(description, condition):
    found = first(strategies.cases(sizes=INTERPRETER), condition)
    assert condition(found), description


def test_gpu_profile_reaches_long_lengths_and_gqa_ratio_7_with_several_kv_heads():
    long = first(strategies.cases(sizes=GPU), lambda c: c.seqlen_q > GPU.max_seqlen)
    within(long, GPU)
    grouped = first(strategies.cases(sizes=GPU), lambda c: c.kv_heads >= 2 and c.heads == 7 * c.kv_heads)
    assert grouped.heads == 14


def test_shrinking_ends_at_the_simplest_case():
    simplest = first(strategies.cases(sizes=INTERPRETER), lambda c: True, shrink=True)
    assert simplest == Case(
        batch=1, seqlen_q=1, seqlen_k=1, heads=1, kv_heads=1, head_dim=16, dtype="float16",
        causal=False, window=(-1, -1), softmax_scale=None, layout="contiguous", values="normal", seed=0,
    )


# -- argument validation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: strategies.seqlens(sizes=INTERPRETER, min_value=5, max_value=3), "max_value"),
        (lambda: strategies.seqlens(sizes=INTERPRETER, min_value=-1), "min_value"),
        (lambda: strategies.head_dims(sizes=INTERPRETER, max_value=0), "max_value"),
        (lambda: strategies.gqa_heads(sizes=INTERPRETER, max_heads=0), "max_heads"),
        (lambda: strategies.windows(max_bound=-2), "max_bound"),
        (lambda: strategies.windows(allow_causal="yes"), "allow_causal"),
        (lambda: strategies.cases(sizes="tpu"), "tpu"),
        (lambda: strategies.cases(sizes=INTERPRETER, features={"casual"}), "casual"),
        (lambda: strategies.cases(sizes=INTERPRETER, features="causal"), "features"),
        (lambda: strategies.cases(sizes=INTERPRETER, dtypes=["float64"]), "dtypes"),
        (lambda: strategies.cases(sizes=INTERPRETER, dtypes=["float16"], features={"float32"}), "float32"),
        (lambda: strategies.cases(sizes=INTERPRETER, layouts=[]), "layouts"),
        (lambda: strategies.cases(sizes=INTERPRETER, values=["gaussian"]), "values"),
        (lambda: strategies.cases(sizes=INTERPRETER, empty_rows=1), "empty_rows"),
    ],
)
def test_bad_arguments_raise_invalid_argument(build, message):
    with pytest.raises(InvalidArgument, match=message):
        build()


def test_overrides_are_drawn_from():
    @FAST
    @given(strategies.cases(sizes=INTERPRETER, dtypes=["float32"], layouts=["padded"], values=["constant"]))
    def check(case):
        assert (case.dtype, case.layout, case.values) == ("float32", "padded", "constant")

    check()


# -- case sizes -------------------------------------------------------------------------------


def test_case_sizes_by_name():
    assert case_sizes.choose("interpreter") is INTERPRETER
    assert case_sizes.choose("GPU") is GPU
    assert case_sizes.choose(TINY) is TINY
    with pytest.raises(ValueError, match="unknown"):
        case_sizes.choose("tpu")


def test_the_case_sizes_for_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert case_sizes.choose(None) is INTERPRETER


def test_the_case_sizes_allow_gqa_ratio_7_and_head_dim_256():
    for sizes in (INTERPRETER, GPU):
        assert sizes.max_heads >= 7 and sizes.max_kv_ratio >= 7
        assert sizes.max_head_dim == 256
        assert 7 * sizes.max_seqlen**2 <= sizes.max_elements
    assert INTERPRETER.block_sizes == (16, 32) and GPU.block_sizes == (32, 64, 128)


def test_case_sizes_validate():
    with pytest.raises(ValueError, match="long_seqlen"):
        CaseSizes(name="x", max_batch=1, max_heads=1, max_kv_ratio=1, max_seqlen=8, long_seqlen=4,
                    max_head_dim=16, block_sizes=(16,), max_elements=64)
    with pytest.raises(ValueError, match="dtypes"):
        CaseSizes(name="x", max_batch=1, max_heads=1, max_kv_ratio=1, max_seqlen=8, long_seqlen=8,
                    max_head_dim=16, block_sizes=(16,), max_elements=64, dtypes=("float64",))


# -- hypothesis profiles ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, environ, expected",
    [
        ("gpu", {"CI": "1", hypothesis_profiles.PROFILE_VARIABLE: "fuzz"}, "gpu"),
        (None, {"CI": "1", hypothesis_profiles.PROFILE_VARIABLE: "fuzz"}, "fuzz"),
        (None, {"CI": "1"}, "ci"),
        (None, {"CI": "false"}, "ci"),  # hypothesis, too, treats any value of CI as CI
        (None, {hypothesis_profiles.PROFILE_VARIABLE: ""}, "dev"),
        (None, {}, "dev"),
    ],
)
def test_hypothesis_profile_choice(name, environ, expected):
    assert hypothesis_profiles.hypothesis_profile_name(name, environ=environ) == expected


# The subprocess loads hypothesis_profiles.py by path: it needs only hypothesis, and importing the
# flashcheck package would import torch, which takes seconds.
_PROBE = r"""
import importlib.util, json, sys
from hypothesis import settings
before = settings.get_current_profile_name()
spec = importlib.util.spec_from_file_location("flashcheck_hypothesis_profiles", sys.argv[1])
hypothesis_profiles = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hypothesis_profiles)
hypothesis_profiles.register_hypothesis_profiles()
after_register = (settings.get_current_profile_name(), settings.default.max_examples)
loaded = hypothesis_profiles.load_hypothesis_profile()
s = settings.default
dev = settings.get_profile("dev")
print(json.dumps({
    "before": before, "after_register": after_register, "loaded": loaded,
    "max_examples": s.max_examples, "derandomize": s.derandomize, "database": repr(s.database),
    "deadline": repr(s.deadline), "print_blob": s.print_blob,
    "suppressed": sorted(h.name for h in s.suppress_health_check),
    "dev_derandomize": dev.derandomize, "dev_print_blob": dev.print_blob,
}))
"""

_CI_VARIABLES = ("CI", "__TOX_ENVIRONMENT_VARIABLE_ORIGINAL_CI", "TF_BUILD", "bamboo.buildKey", "BUILDKITE",
                 "CIRCLECI", "CIRRUS_CI", "CODEBUILD_BUILD_ID", "GITHUB_ACTIONS", "GITLAB_CI",
                 "HEROKU_TEST_RUN_ID", "TEAMCITY_VERSION")


def _probe(**env):
    environ = {k: v for k, v in os.environ.items() if k not in _CI_VARIABLES and k != hypothesis_profiles.PROFILE_VARIABLE}
    environ.update(env)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, hypothesis_profiles.__file__],
        env=environ, capture_output=True, text=True, timeout=60, check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_our_ci_profile_replaces_hypothesis_own_under_ci():
    probe = _probe(CI="1")
    assert probe["before"] == "ci"  # hypothesis loaded its own "ci" profile at import
    assert probe["after_register"] == ["ci", 25]  # registering ours made it active at once
    assert probe["loaded"] == "ci"
    assert probe["max_examples"] == 25
    assert probe["derandomize"] is True
    assert probe["database"] == "None"
    assert probe["deadline"] == "None"
    assert probe["print_blob"] is True
    assert probe["suppressed"] == ["data_too_large", "filter_too_much", "too_slow"]
    # our other profiles do not inherit from whichever profile was active at registration
    assert probe["dev_derandomize"] is False and probe["dev_print_blob"] is False


def test_environment_variable_and_default_profile_choice():
    assert _probe(CI="1", **{hypothesis_profiles.PROFILE_VARIABLE: "gpu"})["max_examples"] == 200
    local = _probe()
    assert (local["before"], local["loaded"], local["max_examples"], local["derandomize"]) == (
        "default", "dev", 50, False,
    )


def test_the_smoke_profile_draws_few_cases_and_does_not_shrink_them():
    # For peers that compile anew for every shape, each shrunk shape would cost a compilation.
    from hypothesis import Phase, settings

    smoke = settings.get_profile("smoke")
    assert smoke.max_examples == 5 and Phase.shrink not in smoke.phases and Phase.generate in smoke.phases
    assert Phase.shrink in settings.get_profile("ci").phases


# -- masks and packed sequences ----------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [dict(mask=True), dict(varlen=True), dict(key_padding=True), dict(mask=True, empty_rows=True),
     dict(varlen=True, empty_rows=True), dict(varlen=True, empty_rows=False), dict(mask=False, varlen=False)],
    ids=str,
)
def test_mask_and_varlen_requests_are_respected(kwargs):
    @FAST
    @given(strategies.cases(sizes=INTERPRETER, **kwargs))
    def check(case):
        within(case, INTERPRETER)
        assert Case.from_spec(case.spec()) == case
        if kwargs.get("mask"):
            assert not case.mask.is_none and not case.varlen
        if kwargs.get("key_padding"):
            assert case.mask.kind == "key-padding" and case.band == (-1, -1)
        if kwargs.get("varlen"):
            assert case.varlen and case.mask.is_none
        if kwargs.get("mask") is False:
            assert case.mask.is_none and not case.varlen
        if "empty_rows" in kwargs:
            assert case.has_empty_rows == kwargs["empty_rows"]

    check()


def test_mask_and_varlen_need_their_features():
    with pytest.raises(InvalidArgument, match="mask"):
        strategies.cases(features={"causal"}, mask=True)
    with pytest.raises(InvalidArgument, match="varlen"):
        strategies.cases(features={"causal"}, varlen=True)
    with pytest.raises(InvalidArgument, match="dense only"):
        strategies.cases(mask=True, varlen=True)


def test_shrinking_ends_without_mask_or_packing():
    simplest = find(strategies.cases(sizes=INTERPRETER), lambda case: True)
    assert simplest.mask.is_none and not simplest.varlen
    assert find(strategies.cases(sizes=INTERPRETER, varlen=True), lambda case: True).seqlens == ((1, 1),)


MASK_AND_VARLEN_REGIONS = {
    "empty mask (density 0)": lambda c: c.mask.kind == "random" and c.mask.density == 0.0,
    "full mask (density 1)": lambda c: c.mask.kind == "random" and c.mask.density == 1.0,
    "block mask": lambda c: c.mask.kind == "blocks",
    "key padding with an empty entry": lambda c: c.mask.kind == "key-padding" and 0 in c.mask.key_lengths,
    "fully masked rows and columns": lambda c: c.mask.rows > 0 and c.mask.cols > 0,
    "a different mask per batch entry": lambda c: c.batch > 1 and c.mask.shape.startswith("B"),
    "mask broadcast over heads": lambda c: c.mask.shape == "B1QK" and c.heads > 1,
    "mask broadcast over queries": lambda c: c.mask.shape == "BH1K",
    "packed with an empty query side": lambda c: c.varlen and any(nq == 0 < nk for nq, nk in c.seqlens),
    "packed with an empty key side": lambda c: c.varlen and any(nk == 0 < nq for nq, nk in c.seqlens),
    "packed length-1 sequence": lambda c: c.varlen and (1, 1) in c.seqlens and len(c.seqlens) > 1,
    "packed, one long among short": lambda c: c.varlen and len(c.seqlens) > 2
    and max(map(max, c.seqlens)) >= 16 and min(map(max, c.seqlens)) <= 3,
    "packed, nq != nk in a sequence": lambda c: c.varlen and any(0 < nq != nk > 0 for nq, nk in c.seqlens),
    "packed causal": lambda c: c.varlen and c.causal and len(c.seqlens) > 1,
}


@pytest.mark.parametrize("condition", MASK_AND_VARLEN_REGIONS.values(), ids=MASK_AND_VARLEN_REGIONS.keys())
def test_mask_and_varlen_regions_are_reachable(condition):
    first(strategies.cases(sizes=INTERPRETER), condition, examples=2000)


# -- compile-aware drawing --------------------------------------------------------------------

_ALL_MODES = ("dense", "mask", "varlen")


def _tile(head_dim: int) -> int:
    return max(16, 1 << (head_dim - 1).bit_length())


@pytest.mark.parametrize("seed", range(4))
def test_compile_classes_combine_every_pair_of_kernel_variant_choices(seed):
    classes = compile_classes.compile_classes(dataclasses.replace(GPU, focus_seed=seed), GPU.dtypes, _ALL_MODES, LAYOUTS)
    rows = [{"dtype": c.dtype, "tile": _tile(c.head_dims[0]), "full": c.head_dims == (_tile(c.head_dims[0]),),
             "mode": c.mode, "negative": c.negative_scale} for c in classes]
    values = {"dtype": set(GPU.dtypes), "tile": {16, 32, 64, 128, 256}, "full": {True, False},
              "mode": set(_ALL_MODES), "negative": {True, False}}
    for a, b in itertools.combinations(values, 2):
        assert {(row[a], row[b]) for row in rows} == set(itertools.product(values[a], values[b])), (a, b)
    assert len(classes) <= 16  # 15 is the least: 5 tiles x 3 dtypes
    assert {c.layout for c in classes} == set(LAYOUTS)
    for c in classes:  # one tile, one residue mod 16, 1 only alone: one compilation
        assert len({_tile(d) for d in c.head_dims}) == 1 and len({d % 16 for d in c.head_dims}) == 1
        assert 1 not in c.head_dims or c.head_dims == (1,)
        assert c.heads % c.kv_heads == 0 and c.heads <= GPU.max_heads


@pytest.mark.parametrize("seed", range(8))
def test_the_first_classes_a_short_run_starts_in_hold_every_dtype_mode_sign_grouping_and_stride_mix(seed):
    # Each worker starts in one class and may stay there for a short budget (a mutant's run, say):
    # three workers reach every dtype, mode and scale sign, groups over several KV heads, the
    # only ones that tell h // group from h % kv_heads, as well as MQA, and the mixed layout with
    # more than one key, the only class where V read with K's strides reads wrong elements.
    first = compile_classes.compile_classes(dataclasses.replace(GPU, focus_seed=seed), GPU.dtypes, _ALL_MODES,
                                            LAYOUTS)[:3]
    assert {c.dtype for c in first} == set(GPU.dtypes) and {c.mode for c in first} == set(_ALL_MODES)
    assert {c.negative_scale for c in first} == {False, True}
    assert any(c.heads > c.kv_heads >= 2 for c in first) and any(c.heads > c.kv_heads == 1 for c in first)
    assert any(c.layout == "mixed" and c.seqlen_k != compile_classes.EXACTLY_ONE for c in first)


def test_other_focus_seeds_pick_other_classes():
    picked = {compile_classes.compile_classes(dataclasses.replace(GPU, focus_seed=seed), GPU.dtypes, _ALL_MODES, LAYOUTS)
              for seed in range(3)}
    assert len(picked) == 3


def _residue(n: int) -> int:
    return compile_classes.EXACTLY_ONE if n == 1 else n % 16


def test_cases_of_a_compile_class_keep_its_choices_and_lengths_residues():
    classes = compile_classes.compile_classes(GPU, GPU.dtypes, _ALL_MODES, LAYOUTS)
    seen = collections.Counter()

    @COUNTING
    @given(strategies.cases(sizes=GPU))
    def check(case):
        within(case, GPU)
        mode = "varlen" if case.varlen else "dense" if case.mask.is_none else "mask"
        matching = [c for c in classes if (c.dtype, c.mode, c.layout, c.heads, c.kv_heads) ==
                    (case.dtype, mode, case.layout, case.heads, case.kv_heads) and case.head_dim in c.head_dims]
        if not matching:
            seen["outside"] += 1  # one case in FOCUS_ESCAPE
            return
        c = matching[0]
        assert (case.softmax_scale is not None and case.softmax_scale < 0) == c.negative_scale
        if c.mask_shape is not None:
            assert case.mask.shape == c.mask_shape
        if not case.varlen:
            seen["pinned" if (_residue(case.seqlen_q), _residue(case.seqlen_k)) == (c.seqlen_q, c.seqlen_k)
                 else "unpinned"] += 1

    check()
    # Lengths stay as drawn only where no length of the residue fits (the sizes' limits).
    assert seen["pinned"] >= 9 * seen["unpinned"], seen
    assert seen["outside"] <= 60 // 8, seen


def test_a_focus_profile_still_draws_cases_outside_its_classes():
    classes = compile_classes.compile_classes(GPU, GPU.dtypes, _ALL_MODES, LAYOUTS)

    def in_a_class(case):
        mode = "varlen" if case.varlen else "dense" if case.mask.is_none else "mask"
        return any((c.dtype, c.mode, c.layout, c.heads, c.kv_heads) == (case.dtype, mode, case.layout, case.heads,
                                                                        case.kv_heads) and case.head_dim in c.head_dims
                   for c in classes)

    outside = first(strategies.cases(sizes=GPU), lambda case: not in_a_class(case))
    within(outside, GPU)


def test_without_focus_no_compile_class_is_drawn():
    # The interpreter's sizes draw as they did before compile-aware drawing existed.
    assert not INTERPRETER.focus and GPU.focus
    assert case_sizes.with_focus_seed(INTERPRETER, 3) is INTERPRETER
    assert case_sizes.with_focus_seed(GPU, 3).focus_seed == 3
    assert case_sizes.with_focus_seed(GPU).focus
    with pytest.raises(ValueError, match="focus_seed"):
        dataclasses.replace(GPU, focus_seed="1")


@pytest.mark.parametrize("start", [0, 1, 2])  # the first three classes: every mode among them
def test_every_property_draws_its_cases_inside_the_class_its_worker_is_in(start):
    # A case outside the class compiles a kernel variant of its own. A property whose filter
    # rejected every case of the class (a band without a mask, asked of a masked class) drew
    # only the one case in FOCUS_ESCAPE that lies outside, and compiled for each.
    from flashcheck import protocol
    from flashcheck.engine import property_cases
    from flashcheck.kernels.interface import flash_attention
    from flashcheck.properties import PROPERTIES

    sizes = dataclasses.replace(GPU, focus_seed=5, focus_classes=1, focus_start=start)
    head_dims = compile_classes.classes_in_use(sizes)[0].head_dims
    features = protocol.features_of(flash_attention, "cuda")
    for prop in PROPERTIES.values():
        if not property_cases.drawable(prop, features):
            continue
        inside = collections.Counter()

        @settings(COUNTING, max_examples=16, suppress_health_check=list(HealthCheck))
        @given(property_cases.case_strategy(prop, features, sizes))
        def draw(case):
            inside[case.head_dim in head_dims] += 1

        draw()
        assert inside[True] >= 0.75 * sum(inside.values()), (prop.name, inside)


def test_focus_classes_keep_the_draws_to_the_first_classes_of_the_catalogue():
    classes = compile_classes.compile_classes(GPU, GPU.dtypes, _ALL_MODES, LAYOUTS)
    narrow = dataclasses.replace(GPU, focus_classes=1)
    first_class, outside = classes[0], collections.Counter()

    @COUNTING
    @given(strategies.cases(sizes=narrow))
    def check(case):
        within(case, narrow)
        if (case.dtype, case.layout, case.heads, case.kv_heads) != (first_class.dtype, first_class.layout,
                                                                      first_class.heads, first_class.kv_heads) \
                or case.head_dim not in first_class.head_dims:
            outside["cases"] += 1  # the escape, one case in FOCUS_ESCAPE

    check()
    assert outside["cases"] <= 60 // 8, outside
    # The catalogue itself does not depend on how much of it is drawn from.
    assert compile_classes.compile_classes(dataclasses.replace(narrow, focus_classes=None), GPU.dtypes, _ALL_MODES,
                                      LAYOUTS) == classes


@pytest.mark.parametrize("start", [1, 5, 15 + 2])
def test_focus_start_draws_from_a_window_of_the_same_catalogue_wrapping_round(start):
    # Fuzz workers of one run share the catalogue and start at classes of their own.
    classes = compile_classes.compile_classes(GPU, GPU.dtypes, _ALL_MODES, LAYOUTS)
    sizes = case_sizes.with_focus_seed(GPU, GPU.focus_seed, start=start)
    window = [classes[(start + i) % len(classes)] for i in range(2)]
    narrow, inside = dataclasses.replace(sizes, focus_classes=2), collections.Counter()

    @COUNTING
    @given(strategies.cases(sizes=narrow))
    def check(case):
        within(case, narrow)
        for c in window:
            if (case.dtype, case.layout, case.heads, case.kv_heads) == (c.dtype, c.layout, c.heads, c.kv_heads) \
                    and case.head_dim in c.head_dims:
                inside[window.index(c)] += 1
                return
        inside["outside"] += 1  # the escape, one case in FOCUS_ESCAPE

    check()
    assert inside[0] and inside[1], inside
    assert inside["outside"] <= 60 // 8, inside
    assert compile_classes.compile_classes(narrow, GPU.dtypes, _ALL_MODES, LAYOUTS) == classes


@pytest.mark.parametrize("value", [-1, True, 1.5])
def test_focus_start_must_be_a_non_negative_int(value):
    with pytest.raises(ValueError, match="focus_start"):
        dataclasses.replace(GPU, focus_start=value)


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_focus_classes_must_be_a_positive_int_or_none(value):
    with pytest.raises(ValueError, match="focus_classes"):
        dataclasses.replace(GPU, focus_classes=value)
