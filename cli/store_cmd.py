"""`judge store`: which results store the other commands use (with the same --db and JUDGE_DB), why,
and what it holds. Reading never creates a store."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from judge import paths

from .common import DbOpt, DebugOpt, JsonOpt, errors, out, store_path

app = typer.Typer()

_WHY = {"--db": "given with --db", paths.ENV_DB: f"from ${paths.ENV_DB}",
        "default": f"yours: one per user by default; --db or ${paths.ENV_DB} to use another"}


@app.command()
def store(as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt) -> None:
    """Which results store the judge reads and writes here, and what it holds."""
    from judge.store import Store

    with errors(as_json, debug):
        where = paths.store_location(db)
        path = store_path(db)
        held = None
        if path.exists():
            with Store(path) as s:
                drills = s.drills()
                active = next((d["id"] for d in drills if d["ended_at"] is None), None)
                held = {"results": s.count(), "drills": len(drills), "active_drill": active}
        if as_json:
            print(json.dumps({"path": str(path), "chosen_by": where.chosen_by, "exists": held is not None,
                              **(held or {"results": 0, "drills": 0, "active_drill": None}),
                              "folder_store": str(where.folder_store) if where.folder_store else None}, indent=2))
            return
        out.print(f"results store {escape(str(path))} ({escape(_WHY[where.chosen_by])})")
        if held is None:
            out.print("  not created yet: the first recorded result or drill creates it")
        else:
            drill = f", drill {held['active_drill']} active" if held["active_drill"] is not None else ""
            out.print(f"  {held['results']} result(s), {held['drills']} drill(s){drill}")
