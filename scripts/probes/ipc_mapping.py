"""Does the way the judge shares its buffers change a kernel's time? (issue 17 (a) and (b))

    python3 scripts/probes/ipc_mapping.py [PROBLEM LIBRARY.so|baseline ...]

The judge's parent allocates every buffer with cudaMalloc (judge/gpu/devmem.py) and each worker
maps it with cudaIpcOpenMemHandle (judge/gpu/cudart.py). For each case below, on every benchmark
shape of its problem, this times one call six ways in one child process, with CUDA events after
an L2 flush (a read of 256 MiB: a float32 sum; until 2026-11-29 13:00 UTC a uint8 sum, which torch
does by first writing 2 GiB of int64), rounds interleaved, the median of ROUNDS:
  - own:  buffers the child allocated itself (cudaMalloc of the tensor's bytes), as in a CUDA-graph
          replay or `judge profile`;
  - own+guard: the child's own cudaMalloc of the judge's size (the bytes and the guard region:
          guard_regions.padded), not a multiple of 2 MiB;
  - ipc:  the parent's buffers (DeviceBuffers, that size) mapped through CUDA IPC, as the judge's
          workers see them;
  - ipc 2 MiB: the same through IPC, the parent's cudaMalloc rounded up to a multiple of 2 MiB;
  - vmm:  the parent's buffers made with the driver's virtual memory API (cuMemCreate, exported as a
          POSIX file descriptor) and mapped in the child with cuMemMap;
  - torch: tensors from torch's caching allocator in the child (torch.empty), as fair_timing.py's
          CUDA-graph replays and the probes that time torch calls have them.
All of them hold the same input bytes (drawn once by the problem's generators); the outputs must agree.
Cases: transpose's baseline `B.copy_(A.t())` always; then each PROBLEM LIBRARY.so pair: solve() of a
native model answer (built as `judge` builds it, e.g. nvcc -O3 -gencode arch=compute_90a,code=sm_90a
-shared -Xcompiler -fPIC FILE.cu -o FILE.so), or PROBLEM baseline: the problem's first baseline,
called as the baseline worker calls it (every parameter by name). Prints a markdown table.
"""
from __future__ import annotations

import ctypes
import multiprocessing as mp
import statistics
import sys
from multiprocessing import reduction
from pathlib import Path

import probe_args

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "measure"))  # fair_timing's call_kwargs

ROUNDS = 30
MIB2 = 2 << 20
WAYS = ("own", "own+guard", "ipc", "ipc 2 MiB", "vmm", "torch")
POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR


class _Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _Flags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Loc),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _Flags)]


class _Access(ctypes.Structure):
    _fields_ = [("location", _Loc), ("flags", ctypes.c_int)]


class Vmm:
    """The few driver calls for a shareable allocation on device 0 (the current context's)."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.prop = _Prop(type=1, requestedHandleTypes=POSIX_FD, location=_Loc(1, 0))  # pinned, on device 0
        g = ctypes.c_size_t()
        self._ok(self.cu.cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(self.prop), 1), "granularity")
        self.granularity = g.value

    @staticmethod
    def _ok(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: CUresult {rc}")

    def size(self, nbytes: int) -> int:
        return -(-nbytes // self.granularity) * self.granularity

    def create(self, nbytes: int) -> tuple[int, int]:
        """(allocation handle, exported fd)."""
        h, fd = ctypes.c_ulonglong(), ctypes.c_int()
        self._ok(self.cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(self.size(nbytes)), ctypes.byref(self.prop),
                                     ctypes.c_ulonglong(0)), "cuMemCreate")
        self._ok(self.cu.cuMemExportToShareableHandle(ctypes.byref(fd), h, POSIX_FD, ctypes.c_ulonglong(0)), "export")
        return h.value, fd.value

    def import_fd(self, fd: int) -> int:
        h = ctypes.c_ulonglong()
        self._ok(self.cu.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fd), POSIX_FD), "import")
        return h.value

    def map(self, handle: int, nbytes: int) -> int:
        size, ptr = self.size(nbytes), ctypes.c_ulonglong()
        self._ok(self.cu.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                                             ctypes.c_ulonglong(0), ctypes.c_ulonglong(0)), "reserve")
        self._ok(self.cu.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), ctypes.c_ulonglong(handle),
                                  ctypes.c_ulonglong(0)), "cuMemMap")
        acc = _Access(_Loc(1, 0), 3)  # read-write
        self._ok(self.cu.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(acc), ctypes.c_size_t(1)), "access")
        return ptr.value


def cases(argv: list[str]) -> list[tuple[str, str | None]]:
    pairs = list(zip(argv[0::2], argv[1::2]))
    return [("transpose", None), *((p, so) for p, so in pairs)]


def layout(problem_name: str) -> list[tuple[dict, list[tuple[str, str, tuple[int, ...]]]]]:
    """Per benchmark shape: (workload, [(tensor, dtype, shape)])."""
    from judge.problem import spec

    p = spec.load_problem(ROOT / "problems" / problem_name)
    return [(dict(w), [(t.name, t.ctype.element.dtype, tuple(p.shape_of(t.name, w))) for t in p.tensors])
            for w in p.spec.benchmarks]


def nbytes_of(dtype: str, shape: tuple[int, ...]) -> int:
    import torch

    n = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    for d in shape:
        n *= d
    return max(n, 1)


def child(conn, plan: list, q) -> None:
    import torch

    from judge.gpu import guard_regions
    from judge.gpu.cudart import Runtime
    from judge.gpu.devmem import tensor_at
    from judge.problem import spec, workloads
    from judge.runner.profile_target import solve_call

    rt = Runtime()
    torch.zeros(1, device="cuda")
    vmm = Vmm()
    flush = torch.zeros(64 << 20, dtype=torch.float32, device="cuda")  # 256 MiB, read by sum()
    out = []
    for name, so, w, tensors in plan:
        ways: dict[str, dict] = {k: {} for k in WAYS}
        for tname, dtype, shape, ipc_handle, ipc_2m in tensors:
            nb = nbytes_of(dtype, shape)
            fd = reduction.recv_handle(conn)
            ways["ipc"][tname] = tensor_at(rt.ipc_open(bytes.fromhex(ipc_handle)), nb, dtype, shape)
            ways["ipc 2 MiB"][tname] = tensor_at(rt.ipc_open(bytes.fromhex(ipc_2m)), nb, dtype, shape)
            ways["vmm"][tname] = tensor_at(vmm.map(vmm.import_fd(fd), nb), nb, dtype, shape)
            ways["own"][tname] = tensor_at(rt.malloc(nb), nb, dtype, shape)
            ways["own+guard"][tname] = tensor_at(rt.malloc(guard_regions.padded(nb)), nb, dtype, shape)
            ways["torch"][tname] = torch.empty(shape, dtype=getattr(torch, dtype), device="cuda")
            for k in ("own", "own+guard", "torch"):
                ways[k][tname].copy_(ways["ipc"][tname])
        problem = spec.load_problem(ROOT / "problems" / name)
        if so is None:
            calls = {k: (lambda t=t: t["B"].copy_(t["A"].t())) for k, t in ways.items()}
        elif so == "baseline":
            from fair_timing import call_kwargs

            fn = workloads.load_function(problem, problem.baselines[0].impl)
            kwargs = {k: call_kwargs(problem, w, t) for k, t in ways.items()}
            calls = {k: (lambda kw=kw: fn(**kw)) for k, kw in kwargs.items()}
        else:
            calls = {k: solve_call(problem, "native", so, t, w) for k, t in ways.items()}
        times: dict[str, list[float]] = {k: [] for k in ways}
        for r in range(ROUNDS + 3):
            for k, call in calls.items():
                flush.sum()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); call(); e.record(); e.synchronize()
                if r >= 3:
                    times[k].append(s.elapsed_time(e))
        outs = [p.name for p in problem.outputs]
        same = all(torch.equal(ways["own"][o], ways[k][o]) for o in outs for k in WAYS)
        label = ("copy_ (baseline)" if so is None else f"{problem.baselines[0].name} (baseline)"
                 if so == "baseline" else Path(so).stem)
        out.append((name, label, spec.workload_id(w), {k: statistics.median(v) for k, v in times.items()}, same))
        torch.cuda.synchronize()
    q.put(out)


def main(argv: list[str]) -> None:
    import torch

    from judge.gpu import guard_regions
    from judge.gpu.cudart import Runtime
    from judge.gpu.devmem import DeviceBuffers, tensor_at
    from judge.problem import spec, workloads

    if len(argv) % 2:
        probe_args.fail("ipc_mapping.py", "usage: ipc_mapping.py [PROBLEM LIBRARY.so|baseline ...]")
    for name, so in zip(argv[0::2], argv[1::2]):
        if not (ROOT / "problems" / name / "problem.yaml").is_file():
            probe_args.fail("ipc_mapping.py", f"no such problem: {name}")
        if so != "baseline" and not Path(so).is_file():
            probe_args.fail("ipc_mapping.py", f"no such library: {so}")
    rt = Runtime()
    bufs = DeviceBuffers(rt)
    torch.zeros(1, device="cuda")
    vmm = Vmm()
    plan, fds = [], []
    for name, so in cases(argv):
        problem = spec.load_problem(ROOT / "problems" / name)
        for w, tensors in layout(name):
            entry = []
            local = {}
            for tname, dtype, shape in tensors:
                b = bufs.alloc(f"{name}{spec.workload_id(w)}{tname}", dtype, shape, output=False)
                h, fd = vmm.create(b.nbytes)
                p2 = rt.malloc(-(-guard_regions.padded(b.nbytes) // MIB2) * MIB2)
                local[tname] = b.tensor
                copies = [tensor_at(vmm.map(h, b.nbytes), b.nbytes, dtype, shape), tensor_at(p2, b.nbytes, dtype, shape)]
                fds.append((fd, b, copies))
                entry.append((tname, dtype, shape, b.handle, rt.ipc_handle(p2).hex()))
            workloads.fill_inputs(problem, w, local, secret=0, phase="probe")
            for fd, b, copies in fds[-len(tensors):]:
                for t in copies:
                    t.copy_(b.tensor)
            plan.append((name, so, w, entry))
    torch.cuda.synchronize()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=child, args=(child_end, plan, q))
    p.start()
    for fd, *_ in fds:
        reduction.send_handle(parent_end, fd, p.pid)
    rows = q.get(timeout=1200)
    p.join()
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; median of {ROUNDS} calls, ms, after an L2 flush")
    print("| problem | call | shape | own ms | " + " | ".join(f"{k} / own" for k in WAYS[1:]) + " | outputs equal |")
    print("|---" * (len(WAYS) + 4) + "|")
    for name, label, wid, t, same in rows:
        print(f"| {name} | {label} | {wid} | {t['own']:.4f} | "
              + " | ".join(f"{t[k] / t['own']:.3f}" for k in WAYS[1:]) + f" | {same} |")


if __name__ == "__main__":
    main(sys.argv[1:])
