"""Verdicts and exit codes (CONTRACT): what every consumer of the judge agrees on."""
from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    ACCEPTED = "ACCEPTED"
    WRONG_ANSWER = "WRONG_ANSWER"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    REJECTED = "REJECTED"
    INTERNAL_ERROR = "INTERNAL_ERROR"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self]

    @property
    def submitters_fault(self) -> bool:
        return self.exit_code == 1


EXIT_CODES = {
    Status.ACCEPTED: 0,
    Status.WRONG_ANSWER: 1,
    Status.COMPILE_ERROR: 1,
    Status.RUNTIME_ERROR: 1,
    Status.TIMEOUT: 1,
    Status.REJECTED: 1,
    Status.INTERNAL_ERROR: 3,
}
EXIT_USAGE = 2  # bad problem spec or bad command line
EXIT_NOT_YOUR_CODE = 3


class JudgeError(Exception):
    """Not the submitter's fault: no GPU, nvcc missing, a harness failure (INTERNAL_ERROR, exit 3)."""
