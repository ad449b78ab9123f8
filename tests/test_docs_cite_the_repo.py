"""The docs describe their rules in place or point at files of this repository: no citation of a
design document that is not in it (DESIGN.md)."""
from __future__ import annotations

import re

from conftest import ROOT

# judge/engine and judge/worker are being rewritten; their docstrings join this test after that.
PENDING = ("judge/engine/", "judge/worker/")


def test_no_design_document_is_cited():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "problems").rglob("*.md")),
             *sorted((ROOT / "cli").rglob("*.py")), *sorted((ROOT / "judge").rglob("*.py"))]
    cited = [f"{f.relative_to(ROOT)}:{i}" for f in files if not str(f.relative_to(ROOT)).startswith(PENDING)
             for i, line in enumerate(f.read_text().splitlines(), 1) if re.search(r"\bDESIGN(\.md)?\b", line)]
    assert not cited
