"""The Triton worker's start-up seed (judge/worker/triton_seed.py): the first ready worker's cache
is kept, whole, before any submission code runs; later workers begin with a copy of their own."""
from __future__ import annotations

import os

import pytest
from worker.test_worker_client import fake_worker  # noqa: F401  (the fixture)

from judge import paths
from judge.worker import triton_seed

# A fake Triton worker: its start-up writes into its cache (as _judge_kernel's compile does), it
# says it is ready, and at `init` (where the submission's code would first run) writes again.
BODY = """
    cache = os.environ["TRITON_CACHE_DIR"]
    found = sorted(os.listdir(cache))
    os.makedirs(os.path.join(cache, "START"), exist_ok=True)
    open(os.path.join(cache, "START", "cuda_utils.so"), "w").write("built at start-up")
    send(nonce=nonce, ok=True, ready=True, pid=os.getpid())
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "exit":
            break
        open(os.path.join(cache, "START", "cuda_utils.so"), "w").write("the submission's")
        os.makedirs(os.path.join(cache, "SUBMISSION"))
        send(nonce=nonce, ok=True, found=found)
"""


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.ENV_CACHE, str(tmp_path / "judge-cache"))
    return tmp_path / "judge-cache"


def test_the_first_ready_worker_seeds_the_next_ones_before_the_submission_runs(fake_worker, cache_root):  # noqa: F811
    first = fake_worker(BODY, triton=True)
    first.wait_ready(timeout_s=20)
    seed = triton_seed.seed_dir()
    assert (seed / "START" / "cuda_utils.so").read_text() == "built at start-up"
    assert first.request("init", 20, "loading")["found"] == []  # the first began empty
    assert not (seed / "SUBMISSION").exists()
    assert (seed / "START" / "cuda_utils.so").read_text() == "built at start-up"  # its later writes: its own

    second = fake_worker(BODY, triton=True)
    second.wait_ready(timeout_s=20)
    assert second.request("init", 20, "loading")["found"] == ["START"]  # began with the seed's copy
    assert sorted(os.listdir(seed)) == ["START"]
    assert (seed / "START" / "cuda_utils.so").read_text() == "built at start-up"


def test_a_native_worker_has_no_triton_cache(fake_worker, cache_root):  # noqa: F811
    w = fake_worker('send(nonce=nonce, ok=True, ready=True, pid=os.getpid(), cache=os.environ.get("TRITON_CACHE_DIR"))')
    assert w.wait_ready(timeout_s=20)["cache"] is None
    assert not triton_seed.seed_dir().exists()


def test_a_seed_is_kept_once_whole_and_never_changed(tmp_path, cache_root):
    one, two = tmp_path / "one", tmp_path / "two"
    for d, text in ((one, "1"), (two, "2")):
        (d / "k").mkdir(parents=True)
        (d / "k" / "f").write_text(text)
    assert triton_seed.keep(one) and not triton_seed.keep(two)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert triton_seed.seed(fresh) and (fresh / "k" / "f").read_text() == "1"
    assert [p.name for p in triton_seed.seed_dir().parent.iterdir()] == [triton_seed.key()]  # no leftovers


def test_no_seed_yet_leaves_the_cache_empty(tmp_path, cache_root):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert not triton_seed.seed(fresh) and list(fresh.iterdir()) == []
    assert not triton_seed.keep(tmp_path / "missing")


def test_the_key_follows_the_workers_source(tmp_path, monkeypatch):
    src = tmp_path / "triton_gpu.py"
    src.write_text("def _judge_kernel(): pass\n")
    monkeypatch.setattr(triton_seed, "WORKER", src)
    k = triton_seed.key()
    src.write_text("def _judge_kernel(): return 1\n")
    assert triton_seed.key() != k


def test_a_cache_that_cannot_be_written_or_read_only_loses_the_saving(tmp_path, cache_root, monkeypatch):
    """Modes do not stop root (the judge's usual user), so the refusals are the OS errors themselves."""
    import shutil
    from pathlib import Path

    ready = tmp_path / "ready"
    (ready / "k").mkdir(parents=True)

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(Path, "mkdir", refused)
        assert not triton_seed.keep(ready)  # no exception: the run goes on without a seed
    assert triton_seed.keep(ready)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.setattr(shutil, "copytree", refused)
    assert not triton_seed.seed(fresh) and list(fresh.iterdir()) == []


NOBODY_WRITES = """
import os, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
try:
    with open(os.path.join(sys.argv[1], "cuda_utils.so"), "w") as f:
        f.write("planted")
except OSError as e:
    sys.exit(f"refused: {e.strerror}")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a root judge's hole: its workers' start-up runs as root")
def test_another_runs_worker_cannot_plant_code_in_a_triton_workers_cache_before_init(fake_worker, cache_root):  # noqa: F811
    """The attack: a submission that got past the syntax-tree policy runs as nobody in one run's worker;
    another run's Triton worker starts as root and loads Triton's C modules (.so) from its cache
    before `init`, and the first ready worker's cache becomes every later worker's seed. If that cache
    is nobody's from its creation (as it was), nobody can put a module there that root then loads.
    Now it is root's until the parent sends `init`, and nobody's from then on (where Triton compiles
    the submission's kernels as nobody)."""
    import subprocess
    import sys

    w = fake_worker(BODY, triton=True)
    cache = w.triton_cache
    attack = subprocess.run([sys.executable, "-c", NOBODY_WRITES, str(cache)], capture_output=True, text=True)
    assert attack.returncode != 0 and "refused" in attack.stderr, "nobody wrote into the worker's cache"
    w.wait_ready(timeout_s=20)
    assert cache.stat().st_uid == 0 and not (triton_seed.seed_dir() / "cuda_utils.so").exists()
    w.request("init", 20, "loading")
    assert cache.stat().st_uid == 65534  # the worker compiles the submission's kernels as nobody
