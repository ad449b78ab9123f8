"""GPU facts: is there one, what is it, NVML telemetry, and measured peaks (the roofline).

NVML needs no CUDA context, so `gpu_info()` answers fast on machines without a GPU. Peaks are
measured once per device with torch (a large device-to-device copy counting bytes read plus
written, and large matrix products per compute unit) and cached by GPU UUID.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass

from judge.contract.report import Telemetry
from judge.paths import cache_root


@dataclass
class GpuInfo:
    index: int
    name: str
    uuid: str
    driver: str
    major: int
    minor: int
    memory_bytes: int


def nvml():
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 — any NVML failure means "no usable GPU here"
        return None
    return pynvml


def gpus() -> list[GpuInfo]:
    """Every NVIDIA GPU NVML sees; [] when there is no driver or no device."""
    nv = nvml()
    if nv is None:
        return []
    out = []
    try:
        driver = _s(nv.nvmlSystemGetDriverVersion())
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            major, minor = nv.nvmlDeviceGetCudaComputeCapability(h)
            out.append(GpuInfo(i, _s(nv.nvmlDeviceGetName(h)), _s(nv.nvmlDeviceGetUUID(h)), driver,
                               major, minor, nv.nvmlDeviceGetMemoryInfo(h).total))
    except Exception:  # noqa: BLE001
        return out
    return out


class NotVisible(Exception):
    """The GPU asked for is hidden from this process by CUDA_VISIBLE_DEVICES."""


def cuda_index(physical: int, visible: str | None = None, all_gpus: list[GpuInfo] | None = None) -> int:
    """The CUDA (and torch) ordinal in this process of the GPU with NVML index `physical`.

    `--device N` means NVML's N everywhere in the judge: the workers get CUDA_VISIBLE_DEVICES=N,
    NVML's telemetry and health gate use N. The parent's own CUDA context sees only the devices
    its CUDA_VISIBLE_DEVICES lists (indices or UUID prefixes), renumbered from 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if visible is None:
        return physical
    found = all_gpus if all_gpus is not None else gpus()
    uuid = next((g.uuid for g in found if g.index == physical), None)
    entries = [e.strip() for e in visible.split(",")]
    for pos, e in enumerate(entries):
        if e.isdigit() and int(e) == physical:
            return pos
        if uuid and e.startswith("GPU-") and uuid.startswith(e):
            return pos
        if not (e.isdigit() or e.startswith(("GPU-", "MIG-"))):
            break  # CUDA ignores everything from the first entry it cannot parse
    raise NotVisible(f"GPU {physical} is not among this process's CUDA_VISIBLE_DEVICES={visible!r}: "
                     f"--device takes the GPU's index as nvidia-smi shows it; unset CUDA_VISIBLE_DEVICES "
                     f"or include that GPU")


def default_index(visible: str | None = None, all_gpus: list[GpuInfo] | None = None) -> int:
    """The NVML index of the GPU this process's CUDA calls 0, the judge's GPU when no `--device` is
    given: CUDA_VISIBLE_DEVICES's first entry (an index, or a UUID prefix of a GPU NVML sees), so that
    `CUDA_VISIBLE_DEVICES=3 judge submit ...` judges on GPU 3; 0 when it is unset or its first entry
    names no GPU (`cuda_index` then says what is wrong)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    first = (visible or "").split(",")[0].strip()
    if first.isdigit():
        return int(first)
    if first.startswith("GPU-"):
        found = all_gpus if all_gpus is not None else gpus()
        return next((g.index for g in found if g.uuid.startswith(first)), 0)
    return 0


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


THROTTLE_REASONS = {
    "GpuIdle": 0x1, "ApplicationsClocksSetting": 0x2, "SwPowerCap": 0x4, "HwSlowdown": 0x8,
    "SyncBoost": 0x10, "SwThermalSlowdown": 0x20, "HwThermalSlowdown": 0x40,
    "HwPowerBrakeSlowdown": 0x80, "DisplayClockSetting": 0x100,
}


def telemetry(index: int = 0) -> Telemetry:
    """Clocks, temperature, power and active clock-event (throttle) reasons, now."""
    nv = nvml()
    if nv is None:
        return Telemetry()
    t = Telemetry()
    try:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        t.sm_clock_mhz = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        t.mem_clock_mhz = nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
        t.temperature_c = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
        t.power_w = nv.nvmlDeviceGetPowerUsage(h) / 1000
        get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = get(h)
        t.throttle_reasons = [name for name, bit in THROTTLE_REASONS.items() if mask & bit]
    except Exception:  # noqa: BLE001 — telemetry is best effort; missing fields stay None
        pass
    return t


@dataclass
class Peaks:
    gpu: str
    uuid: str
    copy_gbps: float
    fp32_tflops: float
    fp16_tensor_tflops: float
    bf16_tensor_tflops: float
    fp8_tensor_tflops: float  # 0 where the GPU has no FP8 tensor cores (before sm_89)

    def tflops(self, unit: str) -> float:
        """The peak that bounds a problem's `compute:`. FP8 work on a GPU without FP8 tensor cores
        runs on its fp16 ones: their peak is its bound there."""
        return {"fp32": self.fp32_tflops, "int": self.fp32_tflops, "fp16_tensor": self.fp16_tensor_tflops,
                "bf16_tensor": self.bf16_tensor_tflops,
                "fp8_tensor": self.fp8_tensor_tflops or self.fp16_tensor_tflops}[unit]


def cached_peaks(gpu: GpuInfo) -> Peaks | None:
    """This GPU's peaks from the cache, or None (also for a cache written before a peak was added:
    then they are all measured again). The engine reads them before any submitted code runs: the
    cache is a file (docs/security.md, "Read before the candidate runs")."""
    path = cache_root() / "devices" / f"{gpu.uuid}.json"
    if path.exists():
        try:
            return Peaks(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            pass
    return None


def peaks(gpu: GpuInfo) -> Peaks:
    """Measured peaks for this GPU, from the cache or measured now (a few seconds, once)."""
    cached = cached_peaks(gpu)
    if cached is not None:
        return cached
    p = _measure(gpu)
    path = cache_root() / "devices" / f"{gpu.uuid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(p), indent=1))
    return p


def _measure(gpu: GpuInfo) -> Peaks:
    import torch

    def best_ms(fn, *args, reps: int = 20, **kwargs) -> float:
        """Fastest time of `fn(*args)` over `reps` calls after one warm-up call, resting between."""
        fn(*args, **kwargs)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*args, **kwargs)
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
            time.sleep(times[-1] / 1000)  # rest as the judge's timing does: clocks under the power cap
        return min(times)  # a peak is the best the device was seen to do

    n = 1 << 28  # 1 GiB per tensor
    x = torch.empty(n, dtype=torch.float32, device="cuda").normal_()
    y, z = torch.empty_like(x), torch.empty_like(x)
    # The faster of a copy (read 1, write 1) and an add (read 2, write 1): on an H100 the add
    # moves ~3% more bytes per second than the copy, and a roofline must not be beatable.
    copy_gbps = max(2 * n * 4 / best_ms(torch.Tensor.copy_, y, x) / 1e6,
                    3 * n * 4 / best_ms(torch.add, x, y, out=z) / 1e6)
    del x, y, z
    rates = {}
    for name, dtype, size in (("fp16", torch.float16, 8192), ("bf16", torch.bfloat16, 8192),
                              ("fp32", torch.float32, 8192)):
        a = torch.randn(size, size, device="cuda", dtype=dtype)
        b = torch.randn(size, size, device="cuda", dtype=dtype)
        tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            rates[name] = 2 * size**3 / best_ms(torch.matmul, a, b) / 1e9
        finally:
            torch.backends.cuda.matmul.allow_tf32 = tf32
        del a, b
    rates["fp8"] = _fp8_tflops(best_ms)
    torch.cuda.empty_cache()
    return Peaks(gpu.name, gpu.uuid, copy_gbps, rates["fp32"], rates["fp16"], rates["bf16"], rates["fp8"])


def _fp8_tflops(best_ms, size: int = 8192) -> float:
    """cuBLAS's e4m3 GEMM (torch._scaled_mm, bf16 out) at size³: the faster of its two accumulation
    modes (a kernel may accumulate as cuBLAS's fast mode does, and a roofline must not be beatable);
    0 where the GPU has no FP8 tensor cores or it cannot be measured here. Only fp8_gemm uses this
    peak (the fp16 one stands in for 0): a failure here must not end the measurement of the others."""
    import torch

    if torch.cuda.get_device_capability() < (8, 9):
        return 0.0
    try:
        a = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(size, size, device="cuda").to(torch.float8_e4m3fn)  # used as b.t(): column-major
        one = torch.ones((), device="cuda")
        out = torch.empty(size, size, dtype=torch.bfloat16, device="cuda")
        ms = min(best_ms(torch._scaled_mm, a, b.t(), one, one, out_dtype=torch.bfloat16, use_fast_accum=fast,
                         out=out) for fast in (False, True))
    except Exception:  # noqa: BLE001 — no FP8 GEMM in this cuBLAS or torch: the fp16 peak bounds FP8 work
        return 0.0
    return 2 * size**3 / ms / 1e9
