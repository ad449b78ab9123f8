"""What `judge validate` reports (judge/problem/validate.py): one broken rule, the file to fix, what to do."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Finding:
    rule: str  # a key of validate.RULES
    file: Path  # the file (or folder) to fix
    message: str  # what is wrong and what to do

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"
