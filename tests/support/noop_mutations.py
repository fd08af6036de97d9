"""A test-only mutation catalogue (the contract of :mod:`flashcheck.mutation.mutants`): mutations
that change nothing but a comment, one of them declared equivalent and one not, so that
``flashcheck mutate`` must report the undeclared one as a survivor."""

from __future__ import annotations

from flashcheck.kernels.interface import flash_attention as original  # noqa: F401  (the catalogue's original)
from flashcheck.kernels.mutations import Mutation, catalogue_getattr

MUTATIONS = {
    mutation.name: mutation
    for mutation in (
        Mutation("comment_only", "forward", "arithmetic", "a comment added to the rescale: nothing changes",
                 "acc = acc * alpha[:, None]", "acc = acc * alpha[:, None]  # rescaled"),
        Mutation("declared_comment_only", "forward", "normalisation", "a comment added to the normalisation",
                 "out = acc / tl.where(empty, 1.0, norm)[:, None]",
                 "out = acc / tl.where(empty, 1.0, norm)[:, None]  # normalised",
                 equivalent="only a comment changes"),
    )
}

__getattr__ = catalogue_getattr(MUTATIONS, __name__)
