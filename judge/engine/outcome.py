"""How a run ends early: `RunFailure`, the one exception every part of the engine raises for a verdict.

`evaluate()` (judge/engine/run.py) turns it into the report's status and message; `judge compare`
(judge/engine/compare.py) into the comparison's, with `culprit` ("A" or "B") as the side that failed.
Who is to blame for a worker's failure is judge/engine/roles.py's `blame`.
"""
from __future__ import annotations

from judge.contract.verdict import Status


class RunFailure(Exception):
    """A verdict other than ACCEPTED: the run stops here. `culprit` names the failing side where one
    run holds several candidates (compare's "A" / "B"), else None."""

    def __init__(self, status: Status, message: str, culprit: str | None = None):
        super().__init__(message)
        self.status, self.message, self.culprit = status, message, culprit

    def __str__(self) -> str:
        return f"{self.status.value}: {self.message}"


def incomplete(left: int, where: str) -> str:
    """The message of an output that still held the poison pattern when solve() returned."""
    return (f"output not complete when solve() returned on {where}: {left} element(s) still held the "
            "poison pattern, counted on the default stream right after the call: work on another stream? "
            "(solve() must finish on the default stream, or make it wait for the streams it uses)")


def changed_after(where: str, test_call: bool = False) -> str:
    """The message of outputs whose fingerprint, taken by the worker right after the call (after its
    end event, in a timed call), differs from the parent's of the final outputs."""
    if test_call:
        return (f"solve()'s outputs changed after it returned on {where}: work finished after the judge's "
                "check (another stream?)")
    return f"solve()'s outputs changed after its end event on {where}: work finished outside the timed window"


def wrote_past_end(name: str, output: bool, nbytes: int, where: str) -> str:
    """The message of a guard region (judge/gpu/guard_regions.py) that solve() wrote into."""
    what = name if output else f"its input {name}"
    return f"solve() wrote past the end of {what} ({nbytes} bytes after it) on {where}"
