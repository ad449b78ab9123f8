"""A minimal ctypes binding of the CUDA runtime: what the worker needs without torch.

The worker (and the parent, for IPC buffers) use the same `libcudart.so.<major>` that submissions
link against (`-cudart shared`), so events, the default stream and errors are one runtime's.
Every call checks its return code and raises `CudaError` with the runtime's own error text.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

from judge import paths
from judge.build import toolkit


class CudaError(RuntimeError):
    def __init__(self, code: int, name: str, text: str, where: str):
        self.code, self.name, self.text, self.where = code, name, text, where
        super().__init__(f"{where}: {text} ({name})")


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


_LIB: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """Load libcudart once. An already loaded copy (torch's) is reused by soname."""
    global _LIB
    if _LIB is not None:
        return _LIB
    errors = []
    for candidate in _candidates():
        try:
            lib = ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("libcudart not found: " + "; ".join(errors))
    vp = ctypes.c_void_p
    lib.cudaGetErrorString.restype = ctypes.c_char_p
    lib.cudaGetErrorName.restype = ctypes.c_char_p
    for name in ("cudaMalloc", "cudaFree", "cudaMemsetAsync", "cudaEventCreate", "cudaEventRecord",
                 "cudaEventSynchronize", "cudaEventElapsedTime", "cudaDeviceSynchronize",
                 "cudaGetLastError", "cudaIpcGetMemHandle", "cudaIpcOpenMemHandle",
                 "cudaIpcCloseMemHandle", "cudaDeviceGetAttribute", "cudaSetDevice",
                 "cudaCtxResetPersistingL2Cache", "cudaHostAlloc", "cudaHostGetDevicePointer"):
        getattr(lib, name).restype = ctypes.c_int
    lib.cudaMemsetAsync.argtypes = [vp, ctypes.c_int, ctypes.c_size_t, vp]
    lib.cudaEventRecord.argtypes = [vp, vp]
    lib.cudaEventElapsedTime.argtypes = [ctypes.POINTER(ctypes.c_float), vp, vp]
    lib.cudaIpcGetMemHandle.argtypes = [ctypes.POINTER(_IpcHandle), vp]
    lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(vp), _IpcHandle, ctypes.c_uint]
    _LIB = lib
    return lib


def _candidates() -> list[str]:
    names = [f"libcudart.so.{m}" for m in ("13", "12")]
    out = list(names)  # already loaded, or on the loader path
    home = toolkit.cuda_home()
    if home:
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            out += [str(Path(home) / sub / n) for n in names]
    if os.environ.get(paths.ENV_CUDART):
        out.insert(0, os.environ[paths.ENV_CUDART])
    return out


def check(code: int, where: str) -> None:
    if code != 0:
        lib = load()
        raise CudaError(code, lib.cudaGetErrorName(code).decode(), lib.cudaGetErrorString(code).decode(), where)


class Runtime:
    """The handful of runtime calls the judge makes, on the legacy default stream."""

    def __init__(self, device: int = 0):
        self.lib = load()
        check(self.lib.cudaSetDevice(device), "cudaSetDevice")
        check(self.lib.cudaFree(None), "creating the CUDA context")

    def attribute(self, attr: int, device: int = 0) -> int:
        v = ctypes.c_int()
        check(self.lib.cudaDeviceGetAttribute(ctypes.byref(v), attr, device), "cudaDeviceGetAttribute")
        return v.value

    def l2_bytes(self) -> int:
        return self.attribute(38)  # cudaDevAttrL2CacheSize

    def malloc(self, nbytes: int) -> int:
        p = ctypes.c_void_p()
        check(self.lib.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(max(nbytes, 1))), f"cudaMalloc({nbytes})")
        return p.value or 0

    def host_mapped(self, nbytes: int) -> tuple[int, int]:
        """Pinned host memory mapped into the device: (host address, device address)."""
        host, dev = ctypes.c_void_p(), ctypes.c_void_p()
        check(self.lib.cudaHostAlloc(ctypes.byref(host), ctypes.c_size_t(nbytes), 2), "cudaHostAlloc")  # Mapped
        check(self.lib.cudaHostGetDevicePointer(ctypes.byref(dev), host, 0), "cudaHostGetDevicePointer")
        return host.value or 0, dev.value or 0

    def free(self, ptr: int) -> None:
        check(self.lib.cudaFree(ctypes.c_void_p(ptr)), "cudaFree")

    def copy_to_device(self, ptr: int, data: bytes) -> None:
        """cudaMemcpy of `data` to device memory at `ptr` (waits)."""
        check(self.lib.cudaMemcpy(ctypes.c_void_p(ptr), data, ctypes.c_size_t(len(data)), 1), "cudaMemcpy")  # HtoD

    def memset_async(self, ptr: int, byte: int, nbytes: int) -> None:
        check(self.lib.cudaMemsetAsync(ptr, byte, nbytes, None), "cudaMemsetAsync")

    def priority_stream(self) -> int:
        """A blocking stream (ordered with the legacy default stream both ways) of the greatest
        priority: the checks' stream of a candidate's worker (judge/worker/native/worker.cu says why)."""
        least, greatest, s = ctypes.c_int(), ctypes.c_int(), ctypes.c_void_p()
        check(self.lib.cudaDeviceGetStreamPriorityRange(ctypes.byref(least), ctypes.byref(greatest)),
              "cudaDeviceGetStreamPriorityRange")
        check(self.lib.cudaStreamCreateWithPriority(ctypes.byref(s), 0, greatest), "cudaStreamCreateWithPriority")
        return s.value or 0

    def synchronize(self, where: str = "cudaDeviceSynchronize") -> None:
        check(self.lib.cudaDeviceSynchronize(), where)

    def last_error(self, where: str) -> None:
        check(self.lib.cudaGetLastError(), where)

    def event(self) -> int:
        e = ctypes.c_void_p()
        check(self.lib.cudaEventCreate(ctypes.byref(e)), "cudaEventCreate")
        return e.value or 0

    def record(self, event: int) -> None:
        check(self.lib.cudaEventRecord(event, None), "cudaEventRecord")

    def event_synchronize(self, event: int) -> None:
        check(self.lib.cudaEventSynchronize(ctypes.c_void_p(event)), "cudaEventSynchronize")

    def elapsed_ms(self, start: int, end: int) -> float:
        ms = ctypes.c_float()
        check(self.lib.cudaEventElapsedTime(ctypes.byref(ms), start, end), "cudaEventElapsedTime")
        return ms.value

    def reset_persisting_l2(self) -> None:
        check(self.lib.cudaCtxResetPersistingL2Cache(), "cudaCtxResetPersistingL2Cache")

    def ipc_handle(self, ptr: int) -> bytes:
        h = _IpcHandle()
        check(self.lib.cudaIpcGetMemHandle(ctypes.byref(h), ptr), "cudaIpcGetMemHandle")
        return bytes(h.reserved)

    def ipc_open(self, handle: bytes) -> int:
        h = _IpcHandle()
        h.reserved = (ctypes.c_ubyte * 64).from_buffer_copy(handle)
        p = ctypes.c_void_p()
        check(self.lib.cudaIpcOpenMemHandle(ctypes.byref(p), h, 1), "cudaIpcOpenMemHandle")
        return p.value or 0

    def ipc_close(self, ptr: int) -> None:
        check(self.lib.cudaIpcCloseMemHandle(ctypes.c_void_p(ptr)), "cudaIpcCloseMemHandle")
