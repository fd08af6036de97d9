"""Running a corpus in worker processes: the cases are independent, and compiling is the cost.

On a GPU a corpus run is dominated by compiling kernel variants, not by running them: the
``cuda`` baseline corpus compiles about a hundred (three dtypes x three head dims x masks,
packing and bands, forward and backward) and measured eleven minutes in one process on an
H100, under two with the compiled kernels cached. Compilation is single-threaded CPU work,
so ``jobs`` spawned processes, each measuring whole cases, overlap it; Triton's on-disk
cache is shared and written atomically, so workers that meet the same variant only repeat
work, never corrupt it.

Results do not depend on which process measured a case: inputs are drawn on the CPU from
the case's seed, and the measurement is :func:`flashcheck.regress.corpus.run_case` either way. With
``device`` ``"cuda"`` the workers take the GPUs in turn: worker ``i`` is pinned to visible GPU
``i mod count`` through ``CUDA_VISIBLE_DEVICES``, set before it initialises CUDA
(:mod:`flashcheck.engine.placement`), and sees it as ``cuda:0``. A device with an index
(``"cuda:1"``) names one GPU for every worker, which are then left unpinned.

Workers are spawned (CUDA does not survive ``fork``) and re-resolve the implementation by
its name (:func:`flashcheck.peers.resolve`), so only names and case specs cross the
process boundary; this module initialises no CUDA in the parent.
"""

from __future__ import annotations

import functools
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from flashcheck.engine import placement
from flashcheck.oracle.compare import replay_command
from flashcheck.regress import corpus as corpora

#: The most worker processes ``default_jobs`` picks: beyond this the GPU, not the compiler, is
#: the limit, and each worker holds a CUDA context and the corpus's largest case in memory.
MAX_DEFAULT_JOBS = 8


class WorkerDied(RuntimeError):
    """A worker process died (a segfault, an abort, a CUDA fault that killed it) while
    measuring one of the cases still in flight; the message lists them."""


def default_jobs(device) -> int:
    """Workers for ``device`` when the user names none: one per CPU core this process may
    use, up to :data:`MAX_DEFAULT_JOBS`, on a GPU
    (:func:`flashcheck.engine.placement.default_worker_count`); 1 on the CPU, where the interpreter
    itself is the cost and the test suite already spreads over the cores."""
    if str(device).startswith("cuda"):
        return placement.default_worker_count(MAX_DEFAULT_JOBS)
    return 1


def measure_corpus(impl_name: str, corpus: corpora.Corpus, device, *, jobs: int, elementwise: bool = False,
        on_case=None) -> list[corpora.CaseResult]:
    """Measure every case of ``corpus`` with the implementation named ``impl_name``, ``jobs``
    cases at a time, each in a spawned process; results in corpus order.

    The same contract as :func:`flashcheck.regress.corpus.measure_corpus` (skips, exceptions propagating,
    ``on_case(index, result)`` after each case, here in completion order); ``jobs=1`` runs
    it in this process. ``elementwise`` ratios come back as CPU tensors. Raises
    :class:`WorkerDied` when a worker process dies.
    """
    if jobs < 1:
        raise ValueError(f"jobs: expected at least 1, got {jobs}")
    if jobs == 1 or len(corpus.cases) <= 1:
        from flashcheck import peers

        return corpora.measure_corpus(peers.resolve(impl_name), corpus, device, elementwise=elementwise,
                                      on_case=on_case)
    context = multiprocessing.get_context("spawn")
    counter = context.Value("i", 0)
    # The GPUs are counted here (no CUDA context needed); each worker pins itself before its CUDA starts.
    gpus = placement.visible_gpus() if str(device) == "cuda" else []
    results: list = [None] * len(corpus.cases)
    with ProcessPoolExecutor(max_workers=min(jobs, len(corpus.cases)), mp_context=context, initializer=_start_worker,
                             initargs=(counter, gpus)) as pool:
        futures = {pool.submit(_measure, impl_name, case.spec(), str(device), elementwise): index
                   for index, case in enumerate(corpus.cases)}
        for future in as_completed(futures):
            index = futures[future]
            try:
                outputs, skipped, raised = future.result()
            except BrokenProcessPool:
                unfinished = [case for case, result in zip(corpus.cases, results) if result is None]
                raise WorkerDied(
                    f"a worker process died measuring {impl_name} on one of the {len(unfinished)} cases still in "
                    "flight; replay them one by one:\n" + "\n".join(
                        "  " + replay_command(impl_name, "out_matches_reference", case.spec()) for case in unfinished)
                ) from None
            results[index] = corpora.CaseResult(corpus.cases[index], outputs, skipped, raised)
            if on_case is not None:
                on_case(index, results[index])
    return results


def _start_worker(counter, gpus: list[str]) -> None:
    """Worker initialiser, run before the worker initialises CUDA: take the next worker
    number and pin this process to that number's GPU among ``gpus``, the GPUs the parent saw
    (:func:`flashcheck.engine.placement.worker_pin`). Without GPUs the environment is left as
    inherited."""
    with counter.get_lock():
        number = counter.value
        counter.value += 1
    placement.pin_this_process(placement.worker_pin(number, gpus))


@functools.cache
def _implementation(name: str):
    from flashcheck import peers

    return peers.resolve(name)


def _measure(impl_name: str, spec: str, device: str, elementwise: bool):
    """In a worker: ``(outputs, skipped, raised)`` of :func:`flashcheck.regress.corpus.run_case` on the case
    ``spec`` describes (the parent keeps its own Case object)."""
    from flashcheck.cases.case import Case

    result = corpora.run_case(_implementation(impl_name), Case.from_spec(spec), device, elementwise=elementwise)
    return result.outputs, result.skipped, result.raised
