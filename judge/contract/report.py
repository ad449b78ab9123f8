"""The report of one evaluation: typed, JSON round-trippable (`Report.model_validate_json`)."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from judge.contract.verdict import Status


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")  # NaN evidence round-trips


class Mismatch(_M):
    index: list[int]
    got: float
    expected: float


class CheckResult(_M):
    check: str
    output: str
    passed: bool
    numel: int
    n_bad: int
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    nan_count: int = 0
    inf_count: int = 0
    mismatches: list[Mismatch] = []
    message: str | None = None


class TestCase(_M):
    workload: str
    passed: bool
    checks: list[CheckResult] = []
    error: str | None = None
    hidden: bool = False


class KernelInfo(_M):
    kernel: str
    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_store_bytes: int
    spill_load_bytes: int
    sass: dict[str, int] = {}  # SASS opcode → static count (judge/build/sass.py); empty without cuobjdump


class BuildInfo(_M):
    ok: bool
    cached: bool
    seconds: float
    command: str
    arch: str
    kernels: list[KernelInfo] = []
    log_tail: str = ""
    warnings: list[str] = []  # the compiler's first warning lines (judge/build/cuda.py: MAX_WARNINGS)
    warning_count: int = 0  # all of them
    log_path: str = ""  # the compiler's whole output, on the machine that built


class Stats(_M):
    """One target's timing on one shape. The median and its CI are over the timed batches, each
    sampled as its summed time per call (docs/timing.md); `min_ms` is the fastest single call."""
    median_ms: float
    ci_low_ms: float
    ci_high_ms: float
    min_ms: float
    samples: int  # timed calls
    warmup_calls: int
    stop_reason: str  # "noise" | "budget" | "max_samples"
    batches: int = 0  # timed batches: the median's samples (0 in reports from before they were)
    held: bool | None = None  # every timed call held on the GPU until issued (None: before holds)
    host_ms: float | None = None  # median host time of solve() per timed call (the CPU's, not in median_ms)

    @property
    def ci_halfwidth_rel(self) -> float:
        return (self.ci_high_ms - self.ci_low_ms) / 2 / self.median_ms if self.median_ms else 0.0


class Telemetry(_M):
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    power_w: float | None = None
    throttle_reasons: list[str] = []


class BaselineTiming(_M):
    name: str
    before: Stats
    after: Stats
    median_ms: float  # the mean of the two medians
    drift: float  # |after - before| / before
    drift_flagged: bool
    speedup: float  # baseline median / candidate median


class BenchResult(_M):
    workload: str
    stats: Stats
    flops: float
    bytes: float
    tflops: float
    gbps: float
    floor_ms: float
    roofline_pct: float
    baselines: list[BaselineTiming] = []
    rechecked_slots: int = 0
    telemetry_before: Telemetry | None = None
    telemetry_after: Telemetry | None = None
    # The candidate's largest per-batch (Σ GPU-stamped spans - Σ reported times) / calls, in ms: how
    # much of the stamps' tolerance honest calls use (judge/engine/stamps.py). In --json only.
    stamp_excess_ms: float | None = None

    @property
    def speedup(self) -> float | None:
        return self.baselines[0].speedup if self.baselines else None


class WarmUp(_M):
    """A Triton candidate's warm-up in one worker (judge/engine/warmup.py): solve() once per
    workload while Triton compiles and autotunes, outside every timed window and every check."""
    phase: str  # "tests" (the correctness phase's worker) | "timed" (the timed calls' worker)
    workloads: int
    seconds: float  # the warm-up's wall time, the calls and the parent's buffers included
    compile_s: float  # of it, Triton compiling kernels
    tune_s: float = 0.0  # of it, the autotuner benchmarking configurations (its compiling in compile_s)
    kernels: int  # kernels compiled
    configs: int  # autotuner configurations benchmarked
    # the configuration each autotuner kept, "shape: kernel: config" (judge/worker/triton_tuned.py;
    # the submission's process says it, the parent keeps printable text only)
    tuned: list[str] = []


class Environment(_M):
    gpu: str | None = None
    gpu_uuid: str | None = None
    driver: str | None = None
    cuda_runtime: str | None = None
    nvcc: str | None = None
    torch: str | None = None
    judge: str | None = None
    arch: str | None = None
    flags: str | None = None
    peak_copy_gbps: float | None = None
    peak_tflops: float | None = None
    peak_unit: str | None = None
    confined: bool = False  # the candidate's worker ran under the seccomp sandbox (JUDGE_CONFINE)
    pid_namespace: bool = False  # ... in a pid namespace of its own (where the OS allows one: root)
    cgroup: bool = False  # ... in a cgroup of its own: host memory and tasks bounded by the kernel


class Report(_M):
    problem: str
    solution: str
    source_sha256: str
    mode: str  # "submit" | "test"
    status: Status
    message: str = ""
    build: BuildInfo | None = None
    warm_up: list[WarmUp] = []  # a Triton candidate's, per worker (empty for CUDA: nvcc's time is `build`)
    tests: list[TestCase] = []
    benchmarks: list[BenchResult] = []
    geomean_speedup: float | None = None
    baseline_name: str | None = None
    environment: Environment = Environment()
    started_at: str = ""
    wall_s: float = 0.0
    # Where the wall time went, seconds by phase in the order they ran (`Session.phase`): "build"
    # (the static check, nvcc, the workers' and torch's start beside it), "preload", "load",
    # "tests", then in submit mode "load baselines", "baselines before", "load (timed)", "candidate",
    # "baselines after"; and "close" (the workers ended). In --json only.
    phases_s: dict[str, float] = {}
    # Each baseline's first calls, one per benchmark shape, made in its worker beside the build and
    # the tests (judge/engine/rehearsal.py): seconds in that worker, by baseline. In --json only.
    rehearsal_s: dict[str, float] = {}

    @property
    def exit_code(self) -> int:
        return self.status.exit_code
