"""The checking half of a standalone reproduction script: plain torch, float64, no flashcheck.

``flashcheck repro`` copies this module's source verbatim into every script it writes, after
the lines that define ``attention`` (the kernel, called as flashcheck's adapter calls it) and
``PAYLOAD`` (the exact inputs and flashcheck's allowed errors), and ends the script with
``sys.exit(main(attention, PAYLOAD))``. flashcheck's own tests import it as a module, so what a
script computes is what is tested.

The payload (:func:`unpack`) holds the protocol call's tensors saved with their storage, sizes,
strides and offset, so a strided or padded view arrives bit for bit and laid out as it was;
the upstream gradients of a gradient property; and, for each output compared with float64
attention, the allowed error of every element and the largest error allowed anywhere, as
flashcheck's tolerance model derived them for these inputs (docs/tolerance.md): a script
recomputes the float64 answer, never the allowance.

What a script checks is ``payload["check"]``, one of :data:`CHECKS`; it prints what it found
and :func:`main` returns 1 where the property fails, 0 where it holds.
"""

import argparse
import base64
import contextlib
import io
import lzma
import math
import sys
import traceback

import torch

#: What a script can check, each the standalone form of flashcheck properties (the property is
#: named in the script's docstring): ``reference`` compares outputs (out, lse, or the gradients)
#: with float64 attention within the allowed error; ``finite``: out finite, lse finite except
#: -inf on rows without keys; ``empty_rows``: out exactly 0 and lse -inf on rows without keys;
#: ``deterministic``: two identical calls agree bitwise (``backward``: their gradients);
#: ``unseen_keys_zero``: keys no query may attend get dK = dV = 0 exactly; ``empty_rows_zero_dq``:
#: rows without keys get dQ = 0 exactly; ``runs``: the case's own call (and its backward) for a
#: crash, a hang or a fatal error, which reproduces where the process dies, hangs or raises;
#: ``unchanged``: the case's call (and its backward) leave q, k, v (and the upstream gradients)
#: as they were, which every call of every check also verifies (:func:`left_unchanged`);
#: ``relations``: several calls, and relations between their results (:func:`related`);
#: ``written_in_bounds``: out and lse written into given views, every element and nothing
#: around them (:func:`written_in_bounds`); ``memory_flat``: repeated identical calls keep no
#: device memory (:func:`memory_flat`, CUDA only).
CHECKS = ("reference", "finite", "empty_rows", "deterministic", "unseen_keys_zero", "empty_rows_zero_dq", "runs",
          "unchanged", "relations", "written_in_bounds", "memory_flat")


# -- the payload ---------------------------------------------------------------------------------


def unpack(payload: str) -> dict:
    """The payload's dictionary, from its text (base85 of an lzma-compressed ``torch.save``), or
    from the file beside the script that ``payload`` names (``"file:NAME"``: a large case's)."""
    if payload.startswith("file:"):
        import pathlib

        here = pathlib.Path(sys.argv[0]).resolve().parent
        compressed = (here / payload[len("file:"):]).read_bytes()
    else:
        compressed = base64.b85decode(payload)
    return torch.load(io.BytesIO(lzma.decompress(compressed)), weights_only=True)


def place(entry, device):
    """A tensor of the payload on ``device``, laid out as it was: ``entry`` is a dict with the
    whole ``storage`` (a flat tensor) and the view's ``size``, ``stride`` and ``offset``."""
    if entry is None:
        return None
    storage = entry["storage"].to(device)
    return storage.as_strided(entry["size"], entry["stride"], entry["offset"])


# -- float64 attention ---------------------------------------------------------------------------


def allowed_keys(q, k, *, causal=False, window=(-1, -1), attn_mask=None, cu_seqlens_q=None, cu_seqlens_k=None,
                 **_):
    """Boolean ``(B|1, H|1, Nq, Nk)``: which key each query may attend. The band is aligned
    bottom-right: with ``shift = Nk - Nq``, query i attends key j iff ``-left <= j - i - shift
    <= right`` (-1 unbounded; causal makes right 0). Packed inputs (q ``(Tq, H, D)``) are a
    batch of one in which a query attends only keys of its own sequence, the band aligned per
    sequence. ``attn_mask`` (True = attend) is ANDed in."""
    left, right = window
    if causal:
        right = 0
    device = q.device
    if cu_seqlens_q is None:
        nq, nk = q.shape[1], k.shape[1]
        rows = torch.arange(nq, device=device)[:, None]
        cols = torch.arange(nk, device=device)[None, :]
        offset = cols - rows - (nk - nq)
        same = torch.ones(nq, nk, dtype=torch.bool, device=device)
    else:
        def positions(cu, total):
            cu = cu.to(device=device, dtype=torch.int64)
            tokens = torch.arange(total, device=device)
            sequence = torch.searchsorted(cu[1:], tokens, right=True)
            return sequence, tokens - cu[sequence], (cu[1:] - cu[:-1])[sequence]

        seq_q, pos_q, len_q = positions(cu_seqlens_q, q.shape[0])
        seq_k, pos_k, len_k = positions(cu_seqlens_k, k.shape[0])
        same = seq_q[:, None] == seq_k[None, :]
        offset = pos_k[None, :] - pos_q[:, None] - (len_k[None, :] - len_q[:, None])
    allowed = same.clone()
    if left != -1:
        allowed &= offset >= -left
    if right != -1:
        allowed &= offset <= right
    allowed = allowed[None, None]
    if attn_mask is not None:
        mask = attn_mask.to(device=device, dtype=torch.bool)
        while mask.dim() < 4:
            mask = mask[None]
        allowed = allowed & mask
    return allowed


def _bhnd(tensor, packed, group=1):
    """float64 ``(B, H, N, D)`` of q, k or v (packed: a batch of one), KV heads repeated per group."""
    tensor = tensor.detach().to(torch.float64)
    tensor = (tensor[None] if packed else tensor).transpose(1, 2)
    return tensor.repeat_interleave(group, dim=1) if group > 1 else tensor


def _scale(q, softmax_scale):
    return softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(q.shape[-1])


def _probabilities(q, k, allowed, scale):
    """float64 softmax of ``scale·q·kᵀ`` over the allowed keys (0 elsewhere, and on rows without
    keys) and the row log-sum-exp (-inf on rows without keys)."""
    logits = (scale * (q @ k.transpose(-1, -2))).masked_fill(~allowed, -math.inf)
    row_max = logits.amax(dim=-1, keepdim=True)
    empty = row_max == -math.inf
    weights = torch.exp(logits - row_max.masked_fill(empty, 0.0))
    total = weights.sum(dim=-1, keepdim=True)
    return weights / total.masked_fill(empty, 1.0), (row_max + torch.log(total)).squeeze(-1)


def attention64(q, k, v, **kwargs):
    """Standard attention in float64 on the protocol's arguments: ``(out, lse)`` in the
    implementation's layouts (out like q, lse ``(B, H, Nq)`` or packed ``(H, Tq)``), float64."""
    packed = q.dim() == 3
    group = q.shape[-2] // k.shape[-2]
    qb, kb, vb = _bhnd(q, packed), _bhnd(k, packed, group), _bhnd(v, packed, group)
    probs, lse = _probabilities(qb, kb, allowed_keys(q, k, **kwargs), _scale(q, kwargs.get("softmax_scale")))
    out = (probs @ vb).transpose(1, 2)
    return (out[0], lse[0]) if packed else (out, lse)


def gradients64(q, k, v, grad_out, grad_lse=None, **kwargs):
    """Float64 gradients ``(dq, dk, dv)`` of ``Σ out·grad_out + Σ lse·grad_lse`` (``grad_lse``
    None: no lse term), in the inputs' layouts, dK and dV summed over each GQA group:
    ``dS = P ∘ (dO·Vᵀ - rowsum(dO ∘ O) + grad_lse)``, ``dQ = scale·dS·K``, ``dK = scale·dSᵀ·Q``,
    ``dV = Pᵀ·dO``. Rows without keys contribute nothing."""
    packed = q.dim() == 3
    heads, kv_heads = q.shape[-2], k.shape[-2]
    group = heads // kv_heads
    scale = _scale(q, kwargs.get("softmax_scale"))
    qb, kb, vb = _bhnd(q, packed), _bhnd(k, packed, group), _bhnd(v, packed, group)
    allowed = allowed_keys(q, k, **kwargs)
    probs, _ = _probabilities(qb, kb, allowed, scale)
    empty = ~allowed.any(dim=-1, keepdim=True)
    do = _bhnd(grad_out, packed).masked_fill(empty, 0.0)
    upstream = do @ vb.transpose(-1, -2) - (do * (probs @ vb)).sum(dim=-1, keepdim=True)
    if grad_lse is not None:
        dlse = grad_lse.detach().to(torch.float64)
        upstream = upstream + (dlse[None] if packed else dlse)[..., None].masked_fill(empty, 0.0)
    ds = probs * upstream
    dq = scale * (ds @ kb)
    dk = scale * (ds.transpose(-1, -2) @ qb)
    dv = probs.transpose(-1, -2) @ do

    def per_kv_head(t):  # (B, H, Nk, D) -> (B, Hkv, Nk, D), summed over each group's query heads
        return t.unflatten(1, (kv_heads, group)).sum(dim=2)

    grads = (dq.transpose(1, 2), per_kv_head(dk).transpose(1, 2), per_kv_head(dv).transpose(1, 2))
    return tuple(g[0] for g in grads) if packed else grads


# -- calling the kernel --------------------------------------------------------------------------


class InputModified(Exception):
    """The kernel wrote into one of its inputs: no result of that call is compared."""


def storage_bytes(tensor):
    """The bytes of ``tensor``'s whole storage (the padding of a view included)."""
    return torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(tensor.untyped_storage())


@contextlib.contextmanager
def left_unchanged(tensors, during):
    """Raise :class:`InputModified`, naming the first of ``tensors`` (name -> tensor or None)
    whose storage ``during`` changed, as flashcheck checks around every call."""
    saved = {name: storage_bytes(t).clone() for name, t in tensors.items() if t is not None}
    yield
    for name, before in saved.items():
        changed = storage_bytes(tensors[name]) != before
        if bool(changed.any()):
            raise InputModified(f"{name} was modified by {during}: {int(changed.sum())} of {changed.numel()} bytes "
                                f"of its storage changed (first at byte {int(changed.nonzero()[0])}); a kernel must "
                                f"leave its inputs as they were")


def call(attention, q, k, v, kwargs):
    """``(out, lse)`` of one call, checked to leave q, k and v as they were and to be well formed
    (out like q, lse None or float32)."""
    with left_unchanged({"q": q, "k": k, "v": v}, "the call"):
        result = attention(q, k, v, **kwargs)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"expected (out, lse) from the kernel, got {type(result).__name__}")
    out, lse = result
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise TypeError(f"out: expected shape {tuple(q.shape)} and dtype {q.dtype}, got {tuple(out.shape)} {out.dtype}")
    return out, lse


def backward(attention, q, k, v, kwargs, grad_out, grad_lse):
    """``(dq, dk, dv), lse_differentiable`` by autograd through one call: the loss is
    ``Σ out·grad_out``, plus ``Σ lse·grad_lse`` over rows with keys where the kernel returns an
    lse that autograd tracks (``grad_lse`` given)."""
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    out, lse = call(attention, *leaves, kwargs)
    loss = (out.float() * grad_out.float()).sum()
    differentiable = lse is not None and lse.requires_grad and grad_lse is not None
    if differentiable:
        loss = loss + torch.where(torch.isfinite(lse), lse * grad_lse, torch.zeros_like(lse)).sum()
    if not loss.requires_grad:
        return tuple(torch.zeros_like(leaf) for leaf in leaves), differentiable
    watched = {"q": q, "k": k, "v": v, "grad_out": grad_out, "grad_lse": grad_lse}
    with left_unchanged(watched, "the backward pass"):
        grads = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    return grads, differentiable


# -- comparing -----------------------------------------------------------------------------------


def overflow_threshold(dtype):
    """The smallest magnitude that rounds to infinity in ``dtype``."""
    info = torch.finfo(dtype)
    return float(info.max) + 2.0 ** math.floor(math.log2(info.max)) * info.eps / 2


def held_to(exact, got, allowed):
    """The float64 ``exact`` value, except where ``got`` is an infinity of the same sign that a
    value within ``allowed`` of it rounds to in ``got``'s dtype: there that infinity."""
    got64 = got.detach().to(torch.float64)
    reach = exact.abs() + allowed >= overflow_threshold(got.dtype)
    overflowed = torch.isinf(got64) & (torch.sign(got64) == torch.sign(exact)) & reach
    return torch.where(overflowed, got64, exact)


def index_text(index):
    return "(" + ", ".join(str(int(i)) for i in index) + ")"


def errors(got, exact):
    """The float64 absolute error of ``got`` against ``exact``; equal non-finite values (NaN
    against NaN included) count as 0, a NaN elsewhere as infinite."""
    got64, exact64 = got.detach().to(torch.float64), exact.detach().to(torch.float64)
    same = (got64 == exact64) | (torch.isnan(got64) & torch.isnan(exact64))
    return torch.where(same, torch.zeros_like(got64), (got64 - exact64).abs()).nan_to_num(nan=math.inf)


def compare(name, got, exact, allowed, limit):
    """Print how ``got`` compares with the float64 ``exact`` within the elementwise ``allowed``
    error (and the largest error allowed anywhere, ``limit``, or None); True where it holds.
    Equal non-finite values agree; a NaN or an infinity elsewhere is never allowed."""
    got64 = got.detach().to(torch.float64)
    error = errors(got64, held_to(exact, got, allowed))
    allowed = allowed.expand_as(error)
    exceed = (error > allowed) | torch.isinf(error)
    if error.numel() == 0:
        print(f"{name}: no elements")
        return True
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = torch.unravel_index(torch.argmax(ratio), error.shape)
    largest = float(error.max())
    print(f"{name}: {int(exceed.sum())} of {error.numel()} elements exceed the allowed error; worst at "
          f"{index_text(worst)}: got {float(got64[worst])!r}, float64 {float(exact[worst])!r}, "
          f"error {float(error[worst]):.3e}, allowed {float(allowed[worst]):.3e}")
    if exceed.any():
        return False
    if limit is not None and largest > limit:
        print(f"{name}: the largest error {largest:.3e} exceeds {limit:.3e}, the most flashcheck allows anywhere "
              f"(twice a plain same-precision attention's largest error plus an ulp-scale floor)")
        return False
    return True


def none_of(name, found, values, what):
    """Print whether any element of the boolean ``found`` is set (``what`` says what it means);
    True where none is."""
    count = int(found.sum())
    if count:
        index = tuple(int(i) for i in found.nonzero()[0])
        print(f"{name}: {count} elements {what}; first at {index_text(index)}: {float(values[index])!r}")
        return False
    print(f"{name}: none {what}")
    return True


def bitwise_equal(a, b):
    a, b = a.detach().contiguous(), b.detach().contiguous()
    if a.dtype.is_floating_point and a.element_size() in (2, 4, 8):
        ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return (a.view(ints) == b.view(ints)) | (a == b)  # +0 equals -0
    return a == b


def agree(name, got, other, allowed, what, where=None):
    """Print how ``got`` compares with ``other``, another call's result, within the elementwise
    ``allowed`` error (only ``where``, a boolean tensor like them, when given); True where it
    holds. Equal non-finite values agree; a NaN or an infinity elsewhere is never allowed."""
    got64, other64 = got.detach().to(torch.float64), other.detach().to(torch.float64)
    error = errors(got64, other64)
    if where is not None:
        error = torch.where(where, error, torch.zeros_like(error))
    allowed = allowed.expand_as(error)
    if error.numel() == 0:
        print(f"{name}: no elements")
        return True
    exceed = (error > allowed) | torch.isinf(error)
    ratio = torch.where(error == 0, torch.zeros_like(error), error / allowed)
    worst = torch.unravel_index(torch.argmax(ratio), error.shape)
    print(f"{name}: {int(exceed.sum())} of {error.numel()} elements differ from {what} by more than the allowed "
          f"error; worst at {index_text(worst)}: {float(got64[worst])!r} against {float(other64[worst])!r}, "
          f"error {float(error[worst]):.3e}, allowed {float(allowed[worst]):.3e}")
    return not bool(exceed.any())


def sliced(tensor, index):
    """``tensor`` at ``index`` (None: all of it): per leading dimension an int, a ``[start, stop]``
    pair, or None for the whole dimension."""
    if tensor is None or index is None:
        return tensor
    return tensor[tuple(slice(None) if i is None else slice(*i) if isinstance(i, list) else i for i in index)]


def run_calls(attention, data, device):
    """The results of every call of ``data["calls"]``: out and lse, and dq, dk, dv by autograd
    for a call that carries upstream gradients (``grad_out``)."""
    results = []
    for entry in data["calls"]:
        q, k, v, kwargs = placed(entry, device)
        result = dict(zip(("out", "lse"), call(attention, q, k, v, kwargs)))
        if entry.get("grad_out") is not None:
            grads, result["differentiable"] = backward(attention, q, k, v, kwargs, place(entry["grad_out"], device),
                                                       place(entry.get("grad_lse"), device))
            result.update(zip(("dq", "dk", "dv"), grads))
        results.append(result)
    return results


def related(attention, data, device):
    """The ``relations`` check: every call of ``data["calls"]`` (:func:`run_calls`), then each
    relation between their results (each result at its relation's ``left_index`` and
    ``right_index``, :func:`sliced`): against another call's result (``against`` "calls": bit for
    bit, or within an allowed error), against float64 attention on the left call's own inputs
    ("reference"), the left result minus the right one against the same difference of their
    float64 attention ("reference_difference"), the left result against the sums over each group
    of ``group`` heads of the right one's (its axis -2; "group_sum": GQA's dK and dV against the
    gradients with K and V repeated per head), every element bit for bit equal to ``value``
    ("value"), or no trace of NaN padding read into the left call's results (``right``: the same
    views into zero padding, then contiguous copies; "nan_leak", :func:`no_trace_of_nan`); True
    where all hold."""
    results, exact = run_calls(attention, data, device), {}

    def reference(index):
        """Float64 attention on call ``index``'s inputs, and its gradients where the call ran its
        backward (with the lse term where the kernel's lse is differentiable)."""
        if index not in exact:
            entry = data["calls"][index]
            q, k, v, kwargs = placed(entry, device)
            exact[index] = dict(zip(("out", "lse"), attention64(q, k, v, **kwargs)))
            if entry.get("grad_out") is not None:
                grad_lse = place(entry.get("grad_lse"), device) if results[index]["differentiable"] else None
                exact[index].update(zip(("dq", "dk", "dv"),
                                        gradients64(q, k, v, place(entry["grad_out"], device), grad_lse, **kwargs)))
        return exact[index]

    held = True
    for relation in data["relations"]:
        name = relation["output"]
        against = relation.get("against", "calls")
        left = sliced(results[relation["left"]][name], relation.get("left_index"))
        if against in ("reference", "value"):
            if left is None:
                continue  # the kernel returns no lse
            if against == "value":
                differ = ~bitwise_equal(left, torch.full_like(left, relation["value"]))
                held &= none_of(name, differ, left, f"are not {relation['what']}")
            else:
                held &= compare(name, left, reference(relation["left"])[name], place(relation["allowed"], device),
                                relation.get("limit"))
            continue
        rights = [sliced(results[index][name], relation.get("right_index")) for index in relation["right"]]
        if left is None and all(right is None for right in rights):
            continue  # the kernel returns no lse
        if left is None or any(right is None for right in rights):
            print(f"{name}: returned by some of the calls and not by others")
            held = False
            continue
        if against == "nan_leak":
            clean_call = relation["right"][1]
            without = relation.get("allowed_without_lse_gradient")
            lse_term = results[clean_call].get("differentiable", True) or without is None
            allowed = place(relation["allowed"] if lse_term else without, device)
            held &= no_trace_of_nan(name, left, rights[0], rights[1], reference(clean_call)[name], allowed,
                                    relation["held_to"])
            continue
        where = place(relation["where"], device)
        if relation["where_normal"]:
            normal = rights[0].abs() > torch.finfo(rights[0].dtype).tiny
            where = normal if where is None else where & normal
        allowed = place(relation["allowed"], device)
        if allowed is None:  # one right-hand call, times an exact scale (1, -1, 2)
            right = rights[0] * relation["scale"]
            differ = ~bitwise_equal(left, right) if left.shape == right.shape else torch.ones((), dtype=torch.bool)
            held &= none_of(name, differ if where is None else differ & where, left, f"differ from {relation['what']}")
        elif against == "reference_difference":
            got = left.detach().to(torch.float64) - rights[0].detach().to(torch.float64)
            shift = reference(relation["left"])[name] - reference(relation["right"][0])[name]
            held &= agree(name, got, shift, allowed, relation["what"], where)
        elif against == "group_sum":
            # A group with an infinite per-head gradient has no defined sum (+inf and -inf give
            # NaN): that element is left to the comparison with float64, as flashcheck leaves it.
            per_head = rights[0].detach().to(torch.float64).unflatten(-2, (-1, relation["group"]))
            defined = per_head.isfinite().all(dim=-2)
            total = torch.where(defined, held_to(per_head.sum(dim=-2), left, allowed), left.detach().to(torch.float64))
            held &= agree(name, left, total, allowed, relation["what"], where)
        else:
            right = sum(r.detach().to(torch.float64) for r in rights) * relation["scale"]
            held &= agree(name, left, right, allowed, relation["what"], where)
    return held


def no_trace_of_nan(name, padded, zero_padded, contiguous, exact, allowed, overflow_held):
    """The ``nan_leak`` relation: output ``name`` of views into NaN (``padded``) is not non-finite
    where the same views into zero padding give a finite value, and is within ``allowed`` of the
    float64 ``exact`` wherever the contiguous copies of the same tokens are (``overflow_held``:
    an infinity of ``padded`` that ``exact`` rounds to counts as exact, :func:`held_to`)."""
    exact = held_to(exact, padded, allowed) if overflow_held else exact
    leaked = ~torch.isfinite(padded) & torch.isfinite(zero_padded)
    held = none_of(name, leaked, padded, "are non-finite for tokens that are views into NaN where the same views "
                                         "into zero padding give finite values (read from the padding)")
    # Where the contiguous copies are wrong too, the padding is not to blame: compared with itself.
    target = torch.where(errors(contiguous, exact) <= allowed, exact, padded.detach().to(torch.float64))
    print(f"{name}, against float64 where the contiguous copies of the same tokens agree with it:")
    return compare(name, padded, target, allowed, None) and held


def guarded(shape, dtype, device, pads):
    """``(buffer, view, inside)``: a view of ``shape`` inside a NaN-filled buffer with guard
    bands of ``pads`` on each side of each dimension, and a boolean mask over the buffer that
    is True exactly under the view."""
    padded = tuple(size + 2 * pad for size, pad in zip(shape, pads))
    buffer = torch.full(padded, float("nan"), dtype=dtype, device=device)
    region = tuple(slice(pad, pad + size) for size, pad in zip(shape, pads))
    inside = torch.zeros(padded, dtype=torch.bool, device=device)
    inside[region] = True
    return buffer, buffer[region], inside


def written_in_bounds(attention, q, k, v, kwargs, pads):
    """The ``written_in_bounds`` check: the call given NaN-filled ``out=`` and ``lse_out=`` views
    inside guard bands (``pads["out"]``, ``pads["lse"]``: per dimension, the last ones used)
    writes every element of them, returns them, and writes nothing around them."""
    lse_shape = (q.shape[1], q.shape[0]) if q.dim() == 3 else (q.shape[0], q.shape[2], q.shape[1])
    out_buffer, out_view, out_inside = guarded(tuple(q.shape), q.dtype, q.device, pads["out"][-q.dim():])
    lse_buffer, lse_view, lse_inside = guarded(lse_shape, torch.float32, q.device, pads["lse"][-len(lse_shape):])
    out, lse = call(attention, q, k, v, dict(kwargs, out=out_view, lse_out=lse_view))
    held = True
    for name, buffer, view, inside, returned in (("out", out_buffer, out_view, out_inside, out),
                                                 ("lse", lse_buffer, lse_view, lse_inside, lse)):
        if returned is not None and returned.data_ptr() != view.data_ptr():
            print(f"{name}: the call returned a new tensor instead of writing the given one")
            held = False
            continue
        held &= none_of(name, torch.isnan(view), view, "were left unwritten (still the NaN poison)")
        held &= none_of(name, ~torch.isnan(buffer) & ~inside, buffer,
                        "outside the output were overwritten (index into the buffer, which has the output at the "
                        "guard offset)")
    return held


class CannotCheck(Exception):
    """The check cannot be made here: a device this machine lacks or the kernel does not run on,
    or memory on a device without an allocated-memory count."""


def check_usable_device(data, device: str) -> None:
    """CannotCheck, before any work, unless ``device`` names a torch device this machine has,
    of a kind the kernel runs on (the payload's ``device_kinds``, None: any)."""
    try:
        chosen = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise CannotCheck(f"--device {device!r} is not a torch device ({error})") from None
    kinds = data.get("device_kinds")
    if kinds is not None and chosen.type not in kinds:
        raise CannotCheck(f"the kernel runs on {', '.join(kinds) or 'no device'} only, not on {chosen.type}: "
                          f"run with --device {kinds[0] if kinds else 'cuda'}")
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise CannotCheck("no CUDA device here: run on a machine with one")


def memory_grew(readings, slack):
    """Whether the device memory ``readings`` (after a warm-up call, then after each repeat) show
    a call keeping memory: growth over the repeats beyond ``slack`` bytes, or growth at every one."""
    steps = [after - before for before, after in zip(readings, readings[1:])]
    return readings[-1] - readings[0] > slack or all(step > 0 for step in steps)


def memory_flat(attention, q, k, v, kwargs, grad_out, grad_lse, repeats, slack):
    """The ``memory_flat`` check: after a warm-up call, ``repeats`` identical calls (with their
    backward passes where ``grad_out`` is given), each dropping its results, keep the memory held
    by live tensors within ``slack`` bytes and do not grow it at every call."""
    if q.device.type != "cuda":
        raise CannotCheck(f"torch counts no allocated memory on {q.device.type}: run with --device cuda")
    import gc

    def once():
        if grad_out is not None:
            backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        else:
            call(attention, q, k, v, kwargs)
        gc.collect()
        torch.cuda.synchronize(q.device)
        return torch.cuda.memory_allocated(q.device)

    readings = [once() for _ in range(repeats + 1)]
    steps = ", ".join(f"{after - before:+d}" for before, after in zip(readings, readings[1:]))
    print(f"allocated after the warm-up call: {readings[0]} bytes; then call by call: {steps} bytes "
          f"(allowed: at most {slack} bytes over the {repeats} calls, and no growth at every call)")
    return not memory_grew(readings, slack)


def same_bits(name, second, first):
    differ = ~bitwise_equal(second, first)
    return none_of(name, differ, second, "differ from an identical first call")


# -- the checks ----------------------------------------------------------------------------------


def placed(entry, device):
    """``(q, k, v, kwargs)`` of one call of the payload (its ``inputs``, ``kwargs`` and
    ``tensor_kwargs``) on ``device``."""
    q, k, v = (place(entry["inputs"][name], device) for name in "qkv")
    kwargs = dict(entry["kwargs"], **{name: place(t, device) for name, t in entry["tensor_kwargs"].items()})
    return q, k, v, kwargs


def run_check(attention, data, device):
    """Run ``data["check"]`` (one of :data:`CHECKS`) on the payload ``data``; True where it holds."""
    q, k, v, kwargs = placed(data, device)
    check = data["check"]
    grad_out = place(data.get("grad_out"), device)
    grad_lse = place(data.get("grad_lse"), device)
    outputs = data.get("outputs", ())
    if check == "relations":
        return related(attention, data, device)
    if check == "written_in_bounds":
        return written_in_bounds(attention, q, k, v, kwargs, data["pads"])
    if check == "memory_flat":
        return memory_flat(attention, q, k, v, kwargs, grad_out, grad_lse, data["repeats"], data["slack"])
    if check in ("runs", "unchanged"):
        call(attention, q, k, v, kwargs)
        if grad_out is not None:
            backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        if check == "unchanged":
            print("q, k and v" + (" and the upstream gradients" if grad_out is not None else "")
                  + " were left as they were")
        else:
            print("the case's call completed: not reproduced here (the property may have met the failure in a "
                  "call of its own, on other inputs made from this case; replay it with flashcheck check)")
        return True
    packed = q.dim() == 3
    allowed = allowed_keys(q, k, **kwargs).expand(1 if packed else q.shape[0], q.shape[-2], q.shape[-3], -1)
    empty = ~allowed.any(dim=-1)  # (B, H, Nq): rows without keys, a batch of one when packed
    empty_lse = empty[0] if packed else empty  # like lse
    empty_out = (empty[0].transpose(0, 1) if packed else empty.transpose(1, 2))[..., None]  # like out
    if grad_out is None:  # a forward property
        out, lse = call(attention, q, k, v, kwargs)
        if check == "deterministic":
            again = call(attention, q, k, v, kwargs)
            held = same_bits("out", again[0], out)
            return (same_bits("lse", again[1], lse) if lse is not None else True) and held
        exact = dict(zip(("out", "lse"), attention64(q, k, v, **kwargs)))
        results = {"out": out, "lse": lse}
        if check == "reference":
            held = True
            for name in outputs:
                if results[name] is None:
                    print(f"{name}: the kernel returned none")
                    held = False
                    continue
                allowed = place(data["allowed"][name], device)
                held &= compare(name, results[name], exact[name], allowed, data["limits"].get(name))
            return held
        if check == "finite":
            held = none_of("out", ~torch.isfinite(out), out, "are not finite")
            if lse is not None:
                wrong = (~torch.isfinite(lse) & ~empty_lse) | (empty_lse & (lse != -math.inf))
                held &= none_of("lse", wrong, lse, "are not finite on a row with keys, or not -inf on one without")
            return held
        if check == "empty_rows":
            held = none_of("out", (out != 0) & empty_out, out, "are not 0 on a row without keys")
            if lse is not None:
                held &= none_of("lse", (lse != -math.inf) & empty_lse, lse, "are not -inf on a row without keys")
            return held
        raise ValueError(f"check: {check!r} is not a forward check")
    grads, differentiable = backward(attention, q, k, v, kwargs, grad_out, grad_lse)
    results = dict(zip(("dq", "dk", "dv"), grads))
    if check == "deterministic":
        again, _ = backward(attention, q, k, v, kwargs, grad_out, grad_lse)
        return all([same_bits(name, second, results[name]) for name, second in zip(("dq", "dk", "dv"), again)])
    if check == "reference":
        variant = "allowed" if differentiable or grad_lse is None else "allowed_without_lse_gradient"
        if differentiable:
            print("lse is differentiable: its upstream gradient is part of the loss")
        exact = dict(zip(("dq", "dk", "dv"), gradients64(q, k, v, grad_out, grad_lse if differentiable else None,
                                                        **kwargs)))
        held = True
        for name in outputs:
            held &= compare(name, results[name], exact[name], place(data[variant][name], device), None)
        return held
    if check == "unseen_keys_zero":
        seen = allowed.any(dim=2).unflatten(1, (k.shape[-2], -1)).any(dim=2)  # (B, Hkv, Nk)
        unseen = (~seen).transpose(1, 2)[..., None]  # (B, Nk, Hkv, 1)
        if packed:
            unseen = unseen[0]
        held = none_of("dk", (results["dk"] != 0) & unseen, results["dk"], "are not 0 for a key no query may attend")
        return none_of("dv", (results["dv"] != 0) & unseen, results["dv"],
                       "are not 0 for a key no query may attend") and held
    if check == "empty_rows_zero_dq":
        return none_of("dq", (results["dq"] != 0) & empty_out, results["dq"], "are not 0 on a row without keys")
    raise ValueError(f"check: {check!r} is not a gradient check")


def _pinned_moves() -> int:
    """How many times a Triton autotuner this script pins moved to another configuration: the
    ``moves`` of flashcheck.autotune_pin, whose source a script carries before this one where it
    pins any (flashcheck decides such a failure once more, and so does the script); 0 elsewhere."""
    moves = globals().get("moves")
    return moves() if callable(moves) else 0


def main(attention, payload, argv=None):
    """Run the script's check: 1 where the property fails (or the kernel raises), 0 where it holds,
    2 where it cannot be checked on the device chosen (:class:`CannotCheck`)."""
    data = unpack(payload)
    parser = argparse.ArgumentParser(description=data["title"])
    parser.add_argument("--device", default=data["device"], help=f"where to run (default {data['device']})")
    device = parser.parse_args(argv).device
    print(data["title"])
    try:
        check_usable_device(data, device)
        moves = _pinned_moves()
        held = run_check(attention, data, device)
        if not held and _pinned_moves() != moves:
            print("a pinned autotuner moved to another configuration during the check (its line on stderr): "
                  "checked once more, every call on the configuration it moved to")
            held = run_check(attention, data, device)
    except InputModified as modified:
        print(modified)
        print("FAILS")
        return 1
    except CannotCheck as why:
        print(f"CANNOT CHECK: {why}")
        return 2
    except Exception:  # noqa: BLE001 - the kernel raising is what this script reproduces
        traceback.print_exc()
        print("FAILS: the kernel raised (above)")
        return 1
    if held and data.get("kind", "property") != "property":
        # A crash, a hang or a fatal error that this run of the case's call did not meet: CUDA reports
        # errors late, so the one flashcheck met may have come from an earlier case in its process.
        print(f"DID NOT REPRODUCE: the {data['kind']} flashcheck met did not happen in this run")
        return 0
    print("HOLDS" if held else "FAILS")
    return 0 if held else 1
