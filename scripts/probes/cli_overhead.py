"""Where `judge submit`'s wall time goes outside `evaluate()` (issue 17 (d)): the CLI's start before the
run, and what follows the verdict (rendering, the store, the interpreter's exit with torch's CUDA
context and the workers). GPU machine.

    python3 scripts/probes/cli_overhead.py PROBLEM SOLUTION [judge submit options]

Prints, in seconds since this process started: when the CLI was imported, when evaluate() began,
when it yielded its verdict, and when the CLI called os._exit (cli/app.py's `main` skips the
interpreter's teardown); the shell's own wall time around the command (`time`) gives the rest: the
interpreter's start before this script's first line, and the exit itself.
"""
from __future__ import annotations

import os
import sys
import time

T0 = time.perf_counter()


def mark(what: str) -> None:
    print(f"cli_overhead: {what} at {time.perf_counter() - T0:.3f} s", file=sys.stderr, flush=True)


def main() -> None:
    import judge.engine.run as run

    inner = run.evaluate

    def evaluate(*args, **kwargs):
        mark("evaluate() starts")
        yield from inner(*args, **kwargs)
        mark("evaluate() ends (its verdict yielded)")

    run.evaluate = evaluate  # the CLI imports it from the module when it runs
    real_exit = os._exit

    def exit_(code: int) -> None:
        mark(f"os._exit({code})")
        real_exit(code)

    os._exit = exit_  # type: ignore[assignment]
    from cli.app import main as cli_main

    sys.argv = ["judge", "submit", *sys.argv[1:]]
    mark("the CLI imported")
    cli_main()


if __name__ == "__main__":
    main()
