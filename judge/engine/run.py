"""spec → build → check → time → verdict. `evaluate()` yields events and ends with `Finished(report)`.

The parent (this process) owns the inputs, the reference outputs, the secret and the verdict.
Submitted code runs only in a worker process; baselines run in workers of their own. The build
and the workers' start-up overlap with torch's import, so a cold `judge submit` costs little
more than torch's own start.

The engine's parts, each a function or a small class of a `Session` (judge/engine/session.py):
the guards (guards.py), the parent's buffers (buffers.py), the correctness phase (correctness.py),
the timed phase (benchmarks.py); a failure anywhere is a `RunFailure` (outcome.py), blamed by the
worker's role (roles.py). `judge compare` (compare.py) builds its own session from the same parts;
`judge watch` (judge/practice/watch.py) passes a `Warm` state: a started worker and cached references.

Runtime defences (docs/security.md): poisoned outputs counted and fingerprinted on the worker's
stream right after each call (judge/gpu/integrity.py) and fingerprinted again by the parent,
guard regions after every buffer (judge/gpu/guard_regions.py), input checksums, hidden test shapes
(judge/problem/hidden.py), inputs drawn anew for every timed call (judge/engine/fresh.py), timed
outputs re-checked, times bounded by the wall clock, the roofline and the parent's own GPU stamps
(judge/engine/stamps.py), and a GPU health gate before each phase (judge/gpu/health.py). Whatever
the parent reads from a file during the run is read before any of the candidate's code runs
(`preload`): the worker's user could rewrite the file.
"""
from __future__ import annotations

import hashlib
import time
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

from judge import __version__
from judge.build import nvcc as build
from judge.build import toolchain, toolkit
from judge.build.toolchain import Prepared
from judge.contract.events import Built, Event, Finished, Stage
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine import guards
from judge.engine.benchmarks import TimedPhase
from judge.engine.correctness import cases, run_tests
from judge.engine.outcome import RunFailure
from judge.engine.rehearsal import Rehearsal
from judge.engine.roles import CANDIDATE, baseline_role
from judge.engine.session import Options, Phases, Session, Warm
from judge.engine.warmup import warm_up
from judge.gpu import device
from judge.problem.spec import Problem

__all__ = ["Options", "Phases", "RunFailure", "Warm", "default_phases", "evaluate"]


def default_phases() -> Phases:
    return Phases(correctness=run_tests, timed=TimedPhase())


def evaluate(problem: Problem, source: Path, opts: Options | None = None) -> Iterator[Event]:
    opts = opts or Options()
    source = Path(source)
    phases = opts.phases or default_phases()
    t0 = time.perf_counter()
    report = Report(problem=problem.name, solution=str(source), mode=opts.mode,
                    source_sha256=hashlib.sha256(source.read_bytes()).hexdigest(),
                    status=Status.INTERNAL_ERROR,
                    started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    s = Session(problem, opts, report)
    try:
        with s.phase("build"):
            arch = check_source(s, source)
            prepared = yield from build_and_start(s, source, arch)
        with s.phase("preload"):
            preload(s)
            rehearse(s)
        yield Stage("starting the worker")
        with s.phase("load"):
            s.load(s.candidate, prepared.load)
            warm_up(s, s.candidate, [(c.label, c.workload) for c in cases(s)], "tests")
        with s.phase("tests"):
            yield from phases.correctness(s)
        if opts.mode == "submit" and problem.spec.benchmarks:
            yield from phases.timed(s)
        report.status = Status.ACCEPTED
    except RunFailure as f:
        report.status, report.message = f.status, f.message
    finally:
        with s.phase("close"):
            s.close()
    report.wall_s = round(time.perf_counter() - t0, 3)
    yield Finished(report)


def check_source(s: Session, source: Path) -> str:
    """The GPU and the toolchain into the report's environment; the static policy on the source.
    Returns the architecture to build for."""
    s.gpu = next((g for g in device.gpus() if g.index == s.opts.device), None)
    arch = s.opts.arch or (build.arch_for(s.gpu.major, s.gpu.minor) if s.gpu else "sm_90a")
    env = s.report.environment
    env.judge, env.nvcc, env.arch = __version__, toolkit.nvcc_version(), arch
    if s.gpu:
        env.gpu, env.gpu_uuid, env.driver = s.gpu.name, s.gpu.uuid, s.gpu.driver
    try:
        lang = toolchain.for_source(source)
        env.flags = lang.flags(arch)
        s.triton = lang.worker == "triton"
        refused = lang.check_source(s.problem, source)
    except (toolchain.UnknownLanguage, OSError) as e:
        raise RunFailure(Status.INTERNAL_ERROR, str(e)) from None
    if refused:
        raise RunFailure(Status.REJECTED, refused)
    return arch


def build_and_start(s: Session, source: Path, arch: str) -> Generator[Event, None, Prepared]:
    """The build (unless prepared already), while the workers and torch start; the build's verdict."""
    yield Stage(f"building {source.name} for {arch}")
    with ThreadPoolExecutor(1) as pool:
        pending = None if s.opts.prepared else pool.submit(  # + SASS summary (not for verify's builds)
            toolchain.prepare, s.problem, source, arch, sass=s.opts.sass)
        if s.gpu:  # start the workers and torch while nvcc runs
            start_workers(s)
        prepared = s.opts.prepared or pending.result()  # type: ignore[union-attr]
    if prepared.build is not None:
        s.report.build = prepared.build
        yield Built(s.report.build)
    if prepared.status is not None:
        raise RunFailure(prepared.status, prepared.message)
    if not s.gpu:
        if s.triton:  # nothing was built: the policy and the ABI passed; the interpreter needs no GPU
            raise RunFailure(Status.INTERNAL_ERROR, "no CUDA device is available: the file passed the checks, "
                             "but judging needs an NVIDIA GPU (run `judge doctor`; `judge test FILE.py --cpu` "
                             "checks a Triton file on CPU)")
        raise RunFailure(Status.INTERNAL_ERROR, "no CUDA device is available: the build succeeded, "
                         "but judging needs an NVIDIA GPU (run `judge doctor`)")
    return prepared


def start_workers(s: Session) -> None:
    """The candidate's worker (two when the run is timed: the correctness phase's and the timed
    calls'), the baselines' (submit mode) and the parent's torch. The device's peaks are read from
    their cache first, before any worker exists."""
    guards.gate(s, "starting")  # a killed worker of an earlier run may still hold memory
    if timed(s) and s.gpu is not None:
        s.peaks = device.cached_peaks(s.gpu)
    s.candidate = s.spawn(CANDIDATE)
    if timed(s):  # the timed calls get a worker of their own (judge/engine/benchmarks.py says why)
        s.spare = s.spawn(CANDIDATE)
    if s.opts.mode == "submit":
        s.baselines = [(b, s.spawn(baseline_role(b.name), torch=True)) for b in s.problem.baselines]
        read_baselines(s)
        rehearse(s)
    s.start_torch()


def timed(s: Session) -> bool:
    return s.opts.mode == "submit" and bool(s.problem.spec.benchmarks)


def preload(s: Session) -> None:
    """Everything the parent (and the baselines' workers) will read from a file during the run, read
    now, before the candidate's library is loaded (its static constructors are its first code): the
    problem's reference and custom check (imported once, kept by judge/problem/pyfile.py), the text
    of each baseline's file (its worker executes that text, not the file), the judge's own modules
    the engine imports late, and the device's peaks (measured now when the cache had none)."""
    import judge.problem.hidden  # noqa: F401 — the judge's own modules, imported late by the engine
    from judge.problem import workloads
    from judge.problem.checks.custom import Custom

    problem = s.problem
    try:
        workloads.load_function(problem, problem.spec.reference)
        if isinstance(problem.spec.check, Custom):
            problem.spec.check.function()
    except Exception as e:  # noqa: BLE001 — the problem's files are the judge's
        raise files_failed(s, e) from None
    if s.opts.mode == "submit" and not s.baseline_sources:
        read_baselines(s)
    if timed(s) and s.peaks is None:
        s.peaks = device.peaks(s.require_gpu())


def read_baselines(s: Session) -> None:
    """The text of each baseline's file, which its worker executes (`preload` says why); read with
    the workers' start in a submit run, so that their rehearsal can begin (`rehearse`)."""
    try:
        s.baseline_sources = {b.impl: s.problem.impl_path(b.impl)[0].read_text() for b in s.problem.baselines}
    except Exception as e:  # noqa: BLE001 — the problem's files are the judge's
        raise files_failed(s, e) from None


def files_failed(s: Session, e: Exception) -> RunFailure:
    return RunFailure(Status.INTERNAL_ERROR, f"loading {s.problem.name}'s Python files: {type(e).__name__}: {e}")


def rehearse(s: Session) -> None:
    """The baselines' first calls, in threads, from here on (judge/engine/rehearsal.py): once the
    device's peaks are known (measuring them wants the GPU to itself) and the baselines' files are
    read, in a timed run whose options ask for it."""
    if (s.rehearsal is None and s.opts.rehearse and timed(s) and s.baselines and s.peaks is not None
            and s.baseline_sources):
        s.rehearsal = Rehearsal(s)
        s.rehearsal.start()
