"""What `pipeline.evaluate()` yields while it works; the CLI renders these, tests collect them."""
from __future__ import annotations

from dataclasses import dataclass

from judge.contract.report import BenchResult, BuildInfo, Report, TestCase


@dataclass
class Stage:
    text: str


@dataclass
class Built:
    build: BuildInfo


@dataclass
class CaseDone:
    index: int
    total: int
    case: TestCase


@dataclass
class Timing:
    workload: str
    target: str  # "candidate" or a baseline's name, with "(before)"/"(after)"
    samples: int


@dataclass
class BenchDone:
    index: int
    total: int
    result: BenchResult


@dataclass
class Finished:
    report: Report


Event = Stage | Built | CaseDone | Timing | BenchDone | Finished
