"""Implementations that check nothing or misdeclare themselves, for the verdicts that must
not pass them: a stub that declines every call, one declaring no features at all, one that
returns its output on another device, one naming a feature the protocol does not have.
Float32 only where they compute, to keep the runs short."""

from __future__ import annotations

import torch

from tests import buggy


def declines_everything(q, k, v, **kwargs):
    """A stub: every call raises NotImplementedError, as an unwritten kernel would."""
    raise NotImplementedError("not written yet")


declines_everything.flashcheck_features = frozenset({"lse", "float32"})


def no_features(q, k, v, **kwargs):
    """Correct, declaring an empty feature set: dense attention, no band, mask or lse."""
    return buggy.correct(q, k, v, **kwargs)


no_features.flashcheck_features = frozenset()


def device_kind_misspelt(q, k, v, **kwargs):
    """Correct, declaring its features for the device kinds "cpu" and "gpu" (meaning "cuda")."""
    return buggy.correct(q, k, v, **kwargs)


device_kind_misspelt.flashcheck_features_by_device = {"cpu": buggy.FEATURES, "gpu": buggy.FEATURES}


def out_on_meta(q, k, v, **kwargs):
    """Returns out on the meta device (shape and dtype right, no values)."""
    out, lse = buggy.correct(q, k, v, **kwargs)
    return out.to("meta"), lse


out_on_meta.flashcheck_features = frozenset({"lse", "float32"})


def unknown_feature(q, k, v, **kwargs):
    return buggy.correct(q, k, v, **kwargs)


unknown_feature.flashcheck_features = frozenset({"lse", "float32", "casual"})
