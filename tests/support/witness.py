"""The protocol's causal/window band written out from its text, independent of
``flashcheck.cases.masks``: tests compare the verifier's and the kernel's masking with it."""

from __future__ import annotations

import torch


def allowed_matrix(nq, nk, causal=False, window=(-1, -1)):
    """Boolean (Nq, Nk) band: query i attends key j iff
    ``i + Nk - Nq - left <= j <= i + Nk - Nq + right`` (-1 unbounded; causal: right = 0)."""
    left, right = window
    if causal:
        right = 0
    i = torch.arange(nq)[:, None] + (nk - nq)
    j = torch.arange(nk)[None, :]
    allowed = torch.ones(nq, nk, dtype=torch.bool)
    if left != -1:
        allowed &= j >= i - left
    if right != -1:
        allowed &= j <= i + right
    return allowed
