"""The entry point inside the judging container (`--runner docker`, judge/runner/docker.py).

It runs the whole pipeline on the read-only problem folder and solution mounted into the
container (the judge's own parent/worker split applies in here too) and writes one JSON line per
event on stdout, each tagged with the nonce it reads from stdin, ending with
`{"nonce": ..., "report": {...}}`. Everything else that writes to stdout (libraries, children) is
sent to stderr, so the channel carries only these lines. `Reader` checks them outside.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from judge.contract.events import BenchDone, Built, CaseDone, Event, Finished, Stage, Timing
from judge.contract.report import Report

NONCE = re.compile(r"[0-9a-f]{32}")
EVENTS = {cls.__name__: cls for cls in (Stage, Built, CaseDone, Timing, BenchDone)}


def encode(nonce: str, event: Event) -> str:
    """One line of the channel."""
    if isinstance(event, Finished):
        return json.dumps({"nonce": nonce, "report": json.loads(event.report.model_dump_json())})
    data = {k: json.loads(v.model_dump_json()) if isinstance(v, BaseModel) else v
            for k, v in vars(event).items()}
    return json.dumps({"nonce": nonce, "event": type(event).__name__, "data": data})


def decode_event(name: object, data: object) -> Event:
    """A progress event from the channel; ValueError when it is not exactly one of ours."""
    cls = EVENTS.get(name) if isinstance(name, str) else None
    if cls is None or not isinstance(data, dict):
        raise ValueError(f"unknown event {name!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    if set(data) != names:
        raise ValueError(f"event {name} with fields {sorted(data)}")
    args: dict[str, Any] = {}
    for key, value in data.items():
        hint = hints[key]
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            args[key] = hint.model_validate_json(json.dumps(value))
        elif isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
            args[key] = value
        else:
            raise ValueError(f"event {name}: {key} is not {hint.__name__}")
    return cls(**args)


class Reader:
    """Parses the container's stdout lines; the first line that is not exactly ours is tampering."""

    def __init__(self, nonce: str, problem: str, sha256: str, mode: str):
        self.nonce, self.problem, self.sha256, self.mode = nonce, problem, sha256, mode
        self.report: Report | None = None
        self.error: str | None = None
        self.tampered: str | None = None

    def feed(self, line: bytes) -> Event | None:
        if self.tampered or not line.strip():
            return None
        try:
            msg = json.loads(line)
        except ValueError:
            self._tamper(f"a line that is not JSON on the judge's channel: {line[:120]!r}")
            return None
        if not isinstance(msg, dict) or msg.get("nonce") != self.nonce or not NONCE.fullmatch(self.nonce):
            self._tamper("a line without this run's nonce on the judge's channel")
            return None
        if self.report is not None:
            self._tamper("a line after the report")
            return None
        keys = set(msg) - {"nonce"}
        if keys == {"event", "data"}:
            try:
                return decode_event(msg["event"], msg["data"])
            except ValueError as e:
                self._tamper(f"a malformed progress event: {e}")
                return None
        if keys == {"error"} and isinstance(msg["error"], str):
            self.error = msg["error"][:4000]
            return None
        if keys != {"report"}:
            self._tamper(f"an unknown message with keys {sorted(keys)}")
            return None
        try:
            report = Report.model_validate_json(json.dumps(msg["report"]))
        except ValueError as e:
            self._tamper(f"a malformed report: {str(e)[:300]}")
            return None
        if report.problem != self.problem or report.source_sha256 != self.sha256 or report.mode != self.mode:
            self._tamper(f"a report for another run (problem {report.problem}, mode {report.mode}, "
                         f"sha256 {report.source_sha256[:16]}…; expected {self.problem}, {self.mode}, "
                         f"{self.sha256[:16]}…)")
            return None
        self.report = report
        return None

    def _tamper(self, why: str) -> None:
        self.tampered = why


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m judge.runner.container_entry")
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--mode", choices=("submit", "test"), default="submit")
    ap.add_argument("--arch", default=None)
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--peaks", default=None, help="measured GPU peaks (*.json) from the trusted side")
    args = ap.parse_args(argv)
    nonce = sys.stdin.readline().strip()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the nonce was read; nothing started from here inherits the channel in
    channel = os.fdopen(os.dup(1), "w", buffering=1)  # a dup is not inherited by children
    os.dup2(2, 1)  # whatever else writes to stdout lands on stderr
    if not NONCE.fullmatch(nonce):
        print("container_entry: no nonce on stdin", file=sys.stderr)
        return 2
    try:
        from judge.engine.run import Options, evaluate
        from judge.engine.stats import TimingPolicy
        from judge.problem.spec import load_problem

        if args.peaks:  # into this container's own cache, where judge.gpu.device looks
            from judge.paths import cache_root

            (cache_root() / "devices").mkdir(parents=True, exist_ok=True)
            for f in Path(args.peaks).glob("*.json"):
                (cache_root() / "devices" / f.name).write_bytes(f.read_bytes())
        problem = load_problem(Path(args.problem))
        opts = Options(mode=args.mode, device=args.device, arch=args.arch, policy=TimingPolicy(budget_s=args.budget),
                       baseline_policy=TimingPolicy(budget_s=args.budget).for_baseline())
        for event in evaluate(problem, Path(args.solution), opts):
            channel.write(encode(nonce, event) + "\n")
    except Exception as e:  # noqa: BLE001 — the judge's own failure, told to the trusted side
        channel.write(json.dumps({"nonce": nonce, "error": f"{type(e).__name__}: {e}"}) + "\n")
        return 3
    channel.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the interpreter's teardown (torch's CUDA context among it)
