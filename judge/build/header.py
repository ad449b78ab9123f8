"""The problem (and mode) a solution file names in its first lines, so that commands need no
problem argument: `// judge: softmax`, or `// judge: softmax submit` (`test` or `submit`), in the
comment syntax of the file's language, among its first `LINES` lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from judge.build import toolchain

LINES = 10  # how far from the top the header may be
MODES = ("test", "submit")


class HeaderError(ValueError):
    """A header line that does not read as one."""


@dataclass(frozen=True)
class Header:
    problem: str
    mode: str | None  # "test", "submit" or None
    line: int  # 1-based


def read(path: Path) -> Header | None:
    """The header of `path`, None when it has none; HeaderError for a malformed or a second one."""
    comment = re.escape(toolchain.for_source(path).comment)
    start = re.compile(rf"^\s*{comment}\s*judge:(.*)$")
    found: Header | None = None
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            if n > LINES:
                break
            m = start.match(line)
            if not m:
                continue
            words = m.group(1).split()
            if not 1 <= len(words) <= 2 or not re.fullmatch(r"[A-Za-z0-9_.-]+", words[0]) \
                    or (len(words) == 2 and words[1] not in MODES):
                raise HeaderError(f"{path}:{n}: expected `{toolchain.for_source(path).comment} judge: PROBLEM` "
                                  f"or `... judge: PROBLEM {'|'.join(MODES)}`, got {line.strip()!r}")
            if found is not None:
                raise HeaderError(f"{path}:{n}: a second `judge:` line (the first is line {found.line})")
            found = Header(words[0], words[1] if len(words) == 2 else None, n)
    return found
