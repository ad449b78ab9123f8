"""Issue 16, class 2: raw system calls from machine code that an attribute placed in an executable
section (tests/exploits/sandbox/raw_syscall_attr.c). The static policy cannot see it: no inline
assembly keyword in the source, no imported symbol in the library. Without the filter the attack
works (it signals its parent and appends to a file it creates); under the worker's seccomp filter
(judge/sandbox/seccomp.py) the process dies by SIGSYS at the first raw call and nothing is written.
"""
from __future__ import annotations

import ctypes
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, gcc_build
from sandboxed import fate, needs_seccomp

from judge.build import policy

SOURCE = ROOT / "tests" / "exploits" / "sandbox" / "raw_syscall_attr.c"
MESSAGE = "written by raw_syscall_attr.so\n"


@pytest.fixture(scope="module")
def attack_so(tmp_path_factory) -> Path:
    return gcc_build(tmp_path_factory, SOURCE, "raw_syscall_attr.so", "-O2", "-fPIC", "-shared", "-nostdlib",
                     "-fno-stack-protector")


def attack(path: Path):
    """The child's action: dlopen the library (after the filter, as the worker does) and run the
    attack on `path`; success is the attack's own report that every call succeeded."""
    c_path = ctypes.create_string_buffer(bytes(path))

    def run(env, me):
        lib = ctypes.CDLL(str(env))
        lib.judge_attack.restype = ctypes.c_long
        return lib.judge_attack(c_path) == 0
    return run


def test_the_source_has_no_inline_assembly_and_the_library_imports_nothing(attack_so):
    text = SOURCE.read_text()
    assert not re.search(r"\b(?:asm|__asm__|__asm)\b", text)
    pre = subprocess.run(["gcc", "-E", str(SOURCE)], capture_output=True, text=True, check=True, timeout=60).stdout
    assert policy.check_host_asm(pre, SOURCE.name, SOURCE.name) == []  # the policy's own reading
    assert policy.undefined_symbols(attack_so) == []  # not one imported name: nothing for check_symbols
    # ... yet the instruction bytes sit in code: `nm` types the const array as text ('t').
    nm = subprocess.run(["nm", str(attack_so)], capture_output=True, text=True, check=True, timeout=30).stdout
    assert re.search(r"^\w+ t raw_code$", nm, re.M), nm
    sections = subprocess.run(["readelf", "-SW", str(attack_so)], capture_output=True, text=True, check=True,
                              timeout=30).stdout
    assert re.search(r"\.text\s+PROGBITS.*\bAX\b", sections), sections


def test_without_the_filter_the_attack_works(attack_so, tmp_path):
    """The old behaviour: the raw calls run; kill(getppid(), 0) succeeds and the file is written."""
    target = tmp_path / "victim.txt"
    assert fate(attack(target), attack_so, filtered=False) == "exit 0"
    assert target.read_text() == MESSAGE


@needs_seccomp
def test_the_library_loads_under_the_filter(attack_so):
    """dlopen after the filter (the worker's order) is allowed: what kills the attack is its calls."""
    assert fate(lambda env, me: bool(ctypes.CDLL(str(env)).judge_attack), attack_so) == "exit 0"


@needs_seccomp
def test_under_the_filter_the_attack_dies_and_writes_nothing(attack_so, tmp_path):
    target = tmp_path / "victim.txt"
    assert fate(attack(target), attack_so) == "SIGSYS"
    assert not target.exists()


@needs_seccomp
def test_a_32_bit_call_through_int_0x80_is_killed(attack_so):
    """The i386 ABI's numbers mean other calls (20 is getpid there, but 11 is execve): the filter
    checks the architecture first and kills the process."""
    def i386_getpid(env, me):
        lib = ctypes.CDLL(str(env))
        lib.judge_attack_i386.restype = ctypes.c_long
        return lib.judge_attack_i386() == me

    unfiltered = fate(i386_getpid, attack_so, filtered=False)
    if unfiltered != "exit 0":
        pytest.skip(f"this kernel runs no 32-bit calls ({unfiltered}: no IA32 emulation)")
    assert fate(i386_getpid, attack_so) == "SIGSYS"

