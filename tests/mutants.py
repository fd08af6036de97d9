"""Deliberately broken kernels: the project's forward kernel with one bug planted.

Each mutant replaces one fragment of ``kernels/forward.py`` (which must occur exactly once)
and is loaded as a module of its own, so the planted bug runs through the same launch
path, validation and interpreter as the real kernel.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

from flashcheck.kernels import backward, forward, interface

SOURCES = {"forward": Path(forward.__file__).read_text(), "backward": Path(backward.__file__).read_text()}
_CACHE: dict = {}
_DIRECTORY = Path(tempfile.mkdtemp(prefix="flashcheck-mutants-"))

#: The forward's masked online-softmax step, from the masking of the logits to P.
_MASKED_SOFTMAX = """\
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        # A row that has seen no allowed key yet keeps m = -inf; subtract 0 instead so
        # that exp2 gives 0 rather than NaN from (-inf) - (-inf).
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_safe)
        p = tl.math.exp2(s - m_safe[:, None])
"""

#: name -> (fragment of kernels/forward.py, replacement, the bug it plants)
MUTATIONS = {
    "mask_right_off_by_one": (
        "(cols[None, :] <= hi[:, None])", "(cols[None, :] < hi[:, None])",
        "the band's right edge excludes the diagonal key",
    ),
    "mask_left_off_by_one": (
        "(cols[None, :] >= lo[:, None])", "(cols[None, :] > lo[:, None])",
        "the window's left edge drops one key",
    ),
    "drop_rescale": ("acc = acc * alpha[:, None]", "acc = acc", "the accumulator is not rescaled when the max grows"),
    "drop_normalisation": (
        "out = acc / tl.where(empty, 1.0, l_i)[:, None]", "out = acc", "the output is not divided by the row sum",
    ),
    "lse_in_log2": ("* 0.6931471805599453)", ")", "lse is returned in base 2"),
    "no_max_subtraction": (
        "p = tl.math.exp2(s - m_safe[:, None])", "p = tl.math.exp2(s)", "probabilities are exponentiated raw",
    ),
    "finite_sentinel": (
        'm_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)',
        "m_i = tl.full([BLOCK_M], -1.0e4, dtype=tl.float32)",
        "the running maximum starts at -1e4 instead of -inf",
    ),
    "unguarded_empty_rows": (
        'm_safe = tl.where(m_new == float("-inf"), 0.0, m_new)', "m_safe = m_new",
        "rows without keys compute (-inf) - (-inf)",
    ),
    "drop_last_key": ("col_ok = cols < seqlen_k\n", "col_ok = cols < seqlen_k - 1\n", "the last key is never read"),
    "accumulator_bias": (
        "acc += tl.dot(p.to(v.dtype), v)",
        "acc += tl.dot(p.to(v.dtype), v) + 1e-3",
        "each key block adds 1e-3 to the accumulator, a bias inside the output's tolerance",
    ),
    "gqa_modulo_mapping": ("kv_h = h // group", "kv_h = h % (heads // group)", "query heads map to KV heads modulo"),
    "kv_batch_halved": (
        "k_base = K + b * stride_kb", "k_base = K + (b // 2) * stride_kb", "pairs of batch entries share one K",
    ),
    "contiguous_query_assumed": (
        "offs_m[:, None] * stride_qn", "offs_m[:, None] * (heads * head_dim)",
        "the query's sequence stride is assumed contiguous",
    ),
    "output_into_q": (
        "o_ptrs = Out + b * stride_ob", "o_ptrs = Q + b * stride_ob", "the output is stored through q's pointer",
    ),
    "store_past_last_row": (
        "tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])",
        "tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=(offs_m <= seqlen_q)[:, None] & d_ok[None, :])",
        "one row past the end of the output is written",
    ),
    "last_column_unwritten": (
        "tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & d_ok[None, :])",
        "tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=row_ok[:, None] & (offs_d < head_dim - 1)[None, :])",
        "the last head-dim column of the output is never written",
    ),
    # packed variable-length sequences
    "varlen_query_offset_off_by_one": (
        "Q += q_start * stride_qn", "Q += (q_start + 1) * stride_qn",
        "queries are read one token late: the next sequence's first query, or past the last token",
    ),
    "varlen_keys_read_to_max_seqlen": (
        "k_start, seqlen_k = _sequence(CuSeqlensK, b)", "k_start, k_length = _sequence(CuSeqlensK, b)",
        "keys are masked with max_seqlen_k, not the sequence's length: reads run past the sequence end",
    ),
    "varlen_band_from_total_lengths": (
        "diagonal = offs_m + (seqlen_k - seqlen_q)",
        "diagonal = offs_m + (tl.load(CuSeqlensK + tl.num_programs(1) // heads)"
        " - tl.load(CuSeqlensQ + tl.num_programs(1) // heads))",
        "the causal/window band is aligned with the packed tensors' total lengths, not the sequence's",
    ),
    # boolean masks
    "mask_multiplied_after_exp": (
        _MASKED_SOFTMAX,
        _MASKED_SOFTMAX.replace(
            "tl.where(allowed, s,",
            "tl.where(col_ok[None, :] & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None]), s,",
        ).replace(
            "p = tl.math.exp2(s - m_safe[:, None])\n",
            "p = tl.math.exp2(s - m_safe[:, None])\n        if HAS_MASK:\n            p = p * keep.to(tl.float32)\n",
        ),
        "the mask multiplies P after exp instead of excluding entries before the row maximum",
    ),
    "mask_broadcast_strides_ignored": (
        "mask = mask.expand(batch, heads, seqlen_q, seqlen_k)", "mask = mask",
        "the mask's own strides are used where broadcast dims need stride 0",
    ),
}

#: Planted bugs in kernels/backward.py: name -> (fragment, replacement, the bug it plants).
#: A fragment that occurs several times is replaced everywhere (the bug is in every kernel).
BACKWARD_MUTATIONS = {
    "drop_delta": ("ds = p * (dp - delta[:, None])", "ds = p * dp", "dS forgets the rowsum(dO∘O) term"),
    "backward_ignores_band": (
        "allowed = allowed & (cols[None, :] >= lo[:, None]) & (cols[None, :] <= hi[:, None])",
        "allowed = allowed", "the recomputed P ignores the causal/window band",
    ),
    "unguarded_empty_rows_backward": (
        'lse2 = tl.where(lse == float("-inf"), float("inf"), lse * 1.4426950408889634)',
        "lse2 = lse * 1.4426950408889634", "the backward recomputes P from lse = -inf on rows without keys",
    ),
    "first_head_of_group_only": ("h = kv_h * group + t", "h = kv_h * group", "dK/dV sum one query head per group"),
    "float16_ds_overflows": (
        "FLOAT16_DS=q.dtype == torch.float16", "FLOAT16_DS=False",
        "float16 dS is rounded without range scaling, overflowing to inf where |dS| > 65504",
    ),
    "dq_stored_into_q": ("tl.store(DQ + b * stride_dqb", "tl.store(Q + b * stride_dqb", "dQ is stored through q's pointer"),
    "backward_ignores_mask": (
        "allowed = allowed & _mask_tile(Mask, rows, cols, stride_mm, stride_mn, row_ok, col_ok)", "allowed = allowed",
        "the backward recomputes P without the attn_mask",
    ),
    "backward_varlen_writes_past_sequence_end": (
        "k_start, seqlen_k = _sequence(CuSeqlensK, b)", "k_start, k_length = _sequence(CuSeqlensK, b)",
        "the backward bounds keys by max_seqlen_k: dK/dV are written past the sequence's end",
    ),
}



def mutated_launch(name: str):
    """The ``launch`` of the kernel module that mutation ``name`` plants its bug in."""
    if name in _CACHE:
        return _CACHE[name]
    module_name = "backward" if name in BACKWARD_MUTATIONS else "forward"
    fragment, replacement, _ = (BACKWARD_MUTATIONS if module_name == "backward" else MUTATIONS)[name]
    text = SOURCES[module_name]
    occurrences = text.count(fragment)
    if occurrences == 0 or (module_name == "forward" and occurrences != 1):
        raise AssertionError(f"mutation {name}: fragment occurs {occurrences} times in {module_name}.py")
    source = text.replace(fragment, replacement)
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    path = _DIRECTORY / f"{module_name}_{name}_{digest}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    _CACHE[name] = module.launch
    return module.launch


def mutant(name: str):
    """A protocol implementation running the kernels with mutation ``name``."""
    launches = list(interface.LAUNCHES)
    launches[1 if name in BACKWARD_MUTATIONS else 0] = mutated_launch(name)

    def attention(q, k, v, *, causal=False, window=(-1, -1), softmax_scale=None, attn_mask=None,
                  cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                  out=None, lse_out=None):
        return interface.attend(
            q, k, v, causal=causal, window=window, softmax_scale=softmax_scale, attn_mask=attn_mask,
            cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
            max_seqlen_k=max_seqlen_k, out=out, lse_out=lse_out, launches=tuple(launches),
        )

    attention.flashcheck_features = interface.FEATURES
    attention.__name__ = f"mutant_{name}"
    return attention


def nondeterministic(impl):
    """``impl`` with one random output element moved by one unit in the last place, as a
    race in the accumulation order would."""

    def attention(q, k, v, **kwargs):
        out, lse = impl(q, k, v, **kwargs)
        if out.numel():
            out = out.contiguous()
            bits = out.view({2: torch.int16, 4: torch.int32}[out.element_size()]).view(-1)
            bits[int(torch.randint(bits.numel(), ()))] += 1
        return out, lse

    attention.flashcheck_features = getattr(impl, "flashcheck_features", None)
    return attention


def nondeterministic_backward(impl):
    """``impl`` whose dQ has one random element moved by one unit in the last place."""

    def attention(q, k, v, **kwargs):
        if q.requires_grad:
            q.register_hook(_nudge_one_element)
        return impl(q, k, v, **kwargs)

    attention.flashcheck_features = getattr(impl, "flashcheck_features", None)
    return attention


def _nudge_one_element(grad: torch.Tensor) -> torch.Tensor:
    grad = grad.clone().contiguous()
    if grad.numel():
        bits = grad.view({2: torch.int16, 4: torch.int32}[grad.element_size()]).view(-1)
        bits[int(torch.randint(bits.numel(), ()))] += 1
    return grad
