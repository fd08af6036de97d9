"""Console output of the fuzzer: a live progress display and the final summary."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from flashcheck.engine.fuzz_result import OUT_OF_MEMORY, OUT_OF_MEMORY_IN_THE_CALL

console = Console()


class FuzzProgress:
    """A progress bar over the time budget with cases per second and what was exercised."""

    def __init__(self, impl_name: str, device: str, budget: float, workers: int = 1):
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[coverage]}"),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task(
            f"fuzzing {impl_name} on {device} ({workers} worker{'s' if workers > 1 else ''})",
            total=budget, rate="", coverage="",
        )

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        return self._progress.__exit__(*exc)

    def update(self, result) -> None:
        rate = result.cases / result.seconds if result.seconds > 0 else 0.0
        coverage = f"{len(result.by_property)} properties, {len(result.by_kind)} case kinds"
        self._progress.update(
            self._task, completed=result.seconds, rate=f"{result.cases} cases ({rate:.1f}/s)", coverage=coverage
        )


def print_fuzz_result(result, impl_name: str, device: str, *, shrunk: bool = True) -> None:
    """The summary table and, if one was found, the counterexample with its replay line;
    ``shrunk``: whether a property failure was shrunk (else it is labelled as drawn).
    Crash and hang reports of one outcome on one case print once, with their count.

    The headline with the counts is a line of its own, never wrapped (a table's title
    wraps at the table's width, which split "0 cases" over two lines)."""
    console.print(f"{impl_name} on {device}: {result.cases} cases in {result.seconds:.1f} s", soft_wrap=True,
                  highlight=False, style="bold")
    if result.case_domain is not None:
        from flashcheck.cases import domain as case_domain  # imports no torch

        console.print(f"case domain: {case_domain.parse(result.case_domain).describe()}", markup=False,
                      highlight=False, soft_wrap=True)
    if result.compile_key is not None:
        console.print(f"compile key: {', '.join(result.compile_key) or 'none (nothing compiled per case)'}",
                      markup=False, highlight=False, soft_wrap=True)
    if result.autotuners:
        console.print(f"autotuners pinned (one configuration per compiled variant, chosen from the call): "
                      f"{', '.join(result.autotuners)}", markup=False, highlight=False, soft_wrap=True)
    if result.counterexamples is not None:
        recorded = result.counterexamples
        console.print(f"recorded counterexamples: {recorded['run_first']} of {recorded['file']} run first"
                      + (f" ({recorded['not_run']} for other devices or properties, not run)"
                         if recorded["not_run"] else ""), markup=False, highlight=False, soft_wrap=True)
    pace = _pace(result)
    if pace:
        console.print(pace, highlight=False, soft_wrap=True)
    known = sum(result.known_cases.values())
    if known:
        share = 100 * result.known_share()
        console.print(f"known divergences: {known} of {result.checked} cases checked ({share:.1f}%)",
                      highlight=False, soft_wrap=True)
    table = Table()
    table.add_column("property")
    table.add_column("cases", justify="right")
    for name, count in sorted(result.by_property.items()):
        table.add_row(name, str(count))
    console.print(table)
    if result.declined:
        console.print(f"{result.declined} cases declined by the implementation (NotImplementedError), "
                      f"not checked:", highlight=False)
        for name, reasons in sorted(result.declined_by_property.items()):
            for reason, count in reasons.most_common():
                console.print(f"  {name}: {count} declined: {reason}", markup=False, highlight=False, soft_wrap=True)
    for entry in result.declined_inside_domain:
        console.print(f"[bold red]declined inside the declared case domain[/] ({entry['count']} cases of "
                      f"{entry['property']}): the implementation's flashcheck_case_domain is wrong; it declined "
                      f"{escape(repr(entry['case']))}: {escape(entry['reason'])}", highlight=False, soft_wrap=True)
    for what, counts in result.not_checked.items():
        console.print(f"[bold yellow]not checked[/] on {sum(counts.values())} passed cases "
                      f"({', '.join(sorted(counts))}): {escape(what)}", highlight=False, soft_wrap=True)
    never = result.never_checked()
    if never:
        console.print(f"[bold red]never checked[/] (every case declined): {', '.join(never)}", highlight=False,
                      soft_wrap=True)
    if result.not_applicable:
        count = len(result.not_applicable)
        console.print(f"{count} propert{'y' if count == 1 else 'ies'} not applicable to {impl_name}, not run:",
                      markup=False, highlight=False)
        by_reason: dict[str, list[str]] = {}
        for name, reason in sorted(result.not_applicable.items()):
            by_reason.setdefault(reason, []).append(name)
        for reason, names in sorted(by_reason.items()):
            console.print(f"  {reason}: {', '.join(names)}", markup=False, highlight=False, soft_wrap=True)
    # A worker that finished no case and was running none at the end never began one: its whole
    # budget went to loading the implementation or drawing (say, building its compile classes).
    running = {entry.get("worker") for entry in result.unfinished}
    idle = {worker["worker"] for worker in result.workers if worker["cases"] == 0 and worker["worker"] not in running}
    if len(result.workers) > 1 or idle or any(worker["processes"] > 1 for worker in result.workers):
        for worker in result.workers:
            note = ", began no case: loading the implementation or drawing" if worker["worker"] in idle else ""
            console.print(f"worker {worker['worker']}: {worker['cases']} cases on {worker['device']}"
                          f" ({worker['processes']} process{'es' if worker['processes'] > 1 else ''}){note}",
                          highlight=False)
            for label in worker.get("classes") or ():
                console.print(f"  in compile class: {label}", markup=False, highlight=False, soft_wrap=True)
    if result.by_kind:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(result.by_kind.items()))
        console.print(f"case kinds: {kinds}", highlight=False)
    for entry in result.stale:
        console.print(f"stale entry in {entry['store']}, not replayed: {entry['property']} on {entry['case']} "
                      f"({entry['problem']})", markup=False, highlight=False, soft_wrap=True)
    when = ("by the interrupt" if result.interrupted else "when flashcheck's own code failed"
            if result.flashcheck_error else "at the end of the budget")
    for case in result.unfinished:
        if case.get("reason") is None:
            console.print(f"stopped {when} after {case['running_for']} s, unfinished "
                          f"(neither passed nor failed): {case['property']} on {case['case']}", highlight=False)
    for reason in (OUT_OF_MEMORY, OUT_OF_MEMORY_IN_THE_CALL):
        short_of_memory = [case for case in result.unfinished if case.get("reason") == reason]
        if short_of_memory:
            first = short_of_memory[0]
            console.print(f"[bold yellow]{len(short_of_memory)} case{'s' if len(short_of_memory) > 1 else ''} "
                          f"unfinished[/] (neither passed nor failed): {reason}, where other workers share "
                          f"the device; the first: {escape(first['property'])} on {escape(first['case'])} "
                          f"({escape(first['error'])})",
                          highlight=False, soft_wrap=True)
    for failure in result.known:
        workers = f" (by {failure.count} worker processes)" if failure.count > 1 else ""
        console.print(f"[bold yellow]known divergence seen{workers} (expected, not a finding):[/]")
        console.print(str(failure), markup=False, highlight=False, soft_wrap=True)
    distinct = result.distinct()
    if len(distinct) > 1:
        console.print(f"[bold red]{len(distinct)} distinct failures[/] (by signature: kind | property | what failed "
                      f"| case class):", highlight=False)
        for failure, count in distinct:
            console.print(f"  {count} × {failure.signature}", markup=False, highlight=False, soft_wrap=True)
    for failure, count in distinct:
        times = f" ({count} times)" if count > 1 else ""
        if failure.kind == "property":
            drawn = not shrunk or failure.shrunk is False
            title = ("counterexample (shrunk by an earlier run sharing the database)" if failure.shrunk_elsewhere
                     else "counterexample (as drawn, not shrunk)" if drawn else "counterexample (shrunk)") + times
        elif failure.kind == "fatal":
            title = "fatal error (the worker could run no further case; not shrunk)" + times
        else:
            title = f"{failure.kind} of a worker process" + times
        console.print(f"[bold red]{title}:[/]")
        console.print(str(failure), markup=False, highlight=False, soft_wrap=True)
        if failure.script is not None:
            console.print(f"standalone script: {failure.script}", markup=False, highlight=False, soft_wrap=True)
    if result.flashcheck_error:
        console.print(f"[bold red]flashcheck's own code failed[/] after {result.seconds:.1f} s (a bug in flashcheck, "
                      f"not a finding; its traceback follows): the run ended before its budget, and this is what "
                      f"it found until then", highlight=False)
    elif result.interrupted:
        console.print(f"[bold yellow]interrupted[/] after {result.seconds:.1f} s: the run ended before its budget, "
                      f"and this is what it found until then", highlight=False)
    elif not result.found and not result.checked_anything:
        console.print("[bold red]nothing was checked[/]: no case passed or failed"
                      + (f" ({result.declined} declined)" if result.declined else ""), highlight=False)
    elif not result.found:
        console.print(f"[bold green]no counterexample[/] in {result.cases} cases")


def _pace(result) -> str:
    """One line on the run's speed where it timed its cases: cases/s over the first minute
    and after it, the share of case time spent compiling, the shares of its phases (:mod:`flashcheck.cases.phases`), and how many
    compile classes the workers drew in by the end (:mod:`flashcheck.engine.focus`)."""
    first, after = result.rate(0, 60), result.rate(60)
    if first is None:
        return ""
    parts = [f"{first:.2f} cases/s in the first minute"]
    if after is not None:
        parts.append(f"{after:.2f} after it")
    share = result.compile_share
    if share is not None:
        parts.append(f"{share:.0%} of case time compiling")
    if result.phase_seconds and result.case_seconds > 0:
        from flashcheck.cases.phases import PHASES  # imports no torch

        shares = [f"{name} {result.phase_seconds.get(name, 0.0) / result.case_seconds:.0%}" for name in PHASES]
        checking = 1 - sum(result.phase_seconds.values()) / result.case_seconds
        parts.append(f"case time: {', '.join(shares)}, checking {max(checking, 0):.0%}")
    classes = [w["compile_classes"] for w in result.workers if w.get("compile_classes") is not None]
    if classes:
        span = f"{min(classes)}" if min(classes) == max(classes) else f"{min(classes)}-{max(classes)}"
        parts.append(f"{span} compile class{'es' if max(classes) > 1 else ''} per worker")
    return "pace: " + ", ".join(parts)
