"""The project kernel is right for any tile shape, not only the shapes it ships with.

Launch settings come from a tuned table on Hopper and from defaults elsewhere; a retune may
pick tiles of any shape. Where a band leaves a whole tile without keys (rows before the
diagonal of a bottom-right causal band with ``Nq > Nk``) or a key tile without queries
(keys left of every row's window), the kernels compute an empty range of blocks to visit.
With ``BLOCK_M != BLOCK_N`` such a range once came out non-empty, starting at a negative
index (``//`` truncates towards zero), and a tile of memory before the tensor was read
unbounded: garbage outputs in the forward with ``BLOCK_N > BLOCK_M``, garbage dK and dV
with ``BLOCK_M > BLOCK_N``. The shipped settings never had that shape, so no GPU run saw it.

Run in Triton's interpreter, where the tile shape is set here (``config.INTERPRETER_CONFIG``),
through flashcheck's own verdicts on fixed cases.
"""
from __future__ import annotations

import pytest

from flashcheck.cases.case import Case
from flashcheck.engine.verdict import Outcome, decide
from flashcheck.kernels import config, flash_attention
from flashcheck.properties import PROPERTIES

pytestmark = pytest.mark.skipif(not config.INTERPRETER, reason="sets the tile shape of Triton's interpreter")

TILES = [(16, 16), (16, 32), (32, 16), (64, 16), (16, 64)]


def _case(**fields) -> Case:
    spec = ("batch=1 seqlen_q=64 seqlen_k=8 heads=2 kv_heads=1 head_dim=16 dtype=float32 causal=True "
            "window=-1,-1 softmax_scale=None layout=contiguous values=normal seed=7")
    return Case.from_spec(spec).replace(**fields)


#: Rows 0-55 of a bottom-right causal band with 64 queries and 8 keys see no key: whole
#: query tiles without keys, the last of them at a distance from the keys below one key tile.
ROWS_WITHOUT_KEYS = _case()
#: 1 query and 31 keys, window (11, 1): keys 0-18 are left of the only row's window, whole
#: key tiles without queries within one query tile of the window.
KEYS_WITHOUT_QUERIES = _case(seqlen_q=1, seqlen_k=31, causal=False, window=(11, 1), head_dim=59, dtype="float16")


@pytest.fixture(params=TILES, ids=[f"{m}x{n}" for m, n in TILES])
def tiles(request, monkeypatch):
    block_m, block_n = request.param
    monkeypatch.setitem(config.INTERPRETER_CONFIG, "BLOCK_M", block_m)
    monkeypatch.setitem(config.INTERPRETER_CONFIG, "BLOCK_N", block_n)
    return request.param


@pytest.mark.parametrize("property_name, case", [pytest.param(name, case, id=name) for name, case in (
    ("empty_rows_exact", ROWS_WITHOUT_KEYS),
    ("out_matches_reference", ROWS_WITHOUT_KEYS),
    ("empty_rows_get_zero_dq", ROWS_WITHOUT_KEYS),
    ("unseen_keys_get_zero_gradient", KEYS_WITHOUT_QUERIES),
    ("grads_match_reference", KEYS_WITHOUT_QUERIES),
)])
def test_bands_that_leave_whole_tiles_empty_hold_for_every_tile_shape(tiles, property_name, case):
    verdict = decide(PROPERTIES[property_name], flash_attention, case, device="cpu", impl_name="flash")
    assert verdict.outcome is Outcome.PASSED, str(verdict)
