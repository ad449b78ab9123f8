"""STUB of the worker's seccomp filter, so that the native worker's branch runs and is tested.

The real module is written in parallel (judge/sandbox/seccomp.py on its own branch) and replaces
this file at merge; only these four names are the interface the worker's code uses:

    program(worker_pid, *, write_opens=False) -> bytes   the BPF program (struct sock_filter[])
    supported() -> str | None                             why this machine cannot confine, or None
    describe_refusal(log_text) -> str | None              "the sandbox refused system call 62 (kill)"
    syscall_name(nr) -> str

This stub's program refuses only a few system calls (SECCOMP_RET_TRAP: the worker's SIGSYS
handler logs the number, then the process dies by SIGSYS) and kills a process of another
architecture. Standard library only.
"""
from __future__ import annotations

import os
import platform
import re
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
RET_KILL_PROCESS = 0x80000000
RET_TRAP = 0x00030000
RET_ALLOW = 0x7FFF0000
# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_RET_K = 0x06

_NAMES = {0: "read", 1: "write", 2: "open", 39: "getpid", 56: "clone", 57: "fork", 59: "execve", 62: "kill",
          101: "ptrace", 110: "getppid", 200: "tkill", 234: "tgkill", 257: "openat", 310: "process_vm_readv",
          311: "process_vm_writev"}
_REFUSED = (101, 310, 311)  # ptrace, process_vm_readv, process_vm_writev

_REFUSAL = re.compile(r"the sandbox refused system call (\d+)")


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(worker_pid: int, *, write_opens: bool = False) -> bytes:
    out = [_insn(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
           _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
           _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
           _insn(_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    for i, nr in enumerate(_REFUSED):
        left = len(_REFUSED) - i - 1
        out.append(_insn(_JEQ_K, left + 1, 0, nr))  # to the TRAP after the remaining tests and ALLOW
    out += [_insn(_RET_K, 0, 0, RET_ALLOW), _insn(_RET_K, 0, 0, RET_TRAP)]
    return b"".join(out)


def supported() -> str | None:
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return f"seccomp filters are built for x86-64 Linux, not {platform.system()} {platform.machine()}"
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            if not any(line.startswith("Seccomp:") for line in f):
                return "this kernel has no seccomp (no Seccomp: line in /proc/self/status)"
    except OSError as e:
        return f"cannot read /proc/self/status: {e}"
    return None


def describe_refusal(log_text: str) -> str | None:
    found = _REFUSAL.findall(log_text)
    if not found:
        return None
    nr = int(found[-1])
    return f"the sandbox refused system call {nr} ({syscall_name(nr)})"


def syscall_name(nr: int) -> str:
    return _NAMES.get(nr, f"#{nr}")
