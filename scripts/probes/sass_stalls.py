"""The stall cycles ptxas wrote into a kernel's machine code, per loop: a kernel's fixed-latency waits
("wait" among Nsight Compute's stall reasons) read from the SASS, without a GPU.

    python3 scripts/probes/sass_stalls.py FILE [--function SUBSTR] [--listing START END]

FILE is `cuobjdump -sass` output, or a cubin / shared library (disassembled with the judge's
cuobjdump lookup, judge/build/sass.py). Every Volta-and-later instruction is 128 bits; the scheduling
control that ptxas sets sits in the top bits of the second 64-bit word (as public microbenchmark work
decodes it, e.g. Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
2018): bits 41-44 the stall count (cycles before this warp issues its next instruction), 45 yield,
46-48 the write barrier set, 49-51 the read barrier set, 52-57 the barriers waited on, 58-61 reuse.

For each function whose name holds SUBSTR (default: all), each loop (a branch back to an earlier
address) with its instructions, the sum of their stall counts (the cycles one warp alone needs to
issue it once, before any variable-latency wait: memory, MUFU, barriers, the tensor cores) and its
commonest opcodes. `--listing START END` (hex addresses) prints those instructions with their stall
count, write barrier and wait mask. On bad input one line and exit 2.
"""
from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_FIRST = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* 0x([0-9a-f]{16}) \*/")
_SECOND = re.compile(r"^\s*/\* 0x([0-9a-f]{16}) \*/\s*$")
_BRANCH = re.compile(r"\bBRA\b(?:.*?,)?\s*0x([0-9a-f]+)")


@dataclass
class Instruction:
    addr: int
    text: str
    lo: int  # the first 64-bit word of the encoding
    hi: int  # the second 64-bit word: the control bits

    @property
    def stall(self) -> int:
        return (self.hi >> 41) & 0xF

    @property
    def write_barrier(self) -> int | None:
        b = (self.hi >> 46) & 0x7
        return None if b == 7 else b

    @property
    def wait_mask(self) -> int:
        return (self.hi >> 52) & 0x3F

    @property
    def opcode(self) -> str:
        words = self.text.split()
        op = words[1] if words and words[0].startswith("@") and len(words) > 1 else words[0] if words else "?"
        return op.split(".")[0]


def parse(text: str) -> dict[str, list[Instruction]]:
    """`cuobjdump -sass` text → each function's instructions, in address order."""
    functions: dict[str, list[Instruction]] = {}
    current: list[Instruction] | None = None
    pending: tuple[int, str, int] | None = None
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            current = functions.setdefault(m.group(1), [])
            pending = None
        elif current is not None and (m := _FIRST.match(line)):
            pending = (int(m.group(1), 16), m.group(2), int(m.group(3), 16))
        elif current is not None and pending and (m := _SECOND.match(line)):
            current.append(Instruction(*pending, int(m.group(1), 16)))
            pending = None
    return functions


def loops(code: list[Instruction]) -> list[tuple[int, int]]:
    """(first, last) indices of every loop: a branch back to an earlier instruction."""
    at = {x.addr: i for i, x in enumerate(code)}
    found = []
    for i, x in enumerate(code):
        if (m := _BRANCH.search(x.text)) and (target := int(m.group(1), 16)) < x.addr and target in at:
            found.append((at[target], i))
    return found


def loop_line(code: list[Instruction], first: int, last: int, top: int = 10) -> str:
    body = code[first:last + 1]
    ops = Counter(x.opcode for x in body).most_common(top)
    return (f"loop {body[0].addr:#06x}-{body[-1].addr:#06x}: {len(body)} instructions, stall cycles "
            f"{sum(x.stall for x in body)}; " + ", ".join(f"{op} {n}" for op, n in ops))


def listing(code: list[Instruction], start: int, end: int) -> list[str]:
    return [f"{x.addr:05x} s{x.stall:<2} {'wb' + str(x.write_barrier) if x.write_barrier is not None else '   '} "
            f"{'w' + format(x.wait_mask, '06b') if x.wait_mask else '       '} {x.text}"
            for x in code if start <= x.addr <= end]


def read(path: Path) -> str:
    """The SASS text of FILE: as it is, or disassembled when it is a binary."""
    data = path.read_bytes()
    if b"\0" not in data[:4096]:
        return data.decode(errors="replace")
    from judge.build import sass

    text = sass.disassemble(path)
    if text is None:
        raise ValueError(f"{path}: cuobjdump found nothing to disassemble (or is not installed)")
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sass_stalls.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("file", type=Path, help="cuobjdump -sass output, a cubin or a shared library")
    ap.add_argument("--function", default="", help="only functions whose (mangled) name holds this")
    ap.add_argument("--listing", nargs=2, metavar=("START", "END"), help="hex addresses: print these instructions")
    a = ap.parse_args(argv)
    try:
        span = tuple(int(v, 16) for v in a.listing) if a.listing else None
    except ValueError:
        ap.error(f"--listing takes two hex addresses (e.g. 3360 5be0), not {' '.join(a.listing)}")
    try:
        functions = parse(read(a.file))
    except (OSError, ValueError) as e:
        print(f"sass_stalls.py: error: {e}", file=sys.stderr)
        return 2
    chosen = {name: code for name, code in functions.items() if a.function in name and code}
    if not chosen:
        print(f"sass_stalls.py: error: no function{' holding ' + repr(a.function) if a.function else ''} "
              f"with instructions in {a.file}", file=sys.stderr)
        return 2
    for name, code in chosen.items():
        print(f"{name}: {len(code)} instructions, stall cycles {sum(x.stall for x in code)}")
        for first, last in loops(code):
            print("  " + loop_line(code, first, last))
        if span:
            print("\n".join(listing(code, *span)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
