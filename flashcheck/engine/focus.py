"""How many compile classes a fuzz worker draws in: one at first, more as its compilations pay off.

On a GPU a drawn case runs in milliseconds but compiles for seconds whenever its Triton
specialisation is new (docs/performance.md). Compile-aware drawing
(:func:`flashcheck.cases.compile_classes.compile_classes`) keeps cases inside a catalogue of classes
that each compile once; but a worker drawing from its whole catalogue from the start meets
a new class, and so new compilations, on most of its cases for minutes (a cold-cache run on
an H100 spent 94% of its case time compiling over five minutes: docs/performance.md).

:class:`WideningFocus` starts a worker in one class of the catalogue and adds the next
one when both hold:

- the share of the worker's case time spent compiling so far is at most
  :data:`MAX_COMPILE_SHARE`, so that at least the rest of its time goes to running cases;
- at least :data:`CASES_PER_WIDENING` cases have finished since the last widening, the
  latest without compiling, so the classes in use are warm before another is added.

For an implementation that names its compile key (classes pinning only what the adapter
named, :class:`flashcheck.cases.compile_classes.KeyedClass`) it also adds the next class when the
classes in use do not warm: at least :data:`COLD_CASES_TO_WIDEN` cases since the last widening,
and compiling still took more than :data:`MAX_COMPILE_SHARE` of the time of the latest
:data:`RECENT_CASES` (the first cases of a class compile its variants: only the latest tell
whether it has warmed). Such a kernel goes on compiling inside a class (on attributes its compile
key leaves free: FlagGems' flash forward compiles in the batch and the head counts), so staying
buys little pace, and a worker that stayed would spend the run in its first class (a campaign of
four such workers drew 6 causal cases of 735). Not for Triton's specialisation classes (a kernel
naming no key): those compile once by construction, and the project kernel, widened so, ran
858 cases against 2286 in the same 300 s (docs/performance.md).

The workers of one run share one catalogue (one ``focus_seed``, drawn anew each run) and
start at classes of their own (``focus_start``, the worker's index): each compiles its own
class first, side by side with the others, and when it widens, the next class is one that
a neighbour has already compiled, which Triton's on-disk cache hands it in milliseconds.
Over a long run every class comes in, and one case in
:data:`flashcheck.cases.compile_classes.FOCUS_ESCAPE` is drawn outside any class throughout, so every
case stays drawable from the first minute. Sizes without ``focus`` (the interpreter's) are
left as they are.

A class whose cases the implementation only declines, or fails only as a known divergence,
checks nothing: after :data:`UNCHECKED_TO_LEAVE` such cases in a row the worker leaves the
classes it is in for the next ones of the catalogue, starting again from one. So does a class
whose cases are mostly a seen known divergence's, which steering keeps a turn from drawing: once
at least :data:`RARE_PROPERTIES_TO_LEAVE` properties, and more than half of those whose steered
turns ended there, found most of their draws such (the few cases the others still draw would
otherwise keep the worker there, checking a handful of properties).
"""

from __future__ import annotations

import collections
import dataclasses

from flashcheck.cases import compile_classes

#: The most of a worker's case time that compiling may take before it stops adding classes.
MAX_COMPILE_SHARE = 0.5
#: Cases finished in the classes in use before another class is added.
CASES_PER_WIDENING = 8
#: Cases in a row that checked nothing (declined, or a known divergence) before a worker
#: leaves its classes.
UNCHECKED_TO_LEAVE = 6
#: Properties whose steered turns drew mostly a seen divergence's cases in the classes in use,
#: at the least, before a worker leaves them: several, since some properties' cases lie all in
#: such a divergence wherever they are drawn (rows without keys, under a divergence of those rows).
RARE_PROPERTIES_TO_LEAVE = 6
#: Cases since the last widening after which classes still compiling more than
#: :data:`MAX_COMPILE_SHARE` of the time of the latest :data:`RECENT_CASES` count as not
#: warming, and another is added.
COLD_CASES_TO_WIDEN = 24
RECENT_CASES = 12


class WideningFocus:
    """The case sizes a fuzz worker draws with, widened case by case (module docstring).

    ``sizes()`` gives the sizes for the next hypothesis turn; ``record(seconds,
    compile_seconds)`` takes each finished case's time and the part of it spent compiling.
    ``classes`` is how many classes of the catalogue are in use. ``keyed``: the implementation
    names its compile key, so classes that do not warm are widened past too."""

    def __init__(self, sizes, *, max_compile_share: float = MAX_COMPILE_SHARE,
                 cases_per_widening: int = CASES_PER_WIDENING, keyed: bool = False):
        if not 0.0 <= max_compile_share <= 1.0:
            raise ValueError(f"max_compile_share: expected a share in [0, 1], got {max_compile_share!r}")
        if not isinstance(cases_per_widening, int) or cases_per_widening < 1:
            raise ValueError(f"cases_per_widening: expected a positive int, got {cases_per_widening!r}")
        self._sizes = sizes
        self._keyed = keyed
        self._max_share = max_compile_share
        self._cases_per_widening = cases_per_widening
        self.classes = 1
        self.seconds = 0.0
        self.compile_seconds = 0.0
        self._since_widening = 0
        #: Classes of the catalogue left behind, past the worker's own start.
        self.left = 0
        self._unchecked_in_a_row = 0
        #: Whether each property's latest steered turn in the classes in use drew mostly rare
        #: cases, by name.
        self._mostly_rare: dict[str, bool] = {}
        #: ``(seconds, compile_seconds)`` of the latest cases.
        self._recent = collections.deque(maxlen=RECENT_CASES)
        #: :meth:`labels` of the classes last asked for, and which those were.
        self._labels: tuple[str, ...] = ()
        self._labelled: tuple | None = None

    def labels(self) -> tuple[str, ...] | None:
        """The compile classes drawn in now, each in a few words
        (:meth:`flashcheck.cases.compile_classes.CompileClass.label`); None without compile-aware
        drawing, or with a compile key, whose classes each property's request shapes."""
        sizes = self.sizes()
        if not sizes.focus or self._keyed:
            return None
        if self._labelled != sizes.classes_in_focus():
            self._labels = tuple(c.label() for c in compile_classes.classes_in_use(sizes))
            self._labelled = sizes.classes_in_focus()
        return self._labels

    def sizes(self):
        """The sizes to draw the next turn's cases with."""
        if not self._sizes.focus:
            return self._sizes
        return dataclasses.replace(self._sizes, focus_classes=self.classes,
                                   focus_start=self._sizes.focus_start + self.left)

    def outcome(self, *, checked: bool) -> None:
        """Count a case's outcome: ``checked`` False for one declined or explained by a known
        divergence; leave the classes in use after :data:`UNCHECKED_TO_LEAVE` of those in a row."""
        self._unchecked_in_a_row = 0 if checked else self._unchecked_in_a_row + 1
        if self._unchecked_in_a_row >= UNCHECKED_TO_LEAVE:
            self._leave()

    def steered_turn(self, prop: str, *, mostly_rare: bool) -> None:
        """Count the end of a steered turn of property ``prop``: ``mostly_rare``, most of what it
        drew was a seen known divergence's (:class:`flashcheck.engine.fuzz_events.SteeredTurn`);
        leave the classes in use once at least :data:`RARE_PROPERTIES_TO_LEAVE` properties, and
        more than half of those heard of there, drew so at their latest turn."""
        self._mostly_rare[prop] = mostly_rare
        rare = sum(self._mostly_rare.values())
        if rare >= RARE_PROPERTIES_TO_LEAVE and rare > len(self._mostly_rare) / 2:
            self._leave()

    def _leave(self) -> None:
        """Draw from the next class of the catalogue past those in use, one class at first."""
        if self._sizes.focus:
            self.left += self.classes
            self.classes, self._since_widening = 1, 0
            self._mostly_rare = {}
        self._unchecked_in_a_row = 0

    def record(self, seconds: float, compile_seconds: float) -> None:
        """Count a finished case (``seconds`` in all, ``compile_seconds`` of them compiling),
        and widen the focus by one class where the rules of the module docstring allow."""
        self.seconds += seconds
        self.compile_seconds += compile_seconds
        self._since_widening += 1
        self._recent.append((seconds, compile_seconds))
        paid_off = (compile_seconds == 0.0 and self._since_widening >= self._cases_per_widening
                    and self.compile_seconds <= self._max_share * self.seconds)
        not_warming = (self._keyed and self._since_widening >= COLD_CASES_TO_WIDEN
                       and sum(c for _, c in self._recent) > self._max_share * sum(t for t, _ in self._recent))
        if paid_off or not_warming:
            self.classes += 1
            self._since_widening = 0
            self._mostly_rare = {}
