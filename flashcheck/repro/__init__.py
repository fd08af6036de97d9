"""Standalone reproduction scripts: a failure handed over as a program a maintainer runs
without flashcheck (``flashcheck repro``, ``flashcheck fuzz --repro-dir``,
``pytest --flashcheck-repro-dir``).

A script imports torch and the kernel (the user's ``module:attr``, or the library a built-in
adapter calls: :mod:`flashcheck.repro.calls`), never flashcheck's checking code. It carries
the case's exact inputs (bit for bit, with their sizes, strides and storage offset), the
upstream gradients a gradient property draws, and flashcheck's allowed error for each compared
element; it calls the kernel as flashcheck does, computes float64 attention (and the float64
gradients) itself, prints the worst element with its observed and allowed error, and exits 1
where the property fails and 0 where it holds. Its checking half is
:mod:`flashcheck.repro.standalone`, copied in verbatim.

How a script checks each property is :data:`SCRIPTED`: against the float64 answer, by
repeating a call, the inputs left unchanged, the outputs written in bounds, the device memory
over repeated calls, and the relations between a few calls of the metamorphic, masking and
packing properties (every call's inputs carried, each relation bit for bit, within flashcheck's
allowed error, or against the values the protocol fixes). A script for a crash, a hang or a
fatal error makes the case's own call (and its backward for a gradient property) and reproduces
the failure where the process dies, hangs or raises there; where the property met it in a call
of its own on other inputs (another layout, repeated K/V), or where the error came from an earlier
case in the process (CUDA reports errors late), the script says it did not reproduce.

A payload above :data:`EMBEDDED_BYTES` (a large case: the inputs and a float64 allowance per
element) goes into a file beside the script, ``FILE.py.xz``, which the script reads from its own
folder.
"""

from __future__ import annotations

import base64
import inspect
import io
import lzma
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from flashcheck import protocol
from flashcheck.cases.case import Case, one_group_kept
from flashcheck.engine.fuzz_result import PROCESS_KINDS
from flashcheck.oracle import expectation
from flashcheck.oracle.backward_inputs import ds_range_inputs, upstream
from flashcheck.properties import PROPERTIES, gradients, masking, memory, metamorphic, packed
from flashcheck.properties.common import batched, expect, expect_gradients, materialize
from flashcheck.repro import calls, standalone


@dataclass(frozen=True)
class Scripted:
    """How a script checks a property: ``check``, one of
    :data:`flashcheck.repro.standalone.CHECKS`; ``outputs`` compared with float64 (a
    ``reference`` check); ``backward``: it runs the backward pass (``"declared"``: where the
    implementation declares the feature backward); ``ds_range``: on the float16
    dS-range stress's scaled inputs (:func:`flashcheck.oracle.backward_inputs.ds_range_inputs`);
    ``relations``: for a ``relations`` check (a metamorphic property), the function that makes
    its calls and the relations between their results, ``(impl, case, device) -> (calls,
    relations)`` (:func:`_call` and :func:`_relation` make their entries)."""

    check: str
    outputs: tuple[str, ...] = ()
    backward: bool | str = False
    ds_range: bool = False
    relations: Callable | None = None


GRADIENTS = ("dv", "dk", "dq")


def _upstream(impl, case: Case, device):
    """``(grad_out, grad_lse)``: the upstream gradients a gradient property draws for ``case``
    (they depend on the case alone, never on the kernel's outputs); an lse gradient where the
    implementation declares an lse, used by the script where the kernel's lse is differentiable."""
    out = torch.empty(case.out_shape, dtype=case.torch_dtype, device=device)
    lse = (torch.empty(case.lse_shape, dtype=torch.float32, device=device, requires_grad=True)
           if "lse" in protocol.features_of(impl, device) else None)
    return upstream(case, out, lse)


def _call(case: Case, inputs, device, grads=None, **extra) -> dict:
    """One call of a script: the inputs (bit for bit) and ``case``'s protocol arguments (``extra``
    replacing some of them, as :func:`flashcheck.properties.common.call_checked` takes them), and
    with ``grads``, ``(grad_out, grad_lse)``, its backward pass too, as
    :func:`flashcheck.repro.standalone.run_calls` reads them."""
    kwargs = {**case.attention_kwargs(device), **extra}
    plain = {name: value for name, value in kwargs.items() if not isinstance(value, torch.Tensor)}
    plain["window"] = list(plain["window"])
    grad_out, grad_lse = grads if grads is not None else (None, None)
    return {"inputs": {name: _entry(t) for name, t in zip("qkv", inputs)}, "kwargs": plain,
            "tensor_kwargs": {name: _entry(value) for name, value in kwargs.items() if isinstance(value, torch.Tensor)},
            "grad_out": _entry(grad_out), "grad_lse": _entry(grad_lse)}


def _relation(output: str, left: int, right: int | tuple[int, ...], what: str, *, allowed=None, where=None,
              scale: float = 1.0, where_normal: bool = False, against: str = "calls", limit=None,
              left_index=None, right_index=None, group: int | None = None) -> dict:
    """``output`` (out or lse) of call ``left`` against ``scale`` times that of call ``right``
    (or, within an allowance, the float64 sum of the calls ``right``): bit for bit, or within the
    elementwise ``allowed`` error (float64); only ``where`` (a boolean tensor like the output)
    when given, and with ``where_normal`` only where the right-hand result is a normal number.
    ``what`` names the right-hand side. ``against`` "reference": call ``left``'s output against
    float64 attention on its own inputs within ``allowed`` (and the largest error ``limit``), as
    the reference properties compare (``right`` unused); "reference_difference": call ``left``'s
    output minus call ``right``'s against the difference of their float64 attention, within
    ``allowed``; "group_sum": call ``left``'s output against the sums over each ``group`` of
    heads of call ``right``'s. ``left_index``, ``right_index``: the part of each output compared
    (:func:`flashcheck.repro.standalone.sliced`; the slices of ``slice_index``)."""
    return {"output": output, "left": left, "right": [right] if isinstance(right, int) else list(right),
            "scale": scale, "what": what, "allowed": _entry(allowed), "where": _entry(where),
            "where_normal": where_normal, "against": against, "limit": limit, "left_index": left_index,
            "right_index": right_index, "group": group}


def _value(output: str, call: int, value: float, what: str, index=None) -> dict:
    """Every element of ``output`` of call ``call`` (at ``index``) bit for bit ``value``."""
    return {"output": output, "left": call, "right": [], "against": "value", "value": value, "what": what,
            "left_index": index}


def slice_index(*parts) -> list:
    """An index of :func:`flashcheck.repro.standalone.sliced`: each part a slice (as a ``[start,
    stop]`` pair), an int, or None for a whole dimension."""
    return [[part.start, part.stop] if isinstance(part, slice) else part for part in parts]


def _part(tensor, *parts):
    """``tensor[parts]`` as a tensor of its own, so that a script carries that part alone."""
    return tensor[tuple(slice(None) if part is None else part for part in parts)].clone()


def _layout_relations(impl, case, device):
    layout = metamorphic.relaid_layout(impl, case, device)
    inputs, relaid = materialize(case, device), materialize(case.replace(layout=layout), device)
    return [_call(case, inputs, device), _call(case, relaid, device)], [
        _relation(name, 0, 1, f"the {name} for the same values in layout {layout!r}") for name in ("out", "lse")]


def _independence_relations(impl, case, device):
    inputs, other, b, g, heads = one_group_kept(case, device)
    out_kept = torch.zeros(case.out_shape, dtype=torch.bool)
    lse_kept = torch.zeros(case.lse_shape, dtype=torch.bool)
    batched(case, out_kept)[b, :, heads] = True
    batched(case, lse_kept)[b, heads] = True
    what = f"when only batch {b}, KV head {g} is kept and all else is replaced"
    return [_call(case, inputs, device), _call(case, other, device)], [
        _relation("out", 1, 0, f"the output {what}", where=out_kept),
        _relation("lse", 1, 0, f"the lse {what}", where=lse_kept)]


def _permutation_relations(impl, case, device):
    inputs = materialize(case, device)
    expected = expect(impl, case, inputs)
    return [_call(case, inputs, device), _call(case, metamorphic.permuted_keys(case, inputs), device)], [
        _relation(name, 1, 0, f"the {name} with keys in their original order", allowed=2 * expected.allowed(name))
        for name in ("out", "lse")]


def _linearity_relations(impl, case, device):
    q, k, v = inputs = materialize(case, device)
    negated, doubled, other, total = metamorphic.linear_values(case, v)
    values = [v, negated, other, total] + ([doubled] if doubled is not None else [])
    relations = [
        _relation("out", 1, 0, "minus the output for V (negating V is exact)", scale=-1.0),
        _relation("out", 3, (0, 2), "out(V1) + out(V2)",
                  allowed=metamorphic.sum_allowance(impl, case, inputs, other, total)),
    ]
    if doubled is not None:
        relations.append(_relation("out", 4, 0, "twice the output for V (doubling V is exact away from "
                                   "subnormals)", scale=2.0, where_normal=True))
    return [_call(case, (q, k, x), device) for x in values], relations


def _repeated_kv_relations(impl, case, device):
    inputs = materialize(case, device)
    expected = expect(impl, case, inputs)
    repeated_case, repeated = metamorphic.repeated_kv(case, inputs)
    return [_call(case, inputs, device), _call(repeated_case, repeated, device)], [
        _relation(name, 0, 1, f"the {name} with K/V repeated per head", allowed=2 * expected.allowed(name))
        for name in ("out", "lse")]


def _hidden_key_relations(fill, what):
    """The relations of a hidden-key property: the rows that see none of the replaced keys keep
    their out and lse bit for bit (``fill(case)`` makes the keys, ``what`` names the result)."""
    def relations(impl, case, device):
        inputs, changed, rows, (b, g, count) = masking.hidden_keys_replaced(case, device, fill(case))
        out_where, lse_where = masking.rows_where(case, rows)
        said = what.format(count=count, b=b, g=g)
        return [_call(case, inputs, device), _call(case, changed, device)], [
            _relation("out", 1, 0, said, where=out_where), _relation("lse", 1, 0, said, where=lse_where)]
    return relations


def _band_as_mask_relations(impl, case, device):
    inputs = materialize(case, device)
    expected = expect(impl, case, inputs)
    return [_call(case, inputs, device), _call(case, inputs, device, **masking.band_as_mask(case, device))], [
        _relation(name, 1, 0, masking.band_as_flags(case), allowed=2 * expected.allowed(name)) for name in ("out", "lse")]


def _key_shift_relations(impl, case, device):
    inputs = materialize(case, device)
    shifted = metamorphic.shifted_keys(case, inputs)
    exp, exp_s, out_allowed, lse_allowed = metamorphic.shift_expectations(impl, case, inputs, shifted)
    return [_call(case, inputs, device), _call(case, shifted, device)], [
        _relation("out", 1, 1, "float64 attention", against="reference", allowed=exp_s.allowed("out"),
                  limit=float(exp_s.limits["out"])),
        _relation("out", 1, 0, metamorphic.SHIFTED_OUT, allowed=out_allowed),
        _relation("lse", 1, 1, "float64 attention", against="reference", allowed=exp_s.allowed("lse"),
                  limit=float(exp_s.limits["lse"])),
        _relation("lse", 1, 0, metamorphic.SHIFTED_LSE, against="reference_difference", allowed=lse_allowed,
                  where=torch.isfinite(exp.expected_lse))]


def _repeated_kv_gradient_relations(impl, case, device):
    inputs = materialize(case, device)
    grads = _upstream(impl, case, device)
    expected = expect_gradients(impl, case, inputs, *grads)
    group = case.heads // case.kv_heads
    return [_call(case, inputs, device, grads), _call(*metamorphic.repeated_kv(case, inputs), device, grads)], [
        *(_relation(name, 0, 1, gradients.GROUP_SUM, allowed=2 * expected.allowed(name), against="group_sum",
                    group=group) for name in ("dk", "dv")),
        _relation("dq", 0, 1, gradients.REPEATED_DQ, allowed=2 * expected.allowed("dq"))]


def _separate_call_relations(impl, case, device):
    inputs = materialize(case, device)
    backward = "backward" in protocol.features_of(impl, device)
    grad_out, grad_lse = grads = _upstream(impl, case, device) if backward else (None, None)
    exp = expect(impl, case, inputs)
    exp_g = expect_gradients(impl, case, inputs, *grads) if backward else None
    calls, relations = [_call(case, inputs, device, grads)], []
    for s, rows, keys, nq, nk in packed.sequences(case):
        r, k = slice_index(rows), slice_index(keys)
        if nq and not nk:
            relations += [_value("out", 0, 0.0, packed.without_keys(0, s), r),
                          _value("lse", 0, float("-inf"), packed.without_keys("-inf", s), [None, *r])]
            relations += [_value("dq", 0, 0.0, packed.without_keys(0, s), r)] if backward else []
            continue
        if not nq:
            relations += [_value(name, 0, 0.0, packed.without_queries(s), k) for name in ("dk", "dv") if backward]
            continue
        upstream_s = ((grad_out[rows].unsqueeze(0), None if grad_lse is None else grad_lse[:, rows].unsqueeze(0))
                      if backward else None)
        calls.append(_call(*packed.sequence_call(case, inputs, rows, keys, nq, nk), device, upstream_s))
        what, alone = packed.sequence_alone(s, nq, nk), len(calls) - 1
        relations += [
            _relation("out", 0, alone, what, allowed=2 * _part(exp.allowed("out"), rows), left_index=r, right_index=[0]),
            _relation("lse", 0, alone, what, allowed=2 * _part(exp.allowed("lse"), None, rows), left_index=[None, *r],
                      right_index=[0])]
        if backward:
            relations += [_relation(name, 0, alone, what, allowed=2 * _part(exp_g.allowed(name), part),
                                    left_index=slice_index(part), right_index=[0])
                          for name, part in (("dq", rows), ("dk", keys), ("dv", keys))]
    return calls, relations


def _unpadded_entry_relations(impl, case, device):
    inputs = masking.padded_with_huge_keys(case, device)
    exp = expect(impl, case, inputs)
    calls, relations = [_call(case, inputs, device)], []
    for b, n in enumerate(case.mask.key_lengths):
        if n == 0:
            relations += [_value("out", 0, 0.0, masking.no_valid_keys(0, b), [b]),
                          _value("lse", 0, float("-inf"), masking.no_valid_keys("-inf", b), [b])]
            continue
        single, parts = masking.entry_call(case, inputs, b, n)
        exp_s = expect(impl, single, parts)
        calls.append(_call(single, parts, device))
        entry = slice(b, b + 1)
        relations += [_relation(name, 0, len(calls) - 1, masking.valid_keys_alone(b, n),
                                allowed=_part(exp.allowed(name), entry) + exp_s.allowed(name),
                                left_index=slice_index(entry)) for name in ("out", "lse")]
    return calls, relations


def _nan_padding_relations(impl, case, device):
    padded_case, padded, twin, clean = packed.nan_padded_views(case, device)
    backward = "backward" in protocol.features_of(impl, device)
    grad_out, grad_lse = grads = _upstream(impl, padded_case, device) if backward else (None, None)
    calls = [_call(padded_case, inputs, device, grads) for inputs in (padded, twin, clean)]
    exp = expect(impl, padded_case, clean)

    def leak(name, allowed, held, without=None):
        relation = _relation(name, 0, (1, 2), "no trace of the NaN padding", allowed=allowed, against="nan_leak")
        return {**relation, "held_to": held, "allowed_without_lse_gradient": _entry(without)}

    relations = [leak("out", exp.allowed("out"), True), leak("lse", exp.allowed("lse"), False)]
    if backward:
        with_lse = expect_gradients(impl, padded_case, clean, grad_out, grad_lse)
        without = expect_gradients(impl, padded_case, clean, grad_out, None) if grad_lse is not None else None
        relations += [leak(name, with_lse.allowed(name), True, without.allowed(name) if without else None)
                      for name in ("dq", "dk", "dv")]
    return calls, relations


#: The properties a script decides on its own, as the property does.
SCRIPTED = {
    "out_matches_reference": Scripted("reference", ("out",)),
    "lse_matches_reference": Scripted("reference", ("lse",)),
    "outputs_finite": Scripted("finite"),
    "empty_rows_exact": Scripted("empty_rows"),
    "deterministic": Scripted("deterministic"),
    "grads_match_reference": Scripted("reference", GRADIENTS, backward=True),
    "grads_match_reference_where_ds_exceeds_float16": Scripted("reference", GRADIENTS, backward=True, ds_range=True),
    "unseen_keys_get_zero_gradient": Scripted("unseen_keys_zero", backward=True),
    "empty_rows_get_zero_dq": Scripted("empty_rows_zero_dq", backward=True),
    "backward_deterministic": Scripted("deterministic", backward=True),
    "layout_invariance": Scripted("relations", relations=_layout_relations),
    "batch_head_independence": Scripted("relations", relations=_independence_relations),
    "key_permutation_invariance": Scripted("relations", relations=_permutation_relations),
    "gqa_matches_repeated_kv": Scripted("relations", relations=_repeated_kv_relations),
    "value_linearity": Scripted("relations", relations=_linearity_relations),
    "future_keys_cannot_change_output": Scripted(
        "relations", relations=_hidden_key_relations(masking.fresh_keys, masking.REPLACED)),
    "masked_keys_with_huge_logits_change_nothing": Scripted(
        "relations", relations=_hidden_key_relations(masking.huge_keys, masking.MADE_HUGE)),
    "mask_equal_to_band_matches_flag": Scripted("relations", relations=_band_as_mask_relations),
    "key_shift_invariance": Scripted("relations", relations=_key_shift_relations),
    "inputs_unchanged": Scripted("unchanged"),
    "backward_leaves_inputs_unchanged": Scripted("unchanged", backward=True),
    "gqa_grads_match_repeated_kv": Scripted("relations", relations=_repeated_kv_gradient_relations),
    "varlen_matches_separate_calls": Scripted("relations", relations=_separate_call_relations),
    "padded_batch_matches_unpadded": Scripted("relations", relations=_unpadded_entry_relations),
    "outputs_written_in_bounds": Scripted("written_in_bounds"),
    "nan_padding_never_leaks": Scripted("relations", relations=_nan_padding_relations),
    "repeated_calls_do_not_grow_memory": Scripted("memory_flat", backward="declared"),
}



class NoScript(ValueError):
    """No standalone script can reproduce this failure: one line saying why."""


def scripted(property_name: str, kind: str = "property") -> Scripted:
    """How a script reproduces a failure of ``kind`` of ``property_name``; :class:`NoScript`
    for a property failure of a property a script cannot decide on its own."""
    if property_name not in PROPERTIES:
        raise NoScript(f"--property: unknown {property_name!r}; known: {sorted(PROPERTIES)}")
    if property_name in SCRIPTED:
        return SCRIPTED[property_name]
    if kind in PROCESS_KINDS:
        prop = PROPERTIES[property_name]
        return Scripted("runs", backward=True if "backward" in prop.requires else
                        "declared" if prop.exercises("backward") else False)
    raise NoScript(f"--property {property_name}: a script decides only {', '.join(sorted(SCRIPTED))} on its own "
                   f"(and makes any property's calls for a crash, a hang or a fatal error); replay this one with "
                   f"flashcheck check")


#: The largest payload (compressed, before base85) written into the script itself.
EMBEDDED_BYTES = 1 << 20


def write(path, *, impl, impl_name: str, property_name: str, case: Case, device: str, kind: str = "property",
          evidence: str | None = None) -> Path:
    """Write the standalone script of ``property_name`` on ``case`` for ``impl`` (named
    ``impl_name``) on ``device`` to ``path``; ``evidence``: what flashcheck reported, quoted in
    its docstring. Computes the float64 reference and the allowances on ``device``, never calls
    the implementation. Raises :class:`NoScript` (before writing anything) where no script
    can reproduce it."""
    how = scripted(property_name, kind)
    path = Path(path)
    data = payload(impl, case, device, how, title=f"{impl_name}: {property_name} on {case.spec()}", kind=kind)
    sidecar = None
    if len(data) > EMBEDDED_BYTES:
        sidecar = path.with_name(path.name + ".xz")
        sidecar.write_bytes(data)
    text = script_source(impl_name=impl_name, property_name=property_name, case=case, device=device,
                         data=data, sidecar=sidecar, evidence=evidence)
    path.write_text(text)
    return path


def script_source(*, impl_name: str, property_name: str, case: Case, device: str, data: bytes,
                  sidecar: Path | None, evidence: str | None) -> str:
    """The text of the script :func:`write` writes, its payload ``data`` embedded, or in the
    file ``sidecar`` beside it."""
    call = calls.call_section(impl_name)
    summary = PROPERTIES[property_name].summary
    quoted = textwrap.indent((evidence or "").strip(), "    ") if evidence else "    (not recorded)"
    lines = [
        "#!/usr/bin/env python3",
        '"""' + f"Reproduces {property_name} for {impl_name}, without flashcheck.",
        "",
        f"Property: {summary}",
        f"Case: {case.spec()}",
        f"Device: {device} (run with --device to choose another)",
        f"Replay with flashcheck: flashcheck check --impl {impl_name} --property {property_name} --case '{case.spec()}'",
        "",
        "What flashcheck reported:",
        quoted.replace('"""', "'''").replace("\\", "\\\\"),
        "",
        "Needs torch" + (f" and {call.needs}" if call.needs else "")
        + (f", and {sidecar.name} beside it (the payload of a large case)" if sidecar is not None else "")
        + ". Exit status: 1 where the property fails (or the kernel raises), 0 where it holds, 2 where it"
        " cannot be checked on the device chosen.",
        "The inputs are embedded bit for bit, with their strides; float64 attention and its gradients are",
        "computed below; the allowed error of each element is flashcheck's tolerance model's for these inputs.",
        '"""',
        "",
        "# -- the kernel, called as flashcheck calls it " + "-" * 50,
        call.source.rstrip(),
        "",
        "# -- the exact inputs, the upstream gradients and the allowed errors (torch.save, lzma, base85) ------",
        (f"PAYLOAD = {_wrapped(base64.b85encode(data).decode('ascii'))}" if sidecar is None else
         f"PAYLOAD = 'file:{sidecar.name}'  # a large case: the payload lies beside this script"),
        "",
        "# -- float64 attention and the check (flashcheck.repro.standalone, copied) " + "-" * 22,
        inspect.getsource(standalone).rstrip(),
        "",
        "",
        'if __name__ == "__main__":',
        "    sys.exit(main(attention, PAYLOAD))",
        "",
    ]
    return "\n".join(lines)


def _wrapped(text: str, width: int = 100) -> str:
    """``text`` as a parenthesised run of string literals, ``width`` characters a line."""
    chunks = [text[i:i + width] for i in range(0, len(text), width)] or [""]
    return "(\n" + "\n".join(f"    {chunk!r}" for chunk in chunks) + "\n)"


def payload(impl, case: Case, device: str, how: Scripted, *, title: str, kind: str = "property") -> bytes:
    """The payload of a script (:func:`flashcheck.repro.standalone.unpack` reads it): the
    inputs and protocol arguments of ``case`` on ``device`` as the property makes them, the
    upstream gradients, the allowed errors of the outputs ``how`` compares, and the ``kind`` of
    failure it reproduces (a crash, hang or fatal error that does not happen is said not to
    reproduce, not to hold)."""
    features = protocol.features_of(impl, device)
    tf32 = "tf32" in features
    kwargs = case.attention_kwargs(device)
    grad_out = grad_lse = None
    if how.ds_range:
        inputs, grad_out = ds_range_inputs(case, device)
    else:
        inputs = case.materialize(device)
        if how.backward is True or (how.backward == "declared" and "backward" in features):
            grad_out, grad_lse = _upstream(impl, case, device)
    data = {
        "title": title, "device": str(device), "check": how.check, "kind": kind, "outputs": list(how.outputs),
        "device_kinds": sorted(kinds) if (kinds := protocol.device_kinds_of(impl)) is not None else None,
        **_call(case, inputs, device),
        "grad_out": _entry(grad_out), "grad_lse": _entry(grad_lse), "allowed": {}, "limits": {},
    }
    if how.relations is not None:
        data["calls"], data["relations"] = how.relations(impl, case, device)
    if how.check == "written_in_bounds":
        data["pads"] = {"out": list(memory.OUT_PADS), "lse": list(memory.LSE_PADS)}
    if how.check == "memory_flat":
        data["repeats"], data["slack"] = memory.REPEATS, memory.GROWTH_SLACK_BYTES
    if how.check == "reference" and not how.backward:
        expected = expectation.expect(*inputs, **kwargs, tf32=tf32)
        for name in how.outputs:
            data["allowed"][name] = _entry(expected.allowed(name))
            data["limits"][name] = float(expected.limits[name])
    elif how.check == "reference":
        expected = expectation.expect_gradients(*inputs, grad_out, grad_lse, **kwargs, tf32=tf32)
        data["allowed"] = {name: _entry(expected.allowed(name)) for name in how.outputs}
        if grad_lse is not None:
            without = expectation.expect_gradients(*inputs, grad_out, None, **kwargs, tf32=tf32)
            data["allowed_without_lse_gradient"] = {name: _entry(without.allowed(name)) for name in how.outputs}
    buffer = io.BytesIO()
    torch.save(data, buffer)
    return lzma.compress(buffer.getvalue(), preset=9)


def _entry(tensor: torch.Tensor | None) -> dict | None:
    """``tensor`` as :func:`flashcheck.repro.standalone.place` reads it: its whole storage on
    the CPU (padding of a view included) and its size, stride and storage offset."""
    if tensor is None:
        return None
    tensor = tensor.detach()
    storage = tensor.untyped_storage()
    flat = tensor.new_empty(0).set_(storage, 0, (storage.nbytes() // tensor.element_size(),))
    return {"storage": flat.cpu().clone(), "size": list(tensor.shape), "stride": list(tensor.stride()),
            "offset": tensor.storage_offset()}


@dataclass(frozen=True)
class ScriptRequest:
    """One script :func:`write_all` is to write: :func:`write`'s arguments, as plain data (it
    crosses a spawn), the implementation by its name and the case by its spec."""

    path: str
    impl_name: str
    property_name: str
    case: str
    device: str
    kind: str = "property"
    evidence: str | None = None


def write_all(requests: list[ScriptRequest], *, processes: int, impl=None) -> list[str]:
    """Write the script of every request; returns, per request, its path or ``"none: "`` and
    why no script can reproduce it.

    Each script costs the float64 reference and the allowances of its case (seconds for a
    long gradient case), and a campaign hands over dozens: with ``processes`` above one and
    more than one request they are written side by side in that many spawned processes, each
    loading the implementation by its name (in process, ``impl`` is used when given). The
    first error other than :class:`NoScript` is raised, as from :func:`write`."""
    if processes < 1:
        raise ValueError(f"processes: expected at least 1, got {processes}")
    if len(requests) <= 1 or processes == 1:
        return [_write_request(request, impl) for request in requests]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(min(processes, len(requests)), mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_write_request, requests))


def _write_request(request: ScriptRequest, impl=None) -> str:
    if impl is None:
        from flashcheck import peers

        impl = peers.resolve(request.impl_name)
    try:
        return str(write(request.path, impl=impl, impl_name=request.impl_name, property_name=request.property_name,
                         case=Case.from_spec(request.case), device=request.device, kind=request.kind,
                         evidence=request.evidence))
    except NoScript as reason:
        return f"none: {reason}"
