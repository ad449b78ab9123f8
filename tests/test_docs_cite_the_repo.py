"""The docs describe their rules in place or point at files of this repository: no citation of a
design document that is not in it (DESIGN.md)."""
from __future__ import annotations

import re

from conftest import ROOT


def test_no_design_document_is_cited():
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "problems").rglob("*.md")),
             *sorted((ROOT / "cli").rglob("*.py")), *sorted((ROOT / "judge").rglob("*.py")),
             *sorted((ROOT / "judge").rglob("*.cu")), *sorted((ROOT / "judge").rglob("*.h")),
             *sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "scripts").rglob("*.py"))]
    cited = [f"{f.relative_to(ROOT)}:{i}" for f in files if f.name != "test_docs_cite_the_repo.py"
             for i, line in enumerate(f.read_text().splitlines(), 1) if re.search(r"\bDESIGN(\.md)?\b", line)]
    assert not cited
