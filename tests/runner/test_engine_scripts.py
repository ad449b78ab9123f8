"""docker/engine-start.sh (the carried Docker engine's starter) on bad input, without starting anything:
one line on stderr and exit 2."""
from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT


@pytest.mark.parametrize("args,says", [([], "usage: engine-start.sh BUNDLE_DIR"),
                                       (["{tmp}"], "holds no engine bundle")])
def test_engine_start_refuses_what_is_not_a_bundle(tmp_path, args, says):
    r = subprocess.run(["bash", str(ROOT / "docker" / "engine-start.sh"), *(a.format(tmp=tmp_path) for a in args)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "engine.tar.xz").exists()
