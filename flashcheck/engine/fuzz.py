"""Fuzzing: run the properties on cases hypothesis draws until a time budget is spent.

The properties take turns, each a short hypothesis run (a fresh ``@given`` with a seed of
its own) drawing the case structure for it, so that every property is exercised within
one cycle of turns and the engine can stop at the budget's end; the comparisons with the
float64 reference take every third turn (see :func:`cycle`). A failure is shrunk to a
minimal case and kept in an example database (one key per property), and the next run
replays it before drawing anything new. This is the in-process engine; ``flashcheck
fuzz`` runs it in worker processes (:mod:`flashcheck.engine.fuzz_workers`).
"""

from __future__ import annotations

import collections
import dataclasses
import random
import time
import unittest
from typing import Callable

from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from flashcheck import protocol
from flashcheck.cases.case import Case
from flashcheck.engine import crash_store, fuzz_events
from flashcheck.engine.campaign import CampaignState
from flashcheck.engine.fuzz_result import case_class
from flashcheck.engine.property_cases import UNSATISFIABLE, case_strategy, not_applicable_because
from flashcheck.engine.verdict import Outcome, StopRunning, Verdict, decide
from flashcheck.oracle.compare import PropertyFailure
from flashcheck.properties import PROPERTIES
from flashcheck.properties.registry import Property
# The result types, in a module of their own that imports neither torch nor hypothesis.
from flashcheck.engine.fuzz_result import PACE_SPAN, Failure, FuzzResult  # noqa: F401  (part of this module's interface)

#: Examples in one property's turn: short turns spread a short budget over every property.
#: Each turn's first example is hypothesis's simplest case, run once and then remembered.
ROUND_EXAMPLES = 2
#: The comparisons with the float64 reference (the specification itself) open every cycle
#: of turns; the other properties follow in an order of the seed's own, shuffled anew each
#: cycle, and the comparisons come back in rotation after every :data:`OTHERS_PER_PRIMARY`
#: of them: they catch most bugs (in the mutation runs they killed three mutants in four),
#: and in a short budget a bug only a gradient comparison sees would otherwise wait a
#: whole cycle for its one turn.
#: The float16 dS-range comparison is one of them: the regime it puts every case into is one
#: that random draws reach about once in a few hundred gradient cases.
PRIMARY = ("out_matches_reference", "lse_matches_reference", "grads_match_reference",
           "grads_match_reference_where_ds_exceeds_float16")
OTHERS_PER_PRIMARY = 2
#: A property's latest decided cases in a worker, whose known share :meth:`InProcessFuzzer.step_back_after_known`
#: weighs, and the fewest it takes that share over (one known case among fewer is not evidence).
#: A turn decides about one case (:data:`ROUND_EXAMPLES`), so one known case must not send a
#: property away: one whose known cases are a minority (cuDNN's float16 gradient faults among the
#: gradient comparisons' cases) still has its other cases to check.
RECENT_CASES = 8
FEWEST_WEIGHED = 3
#: One turn in this many is drawn unsteered: the cases of a known divergence already seen, of
#: a campaign's crashing case classes, are drawn in it alone, rarely and never excluded. The odds
#: are the turn's, not a draw's: a steered turn draws none of them, where a case drawn as one
#: and kept one time in 32 got every retry hypothesis makes of a rejected example, so that in a
#: class where most cases are such, most cases kept were.
RARE_ODDS = 32
#: A steered turn whose steering looked at :data:`FEWEST_STEERED` cases or more and found at least
#: this share of them rare drew mostly where nothing new is checked (:class:`SteeringTally`).
MOSTLY_RARE = 0.9
FEWEST_STEERED = 8
#: A steered turn gives up once its steering has looked at this many cases and found all of them
#: rare but one at most: hypothesis would otherwise go on drawing hundreds of cases before it
#: calls the turn unsatisfiable (a second or more of drawing, where a compiled kernel decides a
#: case in milliseconds). Where fewer are rare, the turn draws on: what is left is what checks
#: something new.
GIVE_UP_AFTER = 64


class SteeringTally:
    """The steering of one turn, called on each case the turn draws (the ``avoid`` predicate of
    :func:`flashcheck.engine.property_cases.case_strategy`): true for one to draw rarely, which the
    turn does not draw, by the predicates ``rare()`` gives, asked afresh at each case so that a
    known divergence the turn's first case met steers its second. ``rare`` None: an unsteered turn,
    which draws every case. Counts how many cases it looked at (with something to steer off) and
    how many it found rare, and ``gave_up`` after :data:`GIVE_UP_AFTER` of them nearly all rare:
    from then on it lets every case through, for the turn to end without running it."""

    def __init__(self, rare: Callable[[], tuple[Callable[[Case], bool], ...]] | None):
        self.rare = rare
        self.looked = self.found = 0
        self.gave_up = False

    @property
    def steered(self) -> bool:
        return self.rare is not None

    def __call__(self, case: Case) -> bool:
        if self.gave_up:
            return False
        predicates = self.rare()
        if not predicates:
            return False
        found = any(predicate(case) for predicate in predicates)
        self.looked += 1
        self.found += found
        self.gave_up = self.looked >= GIVE_UP_AFTER and self.found >= self.looked - 1
        return found

    def mostly_rare(self) -> bool:
        """Whether the turn drew mostly rare cases (:data:`MOSTLY_RARE` of at least
        :data:`FEWEST_STEERED`): hypothesis retries a rejected draw, so a turn that kept its cases
        may still have found most draws rare."""
        return self.looked >= FEWEST_STEERED and self.found >= MOSTLY_RARE * self.looked


#: The first thing each turn draws, and then throws away. A turn is a fresh hypothesis run
#: whose first example is the all-simplest choice sequence (already run and remembered), and
#: hypothesis makes the next example novel by redrawing its *first* choice until it differs
#: from the first example's (``DataTree.generate_novel_prefix``), then drawing the rest at
#: random. Were the first choice the case's dtype, no fuzzed case after the simplest would
#: ever have the first dtype, float16: so the first choice is this number, which no case
#: depends on, and the case after it is drawn from its strategy's own distribution.
_TURN_NONCE = st.integers(min_value=0, max_value=2**32 - 1)


def case_kinds(case) -> list[str]:
    """Labels that say which regions of the case space a case exercises."""
    kinds = [case.dtype, case.layout, case.values]
    banded = case.band != (-1, -1)
    kinds.append("causal" if case.causal else ("window" if banded else "no band"))
    if not case.mask.is_none:
        kinds.append(f"mask {case.mask.kind}")
        if case.mask.shape not in ("BHQK", "B11K"):
            kinds.append("broadcast mask")
    if case.varlen:
        kinds.append("varlen")
        if any(0 in pair for pair in case.seqlens):
            kinds.append("empty sequence")
    if not case.is_masked:
        kinds.append("unmasked")
    if case.kv_heads < case.heads:
        kinds.append("gqa" if case.kv_heads > 1 else "mqa")
    if case.seqlen_q != case.seqlen_k:
        kinds.append("Nq<Nk" if case.seqlen_q < case.seqlen_k else "Nq>Nk")
    if case.has_empty_rows:
        kinds.append("empty rows")
    return kinds


def fuzz_in_process(
    impl,
    *,
    impl_name: str,
    budget: float,
    device: str,
    sizes,
    seed: int | None = None,
    database: str | None = None,
    shared_database: str | None = None,
    properties: list[str] | None = None,
    on_event: Callable[[fuzz_events.Event], None] | None = None,
    before_case: Callable[[str, Case], None] | None = None,
    after_case: Callable[[Verdict], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    shrink_time: float | None = None,
    replay_only: bool = False,
    simplest_run_elsewhere: bool = False,
    keep_going: bool = False,
    campaign: Callable[[], CampaignState] | None = None,
    device_shared: bool = False,
) -> FuzzResult:
    """Fuzz ``impl`` in this process for ``budget`` seconds; stop at the first failure,
    shrunk to a minimal case, or at the first fatal error, unshrunk.

    ``keep_going`` makes the run a campaign: it goes on after a failure until the budget is
    spent (or a fatal error ends the process). Each distinct failure, by its signature
    (:attr:`flashcheck.engine.fuzz_result.Failure.signature`), is shrunk once, among cases of
    that signature only, and reported; a later case failing with a signature already reported
    (here, or by another process: ``campaign()`` says which, and which case classes to draw
    rarely) is counted (``Repeated``), not shrunk again; one of another signature met while a
    failure is being shrunk is kept and, unless fuzzing meets it again and shrinks it, reported
    at the end as drawn.

    Each case's verdict comes from :func:`flashcheck.engine.verdict.decide`.

    ``database``: the example database folder (hypothesis's; :func:`flashcheck.engine.
    crash_store.database_folder`), None for none; ``shared_database``: a Redis server's URL
    whose examples are multiplexed with it (:mod:`flashcheck.engine.shared_database`).

    What happens is reported through ``on_event(event)``, one event of
    :mod:`flashcheck.engine.fuzz_events` each: :class:`~flashcheck.engine.fuzz_events.Passed`
    after each case checked and passed; ``Declined`` after each case the implementation
    declined; ``NotApplicable`` for each chosen property that cannot run on this
    implementation (its features exclude it, the implementation declares it not applicable,
    or no drawn case is one it applies to: it is then dropped, and listed in
    ``not_applicable``); ``KnownCase`` after each case that fails as a declared known
    divergence, and ``KnownDivergenceSeen`` the first time a property does (a divergence of
    the whole property drops it from the run); ``Found`` at the first failure, before
    shrinking; ``Counterexample`` with the failure the run ends with. A worker process
    forwards them to its parent as they are, a passed case with the times its clock measured
    added.

    Three hooks act inside the engine, at fixed points of each case, and are not events:
    events report what happened and could be handled anywhere, later, in another process;
    these must run here and now. ``before_case(property, case)`` just before each call into
    the implementation (a worker writes the case to disk there, so that a crash during the
    call leaves it behind); ``after_case(verdict)`` as soon as a case's verdict is known,
    whatever it is, before the engine acts on it (a worker stops its case clock there, and
    at a ``FATAL`` verdict, an error after which the process cannot run further cases, it
    exits there; when the hook returns from a ``FATAL`` verdict, the run ends with that
    failure, unshrunk: shrinking would run more cases on a dead CUDA context);
    ``should_stop()``, polled before each case, answers whether to stop. Shrinking stops at
    the budget's end or ``shrink_time`` seconds after the first failure, whichever comes
    first; the smallest failing case found by then is the counterexample.
    ``sizes``: the :class:`flashcheck.cases.sizes.CaseSizes` to draw with, or a function
    giving them for each turn (a worker widening its compile focus,
    :class:`flashcheck.engine.focus.WideningFocus`).
    ``replay_only``: replay what the database holds and draw nothing new.
    ``simplest_run_elsewhere``: another process fuzzing alongside runs each property's
    simplest case (every fuzz run's first drawn example), so this one leaves it out (it is
    neither run nor counted, and a shrink here takes it as passing: where it fails, the
    other process finds it) and spends that time on cases of its own.
    ``device_shared``: other processes use the device too (a run's workers on one GPU), whose
    memory may be theirs when the implementation's call runs out of it: such a case is decided
    once more, and where it runs out again it is left unfinished (an ``OutOfMemory`` event,
    counted and shown with its replay line), not reported as a finding.

    Raises :class:`flashcheck.engine.verdict.FlashcheckError` when flashcheck's own code fails
    on a case (a bug in flashcheck, not a finding), and ValueError when no chosen property
    applies to the implementation's features.
    """
    return InProcessFuzzer(
        impl, impl_name=impl_name, budget=budget, device=device, sizes=sizes, seed=seed, database=database,
        shared_database=shared_database, properties=properties, on_event=on_event, before_case=before_case, after_case=after_case,
        should_stop=should_stop, shrink_time=shrink_time, replay_only=replay_only,
        simplest_run_elsewhere=simplest_run_elsewhere, keep_going=keep_going, campaign=campaign,
        device_shared=device_shared,
    ).run()


class InProcessFuzzer:
    """One run of :func:`fuzz_in_process`, whose docstring is its specification: the
    arguments, the properties still taking turns, the cases run so far, the clock and what
    was found. :meth:`run` runs it, once."""

    def __init__(self, impl, *, impl_name: str, budget: float, device: str, sizes, seed: int | None,
                 database: str | None, properties: list[str] | None,
                 shared_database: str | None = None,
                 on_event: Callable[[fuzz_events.Event], None] | None,
                 before_case: Callable[[str, Case], None] | None, after_case: Callable[[Verdict], None] | None,
                 should_stop: Callable[[], bool], shrink_time: float | None, replay_only: bool,
                 simplest_run_elsewhere: bool, keep_going: bool = False,
                 campaign: Callable[[], CampaignState] | None = None, device_shared: bool = False):
        self.impl, self.impl_name, self.device, self.sizes = impl, impl_name, device, sizes
        self.budget, self.seed, self.shrink_time = budget, seed, shrink_time
        self.replay_only, self.simplest_run_elsewhere = replay_only, simplest_run_elsewhere
        self.on_event, self.before_case, self.after_case, self.should_stop = (
            on_event, before_case, after_case, should_stop)
        self.keep_going = keep_going
        self.device_shared = device_shared
        self.campaign = campaign if campaign is not None else CampaignState
        #: In a campaign: the signature of the failure being shrunk now, the signatures this
        #: process reported, and failures of other signatures met while shrinking, as drawn.
        self.shrinking: str | None = None
        self.reported: set[str] = set()
        self.pending: dict[str, Failure] = {}
        #: What the implementation declares, read once: its features, its case domain (None:
        #: none declared; a decline of a case inside one is reported), compile key and known
        #: divergences.
        self.features = protocol.features_of(impl, device)
        self.domain = protocol.declared_case_domain(impl, device)
        self.compile_key = protocol.compile_key_of(impl)
        self.known_divergences = protocol.known_divergences(impl)
        #: The reasons of the single known divergences this process has seen, in any property
        #: (:meth:`rare`).
        self.causes: set[str] = set()
        #: Which turns are drawn unsteered, one in :data:`RARE_ODDS`: a stream of the run's seed.
        self.steering_odds = random.Random(f"flashcheck fuzz steering {seed}" if seed is not None else None)
        #: Cycles of turns each property still sits out (:meth:`step_back_after_known`,
        #: :meth:`sit_out_where_all_rare`), by name.
        self.sitting_out: dict[str, int] = {}
        #: The classes drawn in (:meth:`classes_drawn`) when each property was sent away by
        #: :meth:`sit_out_where_all_rare`, by name.
        self.sent_away_in: dict[str, tuple] = {}
        #: Each property's latest decided cases, by name: True for one that failed as a known
        #: divergence, False for one decided otherwise.
        self.recent: dict[str, collections.deque[bool]] = collections.defaultdict(
            lambda: collections.deque(maxlen=RECENT_CASES))
        self.chosen = [PROPERTIES[name] for name in properties] if properties else list(PROPERTIES.values())
        self.examples = crash_store.example_database(database, shared_database) if database else None
        self.result = FuzzResult()
        #: The properties taking turns, in their order; one drops out when it turns out not
        #: applicable or a known divergence of the whole property.
        self.order: list[Property] = []
        #: Failures seen so far, by (property, case spec): once time is up, these fail again at
        #: once and every other case passes, so hypothesis ends its shrink on the smallest
        #: failure seen and its final replay of it reproduces without running anything.
        self.seen: dict[tuple[str, str], PropertyFailure] = {}
        #: Cases already run and passed: every hypothesis run starts from its simplest case,
        #: which would otherwise run again at each property's every turn.
        self.passed: set[tuple[str, str]] = set()
        #: Properties whose simplest case has been set aside for the process that runs it.
        self.simplest_left_out: set[str] = set()
        #: Whether the next example of the turn running now is its first drawn one.
        self.first_drawn = False
        #: When the run started, and when shrinking, and with it the run, stops: at the
        #: budget's end, or earlier once the first failure has had ``shrink_time`` seconds.
        self.start = self.stop_shrinking_at = 0.0  # set by run()

    def run(self) -> FuzzResult:
        for prop in self.chosen:
            reason = not_applicable_because(prop, self.impl, self.device)
            if reason is not None:
                self.not_applicable(prop, reason)
        self.order = [p for p in self.chosen if p.name not in self.result.not_applicable]
        if not self.order:
            raise ValueError(f"no property applies to {self.impl_name} with features {sorted(self.features)}")
        self.start = time.monotonic()
        self.stop_shrinking_at = self.start + self.budget
        # Properties take turns, a short hypothesis run each: every property is exercised within
        # one cycle however short the budget (drawing the property at random left a third of
        # them unexercised in short runs).
        shuffler = random.Random(self.seed)
        # Each turn's hypothesis seed comes from a stream of the run's seed, not seed + turn:
        # with that, --seed 2 replayed --seed 1's turns shifted by one.
        round_seeds = random.Random(f"flashcheck fuzz rounds {self.seed}")
        # First every property replays what the database kept (earlier failures), then fuzzing.
        turns = [(prop, [Phase.reuse, Phase.shrink], self.seed) for prop in self.order]
        while not self.out_of_time() and self.order:
            if not turns:
                if self.replay_only:
                    break
                for prop in cycle(self.taking_turns(), shuffler):
                    round_seed = None if self.seed is None else round_seeds.getrandbits(64)
                    turns.append((prop, [Phase.generate, Phase.shrink], round_seed))
            prop, phases, round_seed = turns.pop(0)
            self.drop_known_elsewhere()
            if prop in self.order and not self.take_turn(prop, phases, round_seed):  # else dropped since planned
                break
        for failure in list(self.pending.values()):  # met while shrinking another, never shrunk
            if failure.signature not in self.campaign().reported | self.reported:
                self.conclude(failure)
        self.result.seconds = time.monotonic() - self.start
        return self.result

    def taking_turns(self) -> list[Property]:
        """The properties that take a turn in the next cycle: those of :attr:`order` not sitting
        out (each that does is one cycle nearer its next turn; one sent away where all its cases
        were rare comes back if the classes drawn in have changed since), or all of them where
        every one sits out."""
        classes = self.classes_drawn()
        for name in [name for name, where in self.sent_away_in.items() if where != classes]:
            del self.sent_away_in[name]
            self.sitting_out.pop(name, None)
        taking = [prop for prop in self.order if self.sitting_out.get(prop.name, 0) == 0]
        for name, cycles in self.sitting_out.items():
            self.sitting_out[name] = max(0, cycles - 1)
        return taking or list(self.order)

    def step_back_after_known(self, prop: Property) -> None:
        """After a turn of ``prop`` that decided a known divergence's case: ``prop`` sits out
        ``(RARE_ODDS - 1) * share**3`` cycles of turns (rounded), ``share`` the known share of
        its latest :data:`RECENT_CASES` decided cases (of at least :data:`FEWEST_WEIGHED`).

        Steering draws a seen divergence's cases rarely where a cheap predicate tells them apart;
        this is for where it cannot: the property's cases in this worker's compile classes lie
        where the divergence is (a property whose every case has rows without keys, under a
        divergence of such rows; the float16 dS comparison inside a float16 class). A property
        whose latest cases are all known sits out 31 cycles after each known case, so its cases
        are drawn one cycle in :data:`RARE_ODDS`, as a seen divergence's are, and never excluded.
        The cube spares a minority. Known cases of the latest 8 and the cycles sat out: 2 or
        fewer, none; 3, 2; 4, 4; 5, 8; 6, 13; 7, 21; 8, 31. Early in a run, a first, second and third
        known case in a row: 1, 9 and 31 cycles."""
        recent = self.recent[prop.name]
        share = sum(recent) / max(len(recent), FEWEST_WEIGHED)
        cycles = round((RARE_ODDS - 1) * share ** 3)
        if cycles:
            self.sitting_out[prop.name] = max(self.sitting_out.get(prop.name, 0), cycles)

    def sit_out_where_all_rare(self, prop: Property) -> None:
        """After a steered turn of ``prop`` that drew no case, or gave up (:class:`SteeringTally`):
        every case its strategy drew, or nearly, was one to draw rarely (a seen divergence's, an
        avoided class's), so where this worker draws now (its compile classes) the property's
        cases lie there, as the empty-rows properties' do under a divergence of rows without keys.
        It sits out the next ``RARE_ODDS - 1`` cycles of turns: its turns, mostly steered, would
        otherwise be spent drawing what steering rejects. Its unsteered turns (one in
        :data:`RARE_ODDS`) still draw those cases, so they are never excluded. Where the worker's
        classes change first (it widened, or left them), it comes back at once: the classes may
        have been the cause."""
        self.sitting_out[prop.name] = RARE_ODDS - 1
        self.sent_away_in[prop.name] = self.classes_drawn()

    def turn_sizes(self):
        """The sizes the next turn draws with."""
        return self.sizes() if callable(self.sizes) else self.sizes

    def classes_drawn(self):
        """Which compile classes the next turn draws in, as the sizes say (their focus)."""
        return self.turn_sizes().classes_in_focus()

    def take_turn(self, prop: Property, phases, round_seed) -> bool:
        """One hypothesis run of ``prop``; False when the run ends with it (a failure found
        outside a campaign, or a fatal error)."""
        self.first_drawn = Phase.generate in phases
        steered = self.steering_odds.randrange(RARE_ODDS) != 0
        known_before = self.result.known_cases[prop.name]
        tally = SteeringTally((lambda: self.rare(prop)) if steered else None)
        try:
            self.hypothesis_test(prop, phases, round_seed, tally)()
            if tally.looked:
                self.report(fuzz_events.SteeredTurn(prop.name, tally.mostly_rare()))
            if tally.gave_up:
                self.sit_out_where_all_rare(prop)
            if self.result.known_cases[prop.name] > known_before:
                self.step_back_after_known(prop)
        except unittest.SkipTest:
            pass  # a replay with nothing stored for that property: hypothesis ran nothing
        except StopRunning as stop:
            if stop.verdict.outcome is Outcome.FLASHCHECK_ERROR:
                raise stop.verdict.error from None
            if not stop.verdict.declared_fault:  # reported where it was met (run_case)
                self.conclude(Failure.from_verdict(stop.verdict))
            return False  # a fatal error: this process can run no further case
        except Unsatisfiable:
            if self.seen:
                raise
            if tally.found:  # steering rejected what was drawn
                self.report(fuzz_events.SteeredTurn(prop.name, mostly_rare=True))
                self.sit_out_where_all_rare(prop)
                return True
            # Every case drawn was one the property does not apply to (its `applies`
            # filter, e.g. cases that hide keys, with no band, mask or packing declared).
            self.order.remove(prop)
            self.not_applicable(prop, UNSATISFIABLE)
        except Exception as error:
            if not self.seen:
                raise
            # Hypothesis re-raises the smallest failure; anything else (a FlakyFailure when
            # a racy implementation passed on replay) reports the last failure seen.
            failure = error if isinstance(error, PropertyFailure) else list(self.seen.values())[-1]
            self.conclude(Failure.from_property_failure(failure))
            return self.keep_going
        return True

    def hypothesis_test(self, prop: Property, phases, round_seed, tally: SteeringTally):
        """The ``@given`` test of one turn of ``prop``: a fresh hypothesis run of
        :data:`ROUND_EXAMPLES` examples, drawing none of the cases ``tally`` finds rare."""

        def one_case(turn_and_case):
            if not tally.gave_up:  # else the turn is over: what it draws now ends it, unrun
                self.run_drawn(prop, turn_and_case[1])

        # One example-database key per property (hypothesis's own hook for telling apart
        # runs of one function, as its pytest plugin does for parametrized tests).
        one_case._hypothesis_internal_add_digest = prop.name.encode()
        cases = case_strategy(prop, self.features, self.turn_sizes(), domain=self.domain, compile_key=self.compile_key,
                              avoid=(tally,) if tally.steered else ())
        test = given(st.tuples(_TURN_NONCE, cases))(one_case)
        if round_seed is not None:
            test = hypothesis_seed(round_seed)(test)
        # Parented on hypothesis's default, not the active profile: under CI the active one
        # is derandomized, which drew the same examples at every unseeded turn.
        return settings(
            settings.get_profile("default"), derandomize=False, max_examples=ROUND_EXAMPLES, deadline=None,
            database=self.examples, suppress_health_check=list(HealthCheck), phases=phases, print_blob=False,
            report_multiple_bugs=False,
        )(test)

    def run_drawn(self, prop: Property, case: Case) -> None:
        """Run the example hypothesis drew, unless it is the simplest case, left to another process."""
        if self.first_drawn and self.simplest_run_elsewhere and prop.name not in self.simplest_left_out:
            # The first example of a property's first drawn turn is its simplest case; later
            # turns start from the same one, which `passed` then skips.
            self.simplest_left_out.add(prop.name)
            self.passed.add((prop.name, case.spec()))
        self.first_drawn = False
        self.run_case(prop, case)

    def run_case(self, prop: Property, case: Case) -> None:
        """Decide ``prop`` on ``case`` and act on the verdict; raise what hypothesis must see."""
        key = (prop.name, case.spec())
        if prop not in self.order:
            return  # a known divergence already seen
        if self.out_of_time():
            if key in self.seen:
                raise self.seen[key]
            return
        if key in self.passed:
            return
        verdict = self.decided(prop, case)
        if self.device_shared and verdict.out_of_memory_in_the_call:
            # Other processes hold the device's memory: once more, this process's cache given
            # back (decide does), before the case says anything about the implementation.
            verdict = self.decided(prop, case)
            if verdict.out_of_memory_in_the_call:
                self.short_of_memory(prop, key[1], f"{verdict.failure.evidence}\nreproduce: {verdict.replay}",
                                     in_the_call=True)
                return
        if verdict.outcome is Outcome.DECLINED:
            # The adapter's documented way to decline a case inside its declared features
            # that it cannot express (e.g. causal with Nq != Nk for SDPA's flash backend).
            # Inside the domain or not is the declined call's: a property's own call on one
            # batch entry's keys may lie outside it where the case lies inside.
            declined = verdict.declined_case or case
            inside = self.domain is not None and self.domain.outside_because(declined) is None
            self.result.decline(prop.name, verdict.reason, inside_domain=key[1] if inside else None)
            self.report(fuzz_events.Declined(prop.name, key[1], verdict.reason, inside_domain=inside))
            return
        if verdict.outcome is Outcome.KNOWN:
            self.known_divergence_seen(prop, verdict)
            return
        if verdict.outcome is Outcome.FAILED:
            self.recent[prop.name].append(False)
            if self.keep_going and not self.to_shrink(verdict.failure):
                return
            self.failed(verdict.failure)
            raise verdict.failure
        if verdict.declared_fault:
            self.known_divergence_seen(prop, verdict)
        if verdict.outcome is Outcome.FLASHCHECK_ERROR and verdict.error.out_of_memory:
            self.short_of_memory(prop, key[1], str(verdict.error))
            return
        if verdict.outcome in (Outcome.FATAL, Outcome.FLASHCHECK_ERROR):
            raise StopRunning(verdict)  # past hypothesis, which would shrink an Exception
        self.passed.add(key)
        self.recent[prop.name].append(False)
        kinds = case_kinds(case)
        self.result.count(prop.name, kinds, verdict.unchecked)
        self.result.seconds = time.monotonic() - self.start
        self.report(fuzz_events.Passed(prop.name, key[1], tuple(kinds), unchecked=verdict.unchecked))

    def short_of_memory(self, prop: Property, spec: str, report: str, *, in_the_call: bool = False) -> None:
        """Leave the case ``spec`` of ``prop`` unfinished, neither passed nor failed, where the
        device ran out of memory (:meth:`flashcheck.engine.fuzz_result.FuzzResult.out_of_memory`):
        counted and reported, and the run goes on, since the next case may fit."""
        self.result.out_of_memory(prop.name, spec, report, in_the_call=in_the_call)
        self.report(fuzz_events.OutOfMemory(prop.name, spec, report, in_the_call=in_the_call))

    def decided(self, prop: Property, case: Case) -> Verdict:
        """The verdict of ``prop`` on ``case``, between the ``before_case`` and ``after_case`` hooks."""
        if self.before_case is not None:
            self.before_case(prop.name, case)
        verdict = decide(prop, self.impl, case, device=self.device, impl_name=self.impl_name)
        if self.after_case is not None:
            self.after_case(verdict)
        return verdict

    def known_divergence_seen(self, prop: Property, verdict: Verdict) -> None:
        # Declared: every case counted, reported once per property. A whole-property divergence
        # gives its turns to the others; one confined to some cases leaves the property in the
        # rotation, where a failure on a case it does not cover is still a finding.
        self.result.known_cases[prop.name] += 1
        self.recent[prop.name].append(True)
        if verdict.reason:
            self.causes.add(verdict.reason)
        self.report(fuzz_events.KnownCase(prop.name, verdict.reason or ""))
        if prop.name not in {known.property for known in self.result.known}:
            known = Failure.from_verdict(verdict)
            self.result.known.append(known)
            self.report(fuzz_events.KnownDivergenceSeen(known))
        if self.divergent_throughout(prop):
            self.order.remove(prop)
        else:
            self.passed.add((prop.name, verdict.case.spec()))

    def drop_known_elsewhere(self) -> None:
        """Give away the turns of each property whose whole-property divergence has been seen by
        another process of the run, or in another property (one cause declared on the whole of
        several: a backward that is wrong on every call fails every gradient property), as
        :meth:`known_divergence_seen` does for one seen here in the property itself: its every
        case is expected to fail, and a fresh process would otherwise meet it again (a declared
        fault, again and again)."""
        campaign = self.campaign()
        seen = self.causes | campaign.causes
        for prop in [prop for prop in self.order if self.divergent_throughout(prop)]:
            whole = [part for part in self.known_divergences[prop.name].components() if part.covers is None]
            if prop.name in campaign.known or any(str(part) in seen for part in whole):
                self.order.remove(prop)

    def divergent_throughout(self, prop: Property) -> bool:
        """Whether ``prop`` has a known divergence of the whole property (not confined to some
        cases): once seen, its turns go to the other properties."""
        divergence = self.known_divergences.get(prop.name)
        return divergence is not None and not divergence.scoped

    def rare(self, prop: Property) -> tuple:
        """What ``prop``'s steered turns do not draw, and so draw rarely (one turn in
        :data:`RARE_ODDS` is unsteered): the campaign's avoided case classes, and the cases of
        each known divergence ``prop`` declares that the run has already seen (its
        ``steer``, a cheap predicate covering the cases it explains), so that a declared finding
        is not found again and again.

        A divergence counts as seen once any property of any worker has met it: one cause
        declared on many properties (a misread stride fails every property that computes
        attention) is found once, not once per property, and of several declared together only
        those seen steer, each by its own predicate."""
        predicates = []
        campaign = self.campaign()
        avoided = campaign.avoided
        if avoided:
            predicates.append(lambda case: case_class(case.spec()) in avoided)
        divergence = self.known_divergences.get(prop.name)
        if divergence is not None:
            seen = self.causes | campaign.causes  # here, or by another worker of the run
            predicates.extend(part.steer for part in divergence.components()
                              if part.steer is not None and str(part) in seen)
        return tuple(predicates)

    def to_shrink(self, failure: PropertyFailure) -> bool:
        """In a campaign, whether ``failure`` is one to shrink now: not when its signature is
        reported already (a repeat: counted) or differs from the one being shrunk (kept, see
        :func:`fuzz_in_process`)."""
        found = Failure.from_property_failure(failure)
        signature = found.signature
        if signature in self.reported or signature in self.campaign().reported:
            self.result.repeated(signature)
            self.report(fuzz_events.Repeated(signature, failure.property_name, failure.case.spec()))
            return False
        if self.shrinking is not None and signature != self.shrinking:
            self.pending.setdefault(signature, dataclasses.replace(found, shrunk=False))
            return False
        return True

    def failed(self, failure: PropertyFailure) -> None:
        """A failure, the first one found or a step of its shrinking."""
        if not self.seen:
            found = Failure.from_property_failure(failure)
            self.shrinking = found.signature
            if self.shrink_time is not None:
                self.stop_shrinking_at = min(self.stop_shrinking_at, time.monotonic() + self.shrink_time)
            self.report(fuzz_events.Found(found))
        self.seen[failure.property_name, failure.case.spec()] = failure

    def conclude(self, failure: Failure) -> None:
        """A failure reported: the one the run ends with, or in a campaign, one of its
        signature, after which fuzzing goes on with the whole budget's clock."""
        self.result.add_failure(failure, campaign=self.keep_going)
        self.report(fuzz_events.Counterexample(failure))
        self.reported.add(failure.signature)
        self.pending.pop(failure.signature, None)
        self.seen, self.shrinking = {}, None
        self.stop_shrinking_at = self.start + self.budget

    def not_applicable(self, prop: Property, reason: str) -> None:
        self.result.not_applicable[prop.name] = reason
        self.report(fuzz_events.NotApplicable(prop.name, reason))

    def out_of_time(self) -> bool:
        return time.monotonic() > self.stop_shrinking_at or self.should_stop()

    def report(self, event) -> None:
        if self.on_event is not None:
            self.on_event(event)


def cycle(properties: list[Property], shuffler: random.Random) -> list[Property]:
    """One cycle of turns: the :data:`PRIMARY` properties among ``properties`` first, then
    the others in an order drawn from ``shuffler``, each run of :data:`OTHERS_PER_PRIMARY`
    of them followed by the next primary property in rotation. Every property has a turn
    in every cycle; no other property has two."""
    primary = [p for name in PRIMARY for p in properties if p.name == name]
    others = [p for p in properties if p.name not in PRIMARY]
    shuffler.shuffle(others)
    turns = list(primary)
    for position, prop in enumerate(others, start=1):
        turns.append(prop)
        if primary and position % OTHERS_PER_PRIMARY == 0 and position < len(others):
            turns.append(primary[(position // OTHERS_PER_PRIMARY - 1) % len(primary)])
    return turns
