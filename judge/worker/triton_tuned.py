"""Which configuration a Triton submission's autotuners chose, so that a verdict says what it timed.

The autotuner benchmarks its configurations in the warm-up and keeps the fastest per key
(`Autotuner.cache`: key → `triton.Config`); two runs, or a run and `judge profile`, may keep
different ones, and then time different kernels. `autotuners(namespace)` finds the autotuners among
a module's globals (through `triton.heuristics` and other wrappers, by their `.fn`), `snapshot()`
reads what each has chosen, and `chosen(before, after)` names what a call added or changed, as
lines "kernel: BLOCK_M: 128, ..., num_warps: 8, ..."; `pin(tuners, lines)` narrows each named
autotuner to the configuration a line names (`judge profile --tuned`).

Used by the Triton worker (judge/worker/triton_gpu.py, the `warm` reply's `tuned`) and by
`judge profile`'s program (judge/runner/profile_target.py). Both run in a process the submission
owns: the text is a claim, as `tune_s` is; the parent keeps printable characters only and caps it
(`clean`).
"""
from __future__ import annotations

from typing import Any

MAX_LINES = 16  # configurations named per warm-up call
MAX_CHARS = 240  # per line


def autotuners(namespace: dict[str, Any]) -> list[Any]:
    """The `triton.autotune` objects among these globals (each once), wrappers followed by `.fn`."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return []
    found: dict[int, Any] = {}
    for value in list(namespace.values()):
        for _ in range(4):  # heuristics(autotune(jit(f))) and the like
            if isinstance(value, Autotuner):
                found[id(value)] = value
            value = getattr(value, "fn", None) if not isinstance(value, type) else None
            if value is None:
                break
    return list(found.values())


def kernel_name(tuner: Any) -> str:
    fn = tuner
    for _ in range(4):
        fn = getattr(fn, "fn", None)
        name = getattr(fn, "__name__", None)
        if isinstance(name, str):
            return name
    return "?"


def snapshot(tuners: list[Any]) -> dict[tuple[int, str], str]:
    """(autotuner, key) → "kernel: config" for every key each autotuner has chosen for."""
    out: dict[tuple[int, str], str] = {}
    for t in tuners:
        cache = getattr(t, "cache", None)
        if isinstance(cache, dict):
            for key, config in list(cache.items()):
                out[(id(t), repr(key))] = f"{kernel_name(t)}: {config}"
    return out


def chosen(before: dict[tuple[int, str], str], after: dict[tuple[int, str], str]) -> str:
    """What a call added or changed, one configuration a line (at most MAX_LINES)."""
    lines = [v for k, v in after.items() if before.get(k) != v]
    return "\n".join(lines[:MAX_LINES])


def pin(tuners: list[Any], lines: list[str]) -> str | None:
    """Narrow each autotuner a line names ("kernel: config", as `chosen` writes them) to that one
    configuration, so that the next call runs it without tuning (`judge profile --tuned`: profile
    what a submit timed). None, or why a line matches nothing (with what there is to match)."""
    for line in lines:
        name, _, config = line.partition(": ")
        named = [t for t in tuners if kernel_name(t) == name]
        if not named:
            have = ", ".join(sorted({kernel_name(t) for t in tuners})) or "none"
            return f"no autotuned kernel {name!r} in the file (its autotuned kernels: {have})"
        for t in named:
            hit = [c for c in t.configs if str(c) == config]
            if not hit:
                return (f"{name}: no configuration {config!r} (its autotuner's: "
                        + "; ".join(str(c) for c in t.configs) + ")")
            t.configs = hit[:1]
    return None


def clean(text: object) -> list[str]:
    """The parent's reading of a worker's `tuned`: printable ASCII, MAX_LINES lines of MAX_CHARS."""
    if not isinstance(text, str):
        return []
    lines = ("".join(ch for ch in line if " " <= ch <= "~").strip() for line in text.splitlines())
    return [line[:MAX_CHARS] for line in lines if line][:MAX_LINES]
