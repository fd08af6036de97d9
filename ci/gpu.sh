#!/usr/bin/env bash
# GPU CI, sized to finish in 10 minutes on one fresh H100 from a cold compile cache. Stages,
# run in order and each timed ($FLASHCHECK_GPU_STAGES, default "unit baseline properties fuzz
# bench"):
#   unit        the unit tests whose outcome depends on the device, the gpu-marked ones
#               included; those marked device_independent (flashcheck's own bookkeeping, the
#               same on any device: tests/conftest.py) are left to CPU CI, which runs them all;
#   baseline    the project kernel's regression tolerances (flashcheck baseline check against
#               ci/baselines/flash-cuda.json);
#   properties  the derandomized gate: the property suite on the project kernel under the
#               hypothesis profile $FLASHCHECK_HYPOTHESIS_PROFILE (default ci: the same 25
#               examples per property on every run), each property split over
#               $FLASHCHECK_GPU_SHARDS tests (default 2) so the long backward ones spread over
#               the workers; the project kernel's suite runs in the unit tests' pytest call,
#               and the baseline check beside it;
#   fuzz        unseeded exploration: flashcheck fuzz of the project kernel for
#               $FLASHCHECK_GPU_FUZZ_BUDGET seconds (default 240) with a seed drawn at run time,
#               so every CI run sees new cases; a counterexample fails the job and is printed
#               with its replay line (result: $FLASHCHECK_GPU_OUT/fuzz.json). It runs beside
#               the test stages on a quarter of the workers ($FLASHCHECK_GPU_FUZZ_WORKERS), the
#               tests on the rest: both are mostly compiling on the CPU, and the tests' long
#               last shards leave cores idle that a stage after them would not use;
#   bench       the project kernel's speed benchmarks, gated against a reference run (an
#               earlier run of the benchmarks), and their report in $FLASHCHECK_GPU_OUT/bench.
# FLASHCHECK_GPU_IMPLS names the implementations whose property suite runs instead of the
# project kernel's (e.g. "flash flex"), or "all" for every one that runs on this machine (a
# survey of the peers; not the default, since a peer's fault in a new torch is not this
# project's failure). Each implementation's property suite runs in a pytest process of its
# own, so that a peer which faults with a sticky CUDA error cannot poison the others. Each
# pytest process runs pytest-xdist workers, one per CPU core up to 16 and at least one per
# GPU (flashcheck.engine.placement.default_worker_count), since compiling kernel variants, not
# the GPU, is the cost of a test run; flashcheck's pytest plugin pins worker gwN to GPU N mod
# count. Uses the torch and triton already installed and installs flashcheck itself without
# touching them.
# Extra arguments go to every pytest call but the benchmarks' (e.g. -n 4 to override the
# worker count). Benchmarks: $FLASHCHECK_BENCH_PEERS=1 measures the peers in the same run, for
# the comparison table (about 15 minutes more on an H100); $FLASHCHECK_BENCH_SELECT, if set, is
# a further -k expression; $FLASHCHECK_BENCH_REFERENCE, a pytest-benchmark JSON (.json or
# .json.gz): the reference run to gate against instead of the storage's latest run. Without it,
# an H100 whose storage holds no saved run is gated against ci/bench-reference-h100.json.gz
# (the gated part of one run of this job on a fresh H100: docs/kernel-development.md).
# Measured durations: docs/performance.md ("How long CI takes on a GPU").
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-build-isolation --no-deps -e . || exit 2
default_profile="${FLASHCHECK_HYPOTHESIS_PROFILE:-ci}"
out="${FLASHCHECK_GPU_OUT:-.flashcheck/gpu}"
mkdir -p "$out"
# Test runs are mostly Triton compiling kernel variants, single-threaded CPU work: one pytest
# worker per core (at most 16, at least one per GPU) overlaps it; the workers share the GPUs
# in turn. The count is flashcheck's own rule, as its fuzzer and pytest plugin apply it; the
# same rule in shell only where flashcheck cannot be asked. FLASHCHECK_GPU_WORKERS overrides it.
# GPUs counted by torch (it honours CUDA_VISIBLE_DEVICES, as the workers will), in the same
# process: importing torch on a fresh machine takes seconds.
read -r gpus auto_workers < <(python3 -c 'from flashcheck.engine import placement
gpus = len(placement.visible_gpus()); print(gpus, placement.default_worker_count(16, gpus=gpus))' 2>/dev/null)
gpus="${gpus:-0}"
workers="${FLASHCHECK_GPU_WORKERS:-$auto_workers}"
if [ -z "$workers" ]; then
    cores=$(nproc 2>/dev/null || echo 1)
    workers=$(( cores < 16 ? cores : 16 ))
fi
[ "$workers" -lt "${gpus:-0}" ] && workers="$gpus"
stages=" ${FLASHCHECK_GPU_STAGES:-unit baseline properties fuzz bench} "
# The fuzz stage's share of the workers, taken from the tests' (see the stages above).
fuzz_workers=0
if [[ "$stages" == *" fuzz "* ]]; then
    fuzz_workers="${FLASHCHECK_GPU_FUZZ_WORKERS:-$(( workers / 4 > 1 ? workers / 4 : 1 ))}"
    [ "$workers" -gt "$fuzz_workers" ] && workers=$(( workers - fuzz_workers ))
fi
spread=()
if [ "$workers" -gt 1 ] && python3 -c 'import xdist' 2>/dev/null; then
    spread=(-n "$workers" --dist worksteal)
fi
# With pytest-reportlog (the dev extra), each pytest call also writes every test's report as
# the test finishes, to $out/NAME-reports.jsonl: a run cut short (a job's time limit) still
# tells which tests failed and why, where pytest's own summary comes only at the end.
have_reportlog=0
python3 -c 'import pytest_reportlog' 2>/dev/null && have_reportlog=1
reports=()
report_log() {  # NAME: sets reports to the --report-log arguments of one pytest call
    reports=()
    [ "$have_reportlog" = 1 ] && reports=(--report-log "$out/$1-reports.jsonl")
    return 0
}
echo "== $gpus GPU(s); pytest ${spread[*]:-without xdist}"
stage() {
    [[ "$stages" == *" $1 "* ]] || return 1
    echo "== stage $1 (elapsed ${SECONDS}s)"
}
status=0
has_stage() { [[ "$stages" == *" $1 "* ]]; }
impls="${FLASHCHECK_GPU_IMPLS:-flash}"
[ "$impls" = all ] && impls="flash sdpa-math sdpa-flash sdpa-efficient sdpa-cudnn flex"
shards="${FLASHCHECK_GPU_SHARDS:-2}"
# The regression-tolerance check runs beside the tests, in processes of its own: both are
# mostly compiling, and together they keep the cores busier than one after the other
# (the tests' long last shards leave cores idle).
fuzz_pid=
if stage fuzz; then
    # No --seed: a seed is drawn at run time and printed, so each run explores new cases and
    # a counterexample's replay line reproduces it. Exit 1 (found) or 3 (nothing checked)
    # fails the job.
    budget="${FLASHCHECK_GPU_FUZZ_BUDGET:-240}"
    echo "== unseeded fuzzing of the project kernel, $budget s on $fuzz_workers workers, beside the tests"
    flashcheck fuzz --impl flash --device cuda --budget "$budget" --workers "$fuzz_workers" --json "$out/fuzz.json" \
        --database "$out/fuzz-examples" > "$out/fuzz.log" 2>&1 &
    fuzz_pid=$!
fi
baseline_pid=
if stage baseline; then
    echo "== regression tolerances of the project kernel (ci/baselines/flash-cuda.json), beside the tests"
    flashcheck baseline check --impl flash --device cuda > "$out/baseline.log" 2>&1 &
    baseline_pid=$!
fi
# The project kernel's property suite joins the unit tests' pytest call, so that its long
# backward shards and the unit tests share the workers; other implementations each get a
# pytest process of their own below.
joined=0
if stage unit; then
    targets=(--ignore=tests/test_properties.py)
    if has_stage properties && [[ " $impls " == *" flash "* ]]; then
        joined=1
        targets=(--flashcheck-impl flash --flashcheck-shards "$shards" --flashcheck-ratio-log "$out/ratios.jsonl")
        echo "   (with the property suite on flash)"
    fi
    report_log unit
    python3 -m pytest -q -rfExX -m "not device_independent" "${targets[@]}" --flashcheck-profile "$default_profile" \
        --junitxml="$out/unit.xml" "${reports[@]}" "${spread[@]}" "$@" || status=1
fi
if stage properties; then
    for impl in $impls; do
        [ "$impl" = flash ] && [ "$joined" = 1 ] && continue
        echo "== property suite on $impl"
        profile="$default_profile"
        impl_shards="$shards"
        quiet=()
        impl_spread=("${spread[@]}")
        if [ "$impl" = flex ]; then
            # Compiled FlexAttention compiles anew for every shape (5-60 s each): a few
            # unshrunk cases only; and without pytest's log capture, which buried a failure's
            # report under torch's compile-time debug records. Unsplit: smoke's 5 examples,
            # split 4 ways, would be 8 (each shard's share is rounded up).
            profile=smoke
            impl_shards=1
            quiet=(-p no:logging)
            # At most 8 workers: two runs with 16 failed most of its properties (before the
            # adapter chose flex's standard kernel, perhaps the cause; not retried since),
            # where runs with 8 have passed all but one flaky case.
            [ "$workers" -gt 8 ] && [ ${#spread[@]} -gt 0 ] && impl_spread=(-n 8 --dist worksteal)
        fi
        report_log "$impl"
        python3 -m pytest -q -rfExX tests/test_properties.py --flashcheck-impl "$impl" --flashcheck-profile "$profile" \
            --flashcheck-shards "$impl_shards" \
            --flashcheck-ratio-log "$out/ratios.jsonl" --junitxml="$out/$impl.xml" "${reports[@]}" "${quiet[@]}" "${impl_spread[@]}" "$@" || status=1
    done
fi
if [ -n "$baseline_pid" ]; then
    wait "$baseline_pid" || status=1
    echo "== regression tolerances (elapsed ${SECONDS}s):"
    tail -n 5 "$out/baseline.log"
fi
if [ -n "$fuzz_pid" ]; then
    wait "$fuzz_pid" || status=1
    echo "== unseeded fuzzing (elapsed ${SECONDS}s):"
    tail -n 40 "$out/fuzz.log"
fi
if ! stage bench; then
    echo "== done in ${SECONDS}s, exit $status"
    exit $status
fi
echo "== speed benchmarks (tests/benchmarks; report: $out/bench/bench.md)"
# One process on one GPU: without xdist, under which pytest-benchmark disables itself, and
# without the extra arguments (they may be -n). When pytest-benchmark's storage holds a run
# saved on this kind of machine (.benchmarks/<machine id>/NNNN_*.json, by --benchmark-save),
# the run is compared with the latest one and fails if any gated benchmark's fastest round
# is more than 10% slower (the host-bound ones are not gated: see below).
# FLASHCHECK_BENCH_SAVE=NAME saves the gated part there as the next reference run.
# The gate is on the project kernel only by default: a peer that a torch upgrade slows down
# is not this project's regression.
storage="${FLASHCHECK_BENCH_STORAGE:-.benchmarks}"
machine=$(python3 -c 'from pytest_benchmark.utils import get_machine_id; print(get_machine_id())' 2>/dev/null || true)
reference="${FLASHCHECK_BENCH_REFERENCE:-}"  # the reference run to gate against
if [ -z "$reference" ] && [ "$storage" = .benchmarks ] \
    && ! compgen -G "$storage/$machine/[0-9][0-9][0-9][0-9]_*.json" >/dev/null \
    && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | grep -q 'H100' \
    && [ -f ci/bench-reference-h100.json.gz ]; then
    # A fresh H100 runner: gate against the recorded run of the kernel.
    reference=ci/bench-reference-h100.json.gz
fi
if [ -n "$reference" ]; then
    # A run saved elsewhere (same kind of GPU) becomes run 0001 of a storage of this run's
    # own, under the working directory: pytest-benchmark fails on a storage outside it when
    # it reports that the machines differ.
    storage=.flashcheck/bench-reference
    rm -rf "$storage" && mkdir -p "$storage/$machine"
    case "$reference" in
        *.gz) gzip -dc "$reference" > "$storage/$machine/0001_reference.json" || exit 2 ;;
        *) cp "$reference" "$storage/$machine/0001_reference.json" || exit 2 ;;
    esac
    echo "gating against the reference run $reference"
fi
bench_args=(--benchmark-storage "$storage")
gated_args=()
if [ -n "$machine" ] && compgen -G "$storage/$machine/[0-9][0-9][0-9][0-9]_*.json" >/dev/null; then
    gated_args+=(--benchmark-compare --benchmark-compare-fail=min:10%)
else
    echo "no saved run of this machine kind in $storage: benchmarks not gated"
fi
if [ -n "${FLASHCHECK_BENCH_SAVE:-}" ]; then
    gated_args+=(--benchmark-save "$FLASHCHECK_BENCH_SAVE")
fi
select="${FLASHCHECK_BENCH_SELECT:-}"
if [ "${FLASHCHECK_BENCH_PEERS:-0}" != 1 ]; then
    # Test ids end in the provider: "-flash]" is the project kernel, "-sdpa-flash]" a peer.
    select="${select:+($select) and }flash and not sdpa"
fi
if [ -n "$select" ]; then
    bench_args+=(-k "$select")
fi
# What else this machine was doing: host-bound timings follow it (see below).
echo "host load before the benchmarks (1, 5, 15 min): $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
ps -eo pcpu=,etime=,comm= --sort=-pcpu 2>/dev/null | head -n 5 | sed 's/^/  busiest: /'
rm -f "$out/bench.json" "$out/bench-host-bound.json"
bench_part() {  # NAME MARKER-EXPRESSION PYTEST-ARGS...: one part's JSON and junit in $out
    local name=$1 markers=$2; shift 2
    python3 -m pytest -q -rs -p no:xdist tests/benchmarks -m "$markers" --junitxml="$out/$name.xml" \
        --benchmark-json "$out/$name.json" "$@"
    local code=$?
    [ $code -eq 5 ] && echo "($name: no benchmark selected)" && return 0  # pytest: nothing collected
    return $code
}
# The gated part: every benchmark but the host-bound ones.
bench_part bench "speed and not host_bound" "${bench_args[@]}" "${gated_args[@]}" || status=1
# The host-bound part (flashcheck.bench.host_bound: forward+backward at 512 tokens, 1K
# causal), measured and reported but not gated: queueing one forward+backward costs the
# host about as long as the GPU takes to run it, so these timings follow the host's speed,
# which varied by up to half between two runs minutes apart on one H100 machine.
bench_part bench-host-bound "speed and host_bound" "${bench_args[@]}" || status=1
parts=()
for part in bench bench-host-bound; do
    [ -s "$out/$part.json" ] && parts+=("$out/$part.json")
done
if [ ${#parts[@]} -gt 0 ]; then
    flashcheck bench-report "${parts[@]}" --out "$out/bench" || status=1
else
    echo "no benchmark JSON was written"; status=1
fi
echo "== done in ${SECONDS}s, exit $status"
exit $status
