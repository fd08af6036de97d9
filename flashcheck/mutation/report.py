"""Console output of ``flashcheck mutate``: progress lines, the kill matrix and the score."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from flashcheck.mutation.mutants import ORIGINAL, MutationRun, Outcome


def make_console() -> Console:
    """A console writing to the current ``sys.stdout``, wide enough for the matrix when
    the output is not a terminal (CI logs, files)."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def _plain(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def print_progress(console: Console, outcome: Outcome, prop: str | None = None) -> None:
    """One line as each fuzz run finishes (``prop``: the one property it ran)."""
    cases = f", {outcome.cases} cases" if outcome.cases is not None else ""
    result = outcome.result
    if outcome.name == ORIGINAL and not outcome.killed and outcome.verdict != "error":
        result = "passes"
    name = f"{outcome.name} × {prop}" if prop else outcome.name
    _plain(console, f"  {name}: {result} ({outcome.seconds:.1f} s{cases})")


def print_error(console: Console, outcome: Outcome) -> None:
    _plain(console, f"error fuzzing {outcome.name}: {outcome.detail}")


def print_original_flagged(console: Console, outcome: Outcome) -> None:
    """The suite flagged the unmutated implementation: no score is meaningful."""
    console.print("[bold red]the property suite flags the unmutated implementation[/]; "
                  "a mutation score would be meaningless. Fix the kernel or the suite first.")
    _plain(console, f"killed by {outcome.result}: {outcome.evidence}")
    if outcome.case:
        _plain(console, f"case: {outcome.case}")
    if outcome.replay:
        _plain(console, f"replay: {outcome.replay}")


def what_was_checked(outcome: Outcome) -> list[str]:
    """Lines saying what a mutant's fuzz run checked (cases per property, most first; cases per
    kind; the share of case time spent compiling; the compile classes each worker drew in), where
    its result said it: why a survivor survived is often that its bug's cases were never drawn or
    never finished compiling."""
    lines = []
    if outcome.checked:
        lines.append("checked: " + ", ".join(f"{name} {count}" for name, count in _most_first(outcome.checked)))
    if outcome.kinds:
        lines.append("case kinds: " + ", ".join(f"{kind} {count}" for kind, count in _most_first(outcome.kinds)))
    if outcome.compiling is not None:
        lines.append(f"{outcome.compiling:.0%} of case time compiling")
    for worker, labels in enumerate(outcome.classes or ()):
        lines.extend(f"worker {worker} in compile class: {label}" for label in labels or ())
    return lines


def _most_first(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def print_run(console: Console, run: MutationRun) -> None:
    """The kill matrix, the score, then survivors, the mutants declared equivalent or beyond
    the suite's standard, and errors."""
    settings = run.settings
    table = Table(title=f"{run.catalogue} on {settings.device}, {settings.budget:g} s per mutant")
    for column, justify in (("mutant", "left"), ("operator", "left"), ("killed by", "left"),
                            ("seconds", "right"), ("cases", "right"), ("evidence", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for outcome in run.outcomes:
        style = {"SURVIVED": "bold red", "ERROR": "bold red", "UNCONFIRMED": "bold yellow",
                 "equivalent": "dim", "beyond standard": "dim"}.get(outcome.result)
        if outcome.unscored and outcome.killed:
            style = "bold yellow"
        table.add_row(outcome.name, outcome.operator, outcome.result, f"{outcome.seconds:.1f}",
                      "" if outcome.cases is None else str(outcome.cases), outcome.evidence or "", style=style)
    console.print(table)

    scored = [o for o in run.scored if o.verdict != "error"]
    equivalent = [o for o in run.outcomes if o.equivalent]
    beyond = [o for o in run.outcomes if o.beyond_standard]
    score = "n/a" if run.score is None else f"{run.score:.1%}"
    beyond_note = f" - {len(beyond)} beyond the suite's standard" if beyond else ""
    _plain(console, f"mutation score: {len(run.killed)}/{len(scored)} = {score} "
                    f"(killed / (mutants - {len(equivalent)} declared equivalent{beyond_note}))")
    if run.survivors:
        _plain(console, "survivors:")
        for outcome in run.survivors:
            unexercised = " [no case ran within the budget: raise --budget]" if outcome.cases == 0 else ""
            _plain(console, f"  {outcome.name} ({outcome.operator}): {outcome.bug}{unexercised}")
            for line in what_was_checked(outcome):
                _plain(console, f"    {line}")
    if run.unconfirmed:
        _plain(console, "unconfirmed (not killed: the unmutated implementation crashed, hung or failed on the same "
                        "case; a busy machine can make a slow case hang: raise --case-timeout or lower --jobs):")
        for outcome in run.unconfirmed:
            _plain(console, f"  {outcome.name}: {outcome.killed_by} on {outcome.property_name}, case {outcome.case}; "
                            f"{outcome.detail}")
    if equivalent:
        _plain(console, "declared equivalent (not scored):")
        for outcome in equivalent:
            _plain(console, f"  {outcome.name}: {outcome.equivalent}")
    if beyond:
        _plain(console, "beyond the suite's standard (not scored; as accurate as a plain implementation, "
                        "told apart by the kernel's own tests):")
        for outcome in beyond:
            _plain(console, f"  {outcome.name}: {outcome.beyond_standard}")
    for outcome in run.killed_beyond_standard:
        _plain(console, f"note: {outcome.name}, declared beyond the suite's standard, was killed by "
                        f"{outcome.result} ({outcome.evidence}); case: {outcome.case}")
    for outcome in run.wrongly_equivalent:
        _plain(console, f"WRONG EQUIVALENCE: {outcome.name} is declared equivalent but was killed by "
                        f"{outcome.result} ({outcome.evidence}); case: {outcome.case}")
    for outcome in run.errors:
        print_error(console, outcome)


#: Matrix cells: killed by the property, a crash (a fatal CUDA error included) or a hang;
#: survived; unconfirmed; error.
_CELL = {"property": "K", "crash": "C", "fatal": "C", "hang": "H"}
_MISSED = {"error": "E", "unconfirmed": "U"}


def print_property_matrix(console: Console, matrix) -> None:
    """Mutants x properties (numbered, with a legend): K killed, C crash, H hang,
    . survived, U unconfirmed, E error."""
    table = Table(title="kill matrix per property")
    table.add_column("mutant")
    for index in range(len(matrix.properties)):
        table.add_column(str(index + 1), justify="center")
    for name, row in matrix.cells.items():
        marks = []
        for prop in matrix.properties:
            cell = row[prop]
            marks.append(_CELL.get(cell.killed_by, "K") if cell.killed else _MISSED.get(cell.verdict, "."))
        table.add_row(name, *marks)
    console.print(table)
    _plain(console, "K killed by the property, C crash (or fatal CUDA error), H hang, . survived, U unconfirmed, "
                    "E error; properties:")
    for index, prop in enumerate(matrix.properties):
        _plain(console, f"  {index + 1}: {prop}")
