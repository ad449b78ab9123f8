"""Leaderboard runs on a real local Ray cluster (judge/board/cluster.py, cluster_task.py, cluster_run.py,
cli/cluster_cmd.py).

One cluster for the module: a head (no GPU) and worker nodes started as separate processes,
declaring fake GPUs and GPU-kind resources: `h100a` (2 × H100), `h100b` (1 × H100) and `a100`
(1 × A100, started with CUDA_VISIBLE_DEVICES=3, so its GPU is physical index 3). The tasks run
the judge's GPU-free path (`--build-only`: policy + nvcc + policy), or the full judgement (a job
process, as `judge submit`), which on this GPU-less machine builds and then answers INTERNAL_ERROR
(no CUDA device).

Files named slow.cu sleep and files named boom.cu kill their judging process, through the task's
test hook (JUDGE_CLUSTER_TEST_FAULT, set before the nodes start). Files that include <fstream>
are REJECTED by the static source policy before nvcc runs: the mechanics tests use them, so their
outcome does not depend on nvcc.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import HAVE_NVCC, ROOT, nvcc_test
from typer.testing import CliRunner

ray = pytest.importorskip("ray") if not os.environ.get("JUDGE_REQUIRE_RAY") else __import__("ray")
from ray.cluster_utils import Cluster

from cli.app import app
from judge.board import cluster, cluster_task
from judge.board import submissions as leaderboard
from judge.gpu.device import GpuInfo
from judge.store import Store

GOOD = (ROOT / "reference_solutions" / "vector_add" / "01_naive.cu").read_text()
NOT_C = "this is not C\n"
REFUSED = "#include <fstream>\n"  # static source policy: REJECTED before any build
SLEEP_S = 8


@contextmanager
def _env(**values: str):
    """Environment variables for the node started inside (a node inherits this process's environment)."""
    before = dict(os.environ)
    os.environ.update(values, RAY_USAGE_STATS_ENABLED="0",  # nothing leaves the CI machine
                      PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory, judge_cache):
    fast_death = {"health_check_period_ms": 500, "health_check_failure_threshold": 2,
                  "health_check_initial_delay_ms": 0}
    client_port = _free_port()
    # The head's Ray Client server unpickles judge.board.cluster_task (it imports judge); a client server that
    # dies at start (ray-project/ray#63202; judge.board.cluster.connect tries again) is given up on after 10 s.
    with _env(RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S="10"):
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "num_gpus": 0, "include_dashboard": False,
                                                          "_system_config": fast_death,
                                                          "ray_client_server_port": client_port})
    c.client_address = f"ray://127.0.0.1:{client_port}"
    c.nodes, c.gpus = {}, {}

    def add(name, kind, gpus, visible=None):
        env = {cluster_task.FAULT_ENV: f"die:boom.cu,sleep={SLEEP_S}:slow.cu",
               "JUDGE_CACHE": str(tmp_path_factory.mktemp(f"cache-{name}"))}  # one build cache per host
        with _env(**env, **({"CUDA_VISIBLE_DEVICES": visible} if visible else {})):
            c.nodes[name] = c.add_node(num_cpus=gpus, num_gpus=gpus, resources={f"gpu_kind:{kind}": gpus})
            c.gpus[name] = gpus
            c.wait_for_nodes()

    add("h100a", "H100", 2)
    add("h100b", "H100", 1)
    add("a100", "A100", 1, visible="3")
    c.add = add
    cluster.connect(c.address)
    yield c
    cluster.disconnect()
    c.shutdown()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connected(c):
    if not ray.is_initialized():
        cluster.connect(c.address)
    return c


def submissions(root: Path, files: dict[str, str]) -> Path:
    """{"alice/vector_add.cu": text, "bob/vector_add/slow.cu": text} → a submissions folder."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def subs_of(root: Path):
    return leaderboard.discover(root, ["vector_add", "gelu"])


def judge_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "cli", "leaderboard", "run", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def node_kind(c, node_id):
    return next(name for name, n in c.nodes.items() if n.node_id == node_id)


# -- without a cluster ------------------------------------------------------------------------

def test_parse_address_and_choose_kinds():
    assert cluster.parse_address("ray://head:10001") == (True, "head", 10001)
    assert cluster.parse_address("10.0.0.1:6379") == (False, "10.0.0.1", 6379)
    for bad in ("head", "ray://head", "head:port", "http://head:80/x", ":6379", "head:70000"):
        with pytest.raises(ValueError):
            cluster.parse_address(bad)
    assert cluster.choose_kinds({"H100": 8, "A100": 4}, None) == ["A100", "H100"]
    assert cluster.choose_kinds({"H100": 8, "A100": 4}, ["H100", "H100"]) == ["H100"]
    with pytest.raises(ValueError, match="L4"):
        cluster.choose_kinds({"H100": 8}, ["L4"])
    with pytest.raises(cluster.ClusterError, match="gpu_kind:KIND"):
        cluster.choose_kinds({}, None)


def test_physical_index_from_ray_gpu_ids():
    gpus = [GpuInfo(i, "NVIDIA H100", f"GPU-{i}aaa", "580", 9, 0, 1) for i in range(4)]
    assert cluster_task.physical_index(5, gpus) == 5
    assert cluster_task.physical_index("3", gpus) == 3
    assert cluster_task.physical_index("GPU-2aaa", gpus) == 2
    with pytest.raises(ValueError, match="MIG"):
        cluster_task.physical_index("MIG-1234", gpus)


def test_local_run_never_imports_ray(tmp_path):
    """Without --cluster the local path runs as before and `ray` is never imported."""
    subs = submissions(tmp_path / "subs", {"alice/vector_add.cu": REFUSED})
    script = f"""
import sys
from typer.testing import CliRunner
import cli.leaderboard_cmd as lb
from cli.app import app
from judge.gpu.device import GpuInfo
from judge.board import submissions as leaderboard
from judge.contract.verdict import Status
lb.local_gpus = lambda: [GpuInfo(0, "Fake GPU", "GPU-0", "580", 9, 0, 1)]
lb.make_judge = lambda *a, **k: (lambda sub, dev: leaderboard.error_report(sub, Status.REJECTED, "no", "Fake GPU"))
r = CliRunner().invoke(app, ["leaderboard", "run", {str(subs)!r}, "--db", {str(tmp_path / 'db')!r}, "--json"])
assert r.exit_code == 0, r.output
print("ray" in sys.modules, "judge.board.cluster" in sys.modules)
"""
    env = dict(os.environ, RAY_ADDRESS="")
    r = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False"]


def test_cli_errors_without_a_cluster(tmp_path, monkeypatch):
    subs = submissions(tmp_path / "subs", {"alice/vector_add.cu": REFUSED})
    runner = CliRunner()
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--cluster", "nonsense", "--json"])
    assert r.exit_code == 2 and "ray://HOST:PORT" in json.loads(r.stdout)["error"]
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--cluster", "127.0.0.1:1"])
    assert r.exit_code == 3 and "no Ray cluster answers at 127.0.0.1:1" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--build-only"])
    assert r.exit_code == 2 and "--cluster" in r.output
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--runner", "docker"])
    assert r.exit_code == 2 and "--cluster" in r.output
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--cluster", "h:1", "--gpus", "2"])
    assert r.exit_code == 2 and "--kinds" in r.output
    from cli.common import runner_choice  # what each task's job spec carries (mounts: checked on the node)
    from judge.runner.job import DockerRunner, LocalRunner
    assert runner_choice("docker", "img:1", ["/a:/b"], True, "devices", check_mounts=False) == DockerRunner(
        image="img:1", mounts=["/a:/b"], host_env=True, gpus="devices")
    assert runner_choice("local", None, [], False, "auto", check_mounts=False) == LocalRunner()
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    r = runner.invoke(app, ["leaderboard", "run", str(subs), "--cluster", "127.0.0.1:1", "--json"])
    assert r.exit_code == 3 and "kernel-judge[ray]" in json.loads(r.stdout)["error"]


# -- on the cluster ---------------------------------------------------------------------------

@nvcc_test
def test_build_only_routes_per_kind_records_apart_and_is_idempotent(ray_cluster, tmp_path):
    subs = submissions(tmp_path / "subs", {"alice/vector_add.cu": GOOD, "bob/vector_add.cu": NOT_C,
                                           "carol/gelu.cu": REFUSED})
    db = tmp_path / "judge.db"
    r = judge_cli(subs, "--cluster", ray_cluster.address, "--build-only", "--no-references", "--db", db, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads(r.stdout)
    assert s["mode"] == "build" and s["kinds"] == {"A100": 1, "H100": 3} and s["skipped"] == []
    got = {(j["gpu_kind"], j["participant"]): j for j in s["judged"]}
    assert set(got) == {(k, p) for k in ("A100", "H100") for p in ("alice", "bob", "carol")}
    for (kind, _), j in got.items():  # each kind's tasks ran on a node of that kind only
        assert node_kind(ray_cluster, j["node"]).startswith(kind.lower())
        assert j["device"] in ({3} if kind == "A100" else {0, 1})  # the node's CUDA_VISIBLE_DEVICES=3 → index 3
    assert {p: got["H100", p]["outcome"] for p in ("alice", "bob", "carol")} == \
        {"alice": "BUILT", "bob": "COMPILE_ERROR", "carol": "REJECTED"}
    assert got["A100", "alice"]["kernels"] and got["A100", "alice"]["kernels"][0]["registers"] > 0
    # Build checks live apart: no results row, nothing ranked, and a real run still judges every file.
    with Store(db) as store:
        assert store.count() == 0
        assert store.db.execute("SELECT COUNT(*) FROM build_checks").fetchone()[0] == 6
        from judge.board.run import plan
        assert len(plan(store, subs_of(subs), "H100")[0]) == 3
    show = CliRunner().invoke(app, ["leaderboard", "show", "--db", str(db), "--json"])
    assert json.loads(show.stdout)["boards"] == []
    # Idempotent: the same command again checks nothing.
    r = judge_cli(subs, "--cluster", ray_cluster.address, "--build-only", "--no-references", "--db", db, "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 0 and s["judged"] == [] and len(s["skipped"]) == 6
    with Store(db) as store:
        assert store.db.execute("SELECT COUNT(*) FROM build_checks").fetchone()[0] == 6


def test_submit_mode_runs_judge_submit_on_the_node(ray_cluster, tmp_path):
    """The real job process (judge/runner/job.py, mode submit) on the A100 node: no GPU here, so
    INTERNAL_ERROR after the build (or nvcc missing), recorded under kind A100, exit 3; judged again on the next run."""
    subs = submissions(tmp_path / "subs", {"alice/vector_add.cu": GOOD, "bob/vector_add.cu": REFUSED})
    db = tmp_path / "judge.db"
    for _ in range(2):
        r = judge_cli(subs, "--cluster", ray_cluster.address, "--kinds", "A100", "--no-references", "--db", db,
                      "--json", "--budget", "0.1")
        s = json.loads(r.stdout)
        assert r.returncode == 3 and s["mode"] == "submit" and s["kinds"] == {"A100": 1}
        status = {j["participant"]: j for j in s["judged"]}
        assert status["alice"]["status"] == "INTERNAL_ERROR"
        assert ("no CUDA device" if HAVE_NVCC else "nvcc") in status["alice"]["message"]
        if not _:
            assert status["bob"]["status"] == "REJECTED" and status["bob"]["device"] == 3
        assert [k["participant"] for k in s["skipped"]] == (["bob"] if _ else [])
        assert sorted(status) == (["alice"] if _ else ["alice", "bob"])
    with Store(db) as store:
        kinds = store.db.execute("SELECT DISTINCT gpu_kind FROM results").fetchall()
        assert kinds == [("A100",)] and store.count() == 3  # alice twice (INTERNAL_ERROR), bob once
    show = CliRunner().invoke(app, ["leaderboard", "show", "--db", str(db), "--format", "markdown"])
    assert "A100" in show.stdout


def test_triton_files_take_the_same_road_on_the_node(ray_cluster, tmp_path):
    """A `.py` goes to the node by its name (its suffix picks the toolchain there): checked by the
    policy and the ABI in --build-only, judged by the job process otherwise (no GPU here:
    INTERNAL_ERROR after the checks, which points at the CPU check)."""
    triton = (ROOT / "reference_solutions" / "vector_add" / "triton_01_blocked.py").read_text()
    subs = submissions(tmp_path / "subs", {"alice/vector_add.py": triton, "bob/vector_add.py": "import os\n"})
    r = judge_cli(subs, "--cluster", ray_cluster.address, "--kinds", "A100", "--build-only", "--no-references",
                  "--db", tmp_path / "build.db", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {j["participant"]: (j["outcome"], j["language"]) for j in json.loads(r.stdout)["judged"]} == \
        {"alice": ("BUILT", "triton"), "bob": ("REJECTED", "triton")}
    r = judge_cli(subs, "--cluster", ray_cluster.address, "--kinds", "A100", "--no-references",
                  "--db", tmp_path / "judge.db", "--json", "--budget", "0.1")
    status = {j["participant"]: j for j in json.loads(r.stdout)["judged"]}
    assert r.returncode == 3 and status["bob"]["status"] == "REJECTED" and "import os" in status["bob"]["message"]
    assert status["alice"]["status"] == "INTERNAL_ERROR" and "passed the checks" in status["alice"]["message"]
    assert "--cpu" in status["alice"]["message"]


def test_a_crashing_submission_does_not_take_the_node_down(ray_cluster, tmp_path):
    connected(ray_cluster)
    subs = subs_of(submissions(tmp_path / "subs", {"alice/vector_add/boom.cu": REFUSED,
                                                   "bob/vector_add.cu": REFUSED}))
    jobs = [cluster.Job(i, s, "A100") for i, s in enumerate(subs)]
    done = {e.submission.participant: e for e in cluster.run(jobs, ROOT / "problems", "build")
            if isinstance(e, cluster.TaskDone)}
    assert done["alice"].failed and "died of signal 9" in done["alice"].check.message
    assert not done["bob"].failed and done["bob"].check.outcome == "REJECTED"
    assert done["alice"].node == done["bob"].node == ray_cluster.nodes["a100"].node_id


def test_resume_after_the_driver_dies(ray_cluster, tmp_path):
    files = {f"p{i}/vector_add.cu": REFUSED for i in range(3)}
    files["slow/vector_add/slow.cu"] = REFUSED
    subs = submissions(tmp_path / "subs", files)
    db = tmp_path / "judge.db"
    cmd = [sys.executable, "-m", "cli", "leaderboard", "run", str(subs), "--cluster", ray_cluster.address,
           "--kinds", "H100", "--no-references", "--db", str(db), "--json"]
    driver = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _recorded(db) and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.1)
        os.kill(driver.pid, signal.SIGKILL)  # the driver dies while slow.cu is being judged
    finally:
        driver.kill()
        driver.communicate()
    before = _recorded(db)
    assert before and "slow" not in before, before
    deadline = time.monotonic() + 3  # Ray ends the dead driver's workers; their judging children die with them
    while _children_judging(subs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _children_judging(subs)
    r = judge_cli(*cmd[5:])  # the same command again: resumes
    s = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert sorted(j["participant"] for j in s["judged"]) == sorted({"p0", "p1", "p2", "slow"} - set(before))
    assert sorted(k["participant"] for k in s["skipped"]) == sorted(before)
    r = judge_cli(*cmd[5:])  # idempotent: nothing left
    assert json.loads(r.stdout)["judged"] == []
    with Store(db) as store:
        keys = store.db.execute("SELECT participant, problem, source_sha256, gpu_kind, COUNT(*) FROM results "
                                "GROUP BY 1, 2, 3, 4").fetchall()
    assert sorted(k[0] for k in keys) == ["p0", "p1", "p2", "slow"] and all(k[4] == 1 for k in keys)


def _children_judging(subs: Path) -> list[int]:
    """Job processes still running on slow.cu (each runs in its task's folder, which holds src/slow.cu)."""
    out = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            if b"judge.runner.job" in cmd and (proc / "cwd").resolve().joinpath("src", "slow.cu").exists():
                out.append(int(proc.name))
        except OSError:
            continue
    return out


def _recorded(db: Path) -> list[str]:
    try:
        with sqlite3.connect(db) as con:
            return [r[0] for r in con.execute("SELECT participant FROM results")]
    except sqlite3.Error:
        return []


def test_a_lost_node_is_retried_on_another_node_of_its_kind(ray_cluster, tmp_path):
    connected(ray_cluster)
    subs = subs_of(submissions(tmp_path / "subs", {"alice/vector_add/slow.cu": REFUSED}))
    events, killed = [], None
    with Store(tmp_path / "judge.db") as store:
        for ev in cluster.run([cluster.Job(0, subs[0], "H100")], ROOT / "problems", "build"):
            events.append(ev)
            if isinstance(ev, cluster.TaskStarted) and killed is None:
                killed = node_kind(ray_cluster, ev.node)
                ray_cluster.remove_node(ray_cluster.nodes[killed], allow_graceful=False)
            if isinstance(ev, cluster.TaskDone):
                cluster.record_check(store, ev.check, ev.submission.participant, ev.job.kind, ev.node)
        rows = store.db.execute("SELECT participant, outcome, node FROM build_checks").fetchall()
    ids = {name: n.node_id for name, n in ray_cluster.nodes.items()}
    ray_cluster.add(killed, "H100", ray_cluster.gpus[killed])  # capacity back for any later test
    started = [e for e in events if isinstance(e, cluster.TaskStarted)]
    done = [e for e in events if isinstance(e, cluster.TaskDone)]
    assert len(done) == 1 and done[0].check.outcome == "REJECTED", events
    survivor = "h100b" if killed == "h100a" else "h100a"
    assert done[0].node == ids[survivor]
    assert [e.node for e in started] == [ids[killed], ids[survivor]]
    assert rows == [("alice", "REJECTED", ids[survivor])]


def test_jobs_of_a_kind_no_node_has_fail_instead_of_waiting(ray_cluster, tmp_path, monkeypatch):
    connected(ray_cluster)
    monkeypatch.setattr(cluster, "LOST_KIND_S", 1.0)
    monkeypatch.setattr(cluster, "KIND_CHECK_S", 0.5)
    subs = subs_of(submissions(tmp_path / "subs", {"alice/vector_add.cu": REFUSED}))
    t0 = time.monotonic()
    events = list(cluster.run([cluster.Job(0, subs[0], "L4")], ROOT / "problems", "build"))
    assert [type(e) for e in events] == [cluster.TaskDone] and events[0].failed and events[0].node is None
    assert "no node of GPU kind L4" in events[0].check.message and time.monotonic() - t0 < 20


def test_ray_client_address_and_unknown_kind(ray_cluster, tmp_path):
    """`ray://HOST:PORT` (Ray Client) works end to end; an unknown kind is a usage error (exit 2)."""
    subs = submissions(tmp_path / "subs", {"alice/vector_add.cu": REFUSED})
    r = judge_cli(subs, "--cluster", ray_cluster.client_address, "--kinds", "A100", "--build-only",
                  "--no-references", "--db", tmp_path / "db", "--json")
    s = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert [(j["outcome"], j["node"]) for j in s["judged"]] == [("REJECTED", ray_cluster.nodes["a100"].node_id)]
    r = judge_cli(subs, "--cluster", ray_cluster.client_address, "--kinds", "L4", "--db", tmp_path / "db")
    assert r.returncode == 2 and "no node declares GPU kind L4" in r.stderr and "H100" in r.stderr
    assert "Traceback" not in r.stderr
