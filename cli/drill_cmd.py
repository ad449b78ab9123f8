"""`judge drill` (start, `status`, `end`), `judge hint`, `judge stats`, `judge solution`: interview
drills over the results store (docs/drills.md)."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from judge import paths
from judge.build import toolchain
from judge.practice import drill as dr
from judge.practice import solutions as sol
from judge.problem import spec
from judge.problem.spec import LEVELS

from . import render
from .common import (
    DbOpt,
    DebugOpt,
    JsonOpt,
    Usage,
    alias,
    cpu_check_hint,
    err,
    errors,
    out,
    problems_root,
    resolve,
    store_path,
)

now: dr.Clock = dr.utc_now  # the clock; tests replace it

app = typer.Typer()  # hint, stats, solution (top-level commands)
drill_app = typer.Typer(no_args_is_help=False, add_completion=False,
                        help="Interview drills. `judge drill [OPTIONS]` starts one: a problem you have not "
                             "solved (or a set), its starter file, the statement, a clock.")


@contextmanager
def _errors(as_json: bool, debug: bool) -> Iterator[None]:
    with errors(as_json, debug):
        try:
            yield
        except dr.DrillError as e:
            raise Usage(str(e)) from None


def _store(db: Optional[Path]):
    """The command's results store, opened (see common.store_path: call once per command)."""
    from judge.store import Store

    return Store(store_path(db))


def _problems() -> dict[str, spec.Problem]:
    found = {}
    for path in spec.find_problems(problems_root()):
        try:
            p = spec.load_problem(path)
        except spec.ProblemError:
            continue  # `judge list` and `judge validate` report broken problems
        found[p.name] = p
    return found


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = int(round(seconds))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def _drill_json(d: dr.Drill) -> dict:
    return {"id": d.id, "started_at": dr.stamp(d.started_at), "minutes": d.minutes,
            "deadline": dr.stamp(d.deadline), "ended_at": dr.stamp(d.ended_at) if d.ended_at else None,
            "problems": list(d.problems)}


def _history_json(h: dr.History) -> dict:
    return {"drills": h.drills, "solved_in_drills": h.solved_in_drills, "problems_in_drills": h.problems_in_drills,
            "median_first_accepted_s": h.median_first_accepted_s, "hints_per_drill": h.hints_per_drill,
            "best_speedups": [{"problem": n, "speedup": x} for n, x in h.best_speedups],
            "solved_per_level": {lv: {"solved": a, "problems": b} for lv, (a, b) in h.solved_per_level.items()}}


@drill_app.callback(invoke_without_command=True)
def drill(ctx: typer.Context,
          level: Optional[str] = typer.Option(None, "--level", help=f"One of {', '.join(LEVELS)}."),
          tag: Optional[str] = typer.Option(None, "--tag", help="Only problems with this tag."),
          minutes: Optional[float] = typer.Option(None, "--minutes", help="Time limit (default: easy 20, medium 30, "
                                                  "hard 45, hard+ and hard++ 60; a set 60)."),
          set_spec: Optional[str] = typer.Option(None, "--set", help="Several problems: levels or names, "
                                                 "e.g. easy,medium,hard (one unsolved problem of each)."),
          seed: Optional[int] = typer.Option(None, "--seed", help="Make the pick deterministic."),
          output: Optional[Path] = typer.Option(None, "-o", "--output", help="The folder to write the starter "
                                                "files into (default: this one; created if missing)."),
          dir_alias: Optional[Path] = typer.Option(None, "--dir", hidden=True),  # the old name of --output
          lang: str = typer.Option(toolchain.DEFAULT, "--lang", help="The starters' language: "
                                   f"{', '.join(toolchain.REGISTRY)} (as `judge init --lang`)."),
          as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """Start a drill: pick a problem you have not solved, write its starter, show it, start the clock."""
    if ctx.invoked_subcommand is not None:
        return
    with _errors(as_json, debug):
        folder = alias(output, dir_alias, "--output", "--dir") or Path(".")
        if folder.exists() and not folder.is_dir():
            raise Usage(f"--output {folder} is not a folder")
        try:
            language = toolchain.for_name(lang)  # before the drill starts: a typo starts no clock
        except toolchain.UnknownLanguage as e:
            raise Usage(str(e)) from None
        problems = _problems()
        with _store(db) as store:
            solved = {n for n, p in store.progress().items() if p.solved}
            chosen = dr.pick(list(problems.values()), solved, level, tag, set_spec, seed)
            d = dr.start(store, chosen, now(), minutes)
        files = dr.write_starters(chosen, folder, language.name)
        if as_json:
            rows = [{"name": p.name, "level": p.spec.level, "title": p.spec.title, "prototype": language.prototype(p),
                     "statement": p.statement_path.read_text() if p.statement_path.exists() else None,
                     "hints": len(p.spec.hints), "starter": str(f), "starter_written": written}
                    for p, (f, written) in zip(chosen, files)]
            print(json.dumps({"drill": _drill_json(d), "store": str(store.path), "language": language.name,
                              "problems": rows}, indent=2))
            return
        for p, (f, written) in zip(chosen, files):
            out.print(Rule(f"{p.name} ({p.spec.level})"))
            if p.statement_path.exists():
                render.statement(out, p.statement_path.read_text())
            else:
                out.print(escape(p.spec.title))
            out.print(f"\n[bold]prototype[/] {escape(language.prototype(p))}")
            out.print(("wrote " if written else "kept ") + escape(str(f)) + ("" if written else " (it exists)")
                      + f"; judge it with: judge submit {p.name} {escape(str(f))}{cpu_check_hint(language, f)}")
        out.print(Rule())
        out.print(f"[bold]drill {d.id}[/] started: {d.minutes:g} min, until {d.deadline:%H:%M} UTC "
                  f"({', '.join(d.problems)}). judge hint · judge drill status · judge drill end")
        out.print(f"[dim]kept in {escape(str(store.path))}[/]")


def _summary_out(s: dr.Summary, h: dr.History, as_json: bool, best_ever: dict[str, float | None],
                 store: Path) -> None:
    if as_json:
        print(json.dumps({
            "drill": _drill_json(s.drill), "store": str(store),
            "elapsed_s": s.elapsed_s, "left_s": s.left_s, "over_s": s.over_s,
            "hints_used": s.hints_used,
            "problems": [{**vars(p), "solved": p.solved,
                          "past_median_first_accepted_s": h.median_first_accepted_s.get(p.level or ""),
                          "best_ever_speedup": best_ever.get(p.problem)} for p in s.problems],
            "history": _history_json(h)}, indent=2))
        return
    t = Table(title=f"drill {s.drill.id}" + (" (ended)" if s.drill.ended_at else ""))
    for col in ("problem", "level", "attempts", "first ACCEPTED", "best speedup", "hints",
                "your median (level)", "best ever"):
        t.add_column(col)
    for p in s.problems:
        late = f" ({p.late_attempts} late)" if p.late_attempts else ""
        t.add_row(p.problem, p.level or "?", f"{p.attempts}{late}",
                  _clock(p.first_accepted_s) + (" (late)" if p.first_accepted_late else ""),
                  f"{p.best_speedup:.3f}×" if p.best_speedup is not None else "–",
                  f"{p.hints_used}/{p.hints_total if p.hints_total is not None else '?'}",
                  _clock(h.median_first_accepted_s.get(p.level or "")),
                  f"{best_ever[p.problem]:.3f}×" if best_ever.get(p.problem) is not None else "–")
    out.print(t)
    left = f"{_clock(s.left_s)} left" if not s.over_s else f"[red]{_clock(s.over_s)} over[/]"
    out.print(f"elapsed {_clock(s.elapsed_s)} of {_clock(s.drill.minutes * 60)}: {left}; "
              f"{sum(p.solved for p in s.problems)} of {len(s.problems)} solved; {s.hints_used} hint(s)")
    if h.drills:
        per = f"{h.hints_per_drill:.1f}" if h.hints_per_drill is not None else "–"
        out.print(f"your history: {h.drills} past drill(s), {h.solved_in_drills} of {h.problems_in_drills} "
                  f"problems solved in time or late, {per} hints per drill")
    else:
        out.print("your history: no past drills yet")
    out.print(f"[dim]results store {escape(str(store))}[/]")


def _report(db: Optional[Path], as_json: bool, debug: bool, ending: bool) -> None:
    with _errors(as_json, debug):
        problems = _problems()
        with _store(db) as store:
            t = now()
            d = dr.end(store, t) if ending else dr.require_active(store)
            s = dr.summary(store, d, problems, t)
            h = dr.history(store, problems, t, exclude=d.id)
            best_ever = {n: p.best_speedup for n, p in store.progress().items()}
        _summary_out(s, h, as_json, best_ever, store.path)


@drill_app.command()
def status(as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """The active drill: per problem attempts, time to first ACCEPTED, best speedup, hints; time left."""
    _report(db, as_json, debug, ending=False)


@drill_app.command()
def end(as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """End the active drill and show how it went, next to your history."""
    _report(db, as_json, debug, ending=True)


@app.command()
def hint(problem: Optional[str] = typer.Argument(None, help="Problem (default: the drill's first unsolved one)"),
         as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """Reveal the next hint of a problem (recorded; counted in the active drill when it has the problem)."""
    with _errors(as_json, debug):
        with _store(db) as store:
            p = resolve(dr.hint_problem(store, problem))
            new = dr.next_hint(store, p, now())
            drill_id, shown = dr.shown_hints(store, p)
        if as_json:
            print(json.dumps({"problem": p.name, "drill_id": drill_id, "store": str(store.path),
                              "total": len(p.spec.hints),
                              "hint": vars(new) if new else None, "shown": [vars(x) for x in shown]}, indent=2))
            return
        for x in shown[:-1] if new else shown:
            out.print(f"[dim]hint {x.index}/{x.total}: {escape(x.text)}[/]")
        if new:
            out.print(f"[bold]hint {new.index}/{new.total}[/] ({p.name}): {escape(new.text)}")
        elif not p.spec.hints:
            out.print(f"{p.name} has no hints")
        else:
            out.print(f"no hints left for {p.name}: all {len(p.spec.hints)} shown")


@app.command()
def stats(as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """Your history: past drills, median time to first ACCEPTED per level, hints, best speedups, solved."""
    from judge.store import Store

    with _errors(as_json, debug):
        problems = _problems()
        where = store_path(db)
        if not where.exists():  # reading never creates a store
            h = dr.history(None, problems, now())
        else:
            with Store(where) as store:
                h = dr.history(store, problems, now())
        if as_json:
            print(json.dumps({**_history_json(h), "store": str(where)}, indent=2))
            return
        per = f"{h.hints_per_drill:.1f}" if h.hints_per_drill is not None else "–"
        out.print(f"{h.drills} drill(s) ended; {h.solved_in_drills} of {h.problems_in_drills} drill problems "
                  f"solved in their drill; {per} hints per drill")
        t = Table(title="by level")
        for col in ("level", "solved", "median time to first ACCEPTED (drills)"):
            t.add_column(col)
        for lv, (a, b) in h.solved_per_level.items():
            t.add_row(lv, f"{a}/{b}", _clock(h.median_first_accepted_s.get(lv)))
        out.print(t)
        if h.best_speedups:
            out.print("best speedups: " + ", ".join(f"{n} {x:.3f}×" for n, x in h.best_speedups[:10]))
        out.print(f"[dim]results store {escape(str(where))}" + ("" if where.exists() else " (none yet)") + "[/]")


@app.command()
def solution(problem: str = typer.Argument(..., help="Problem folder or name"),
             show_code: Optional[int] = typer.Option(None, "--show-code", help="Print solution N's code."),
             force: bool = typer.Option(False, "--force", help="Show them even while a drill has the problem."),
             as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """The reference solutions, simplest to fastest: what each technique buys and what it measured."""
    from judge.store import Store

    with _errors(as_json, debug):
        p = resolve(problem)
        where = store_path(db)
        if not force and where.exists():
            with Store(where) as store:
                running = dr.guarding(store, p.name)
            if running is not None:
                raise Usage(f"drill {running.id} is running with {p.name}: its solutions would spoil it "
                            "(end it with `judge drill end`, or pass --force)")
        found = sol.solutions(paths.solutions_root(), p.name)
        if not found:
            raise Usage(f"no reference solutions for {p.name}")
        if show_code is not None:
            if not 1 <= show_code <= len(found):
                raise Usage(f"--show-code {show_code}: {p.name} has solutions 1 to {len(found)}")
            s = found[show_code - 1]
            code = s.path.read_text(errors="replace")
            if as_json:
                print(json.dumps({**sol.as_json(s), "code": code, "store": str(where)}, indent=2))
            else:
                err.print(f"[bold]{s.index}. {escape(s.name)}[/] ({escape(str(s.path))})")
                out.print(code, markup=False, highlight=False, end="")
            return
        if as_json:
            print(json.dumps({"problem": p.name, "store": str(where), "solutions": [sol.as_json(s) for s in found]},
                             indent=2))
            return
        t = Table(title=f"{p.name}: reference solutions, simplest first")
        for col in ("#", "solution", "measured", "% of baseline", "% of roofline", "speedup"):
            t.add_column(col)
        for s in found:
            r = s.numbers
            t.add_row(str(s.index), s.name, f"{r.value:,.1f} {r.unit}" if r else "not measured",
                      f"{r.pct_of_baseline:.0f}%" if r and r.pct_of_baseline is not None else "–",
                      f"{r.pct_of_roofline:.0f}%" if r else "–",
                      f"{r.geomean_speedup:.2f}×" if r and r.geomean_speedup is not None else "–")
        out.print(t)
        for s in found:
            out.print(f"[bold]{s.index}. {escape(s.name)}[/]: {escape(s.title.removeprefix(p.name + ', '))}")
            if s.buys:
                out.print(f"   buys: {escape(s.buys)}")
        rows = [s.numbers for s in found if s.numbers]
        if rows:
            out.print(f"measured on {rows[0].workload} ({escape(rows[0].gpu or '?')}, {rows[0].date}); "
                      f"baseline {escape(rows[0].baseline or '–')}. Code: judge solution {p.name} --show-code N")
