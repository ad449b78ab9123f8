"""The model answers of a problem (`reference_solutions/PROBLEM/*.cu`, and `.py` in Triton), simplest first, each with
what its header comment says it is and buys, and what `judge verify --table` measured for it
(`reference_solutions/results.json`)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from judge.build import toolchain
from judge.practice import results_table as table

_LABEL = re.compile(r"^[A-Z][A-Za-z0-9 ,'()/-]{0,40}: ")  # "What it buys: ", "Ragged shapes: ", ...


@dataclass(frozen=True)
class Solution:
    index: int  # 1-based, in file-name order (the files are numbered simplest first)
    path: Path
    title: str  # the header's first paragraph
    technique: str  # its second paragraph (the technique, often with what it buys)
    buys: str | None  # the "What it buys:" text, when the header has one
    numbers: table.SolutionRow | None  # the measured row, when there is one

    @property
    def name(self) -> str:
        return self.path.name


def header(source: str, comment: str = "//") -> list[str]:
    """The leading `comment` block as paragraphs (blank comment lines separate them), lines kept."""
    paragraphs, cur = [], []
    for line in source.splitlines():
        if not line.startswith(comment):
            break
        text = line[len(comment):].removeprefix(" ").rstrip()
        if text:
            cur.append(text)
        elif cur:
            paragraphs.append("\n".join(cur))
            cur = []
    if cur:
        paragraphs.append("\n".join(cur))
    return paragraphs


def buys(lines: list[str]) -> str | None:
    """The "What it buys:" sentence(s), up to the next labelled line or the end of the paragraph."""
    out: list[str] = []
    for line in lines:
        if out and _LABEL.match(line):
            break
        if out or line.startswith("What it buys:"):
            out.append(line.strip())
    return " ".join(out).removeprefix("What it buys:").strip() or None if out else None


def one(index: int, path: Path, rows: dict[tuple[str, str], table.SolutionRow]) -> Solution:
    paragraphs = [p for p in header(path.read_text(errors="replace"), toolchain.for_source(path).comment)
                  if not p.startswith("judge:")]  # the `judge: PROBLEM` line (judge/build/header.py) is no title
    title = " ".join(paragraphs[0].split()) if paragraphs else path.stem
    lines = "\n".join(paragraphs[1:]).splitlines()
    return Solution(index=index, path=path, title=title,
                    technique=paragraphs[1] if len(paragraphs) > 1 else "",
                    buys=buys(lines), numbers=rows.get((path.parent.name, path.name)))


def solutions(folder: Path, problem: str) -> list[Solution]:
    """The model answers of `problem` under `folder` (the reference_solutions directory)."""
    rows = {(r.problem, r.solution): r for r in table.load(folder / "results.json")}
    files = toolchain.solutions_in(folder / problem)
    return [one(i, f, rows) for i, f in enumerate(files, start=1)]


def as_json(s: Solution) -> dict:
    return {"index": s.index, "file": str(s.path), "name": s.name, "title": s.title, "technique": s.technique,
            "buys": s.buys, "measured": s.numbers.model_dump() if s.numbers else None}
