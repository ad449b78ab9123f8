"""A worker's cgroup (judge/sandbox/cgroup.py): where it is made (on text), and, where this machine
lets the judge make one (root: CI's machine, cgroup v1; the H100 machine, v2), what it stops that the
worker's old limits let through, run against tests/exploits/sandbox/host_flood.c started as a worker
is (`client._limits`, a session of its own), with controls that the limits leave honest work alone.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from judge.sandbox import cgroup
from judge.sandbox.memwatch import MemoryWatch
from judge.worker import client

UNAVAILABLE = cgroup.probe()
needs_cgroup = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"no cgroup here: {UNAVAILABLE}")
MIB = 1 << 20


# -- where the group goes, on text --------------------------------------------------------------
V2_ONLY = """\
32 23 0:28 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate
"""
HYBRID = """\
25 24 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw
29 25 0:26 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
30 25 0:27 / /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
"""


def files(tree: dict[str, str]):
    def read(path: Path) -> str:
        if str(path) not in tree:
            raise FileNotFoundError(2, "No such file or directory")
        return tree[str(path)]
    return read


def test_v2_the_group_is_a_sibling_in_the_nearest_group_that_hands_down_both_controllers():
    """The H100 machine's layout: the judge runs in /process_api/X, a group with processes, which v2
    cannot give controllers to children; its parent does."""
    tree = {"/sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids",
            "/sys/fs/cgroup/cgroup.subtree_control": "cpuset cpu io memory hugetlb pids",
            "/sys/fs/cgroup/process_api/cgroup.subtree_control": "memory pids",
            "/sys/fs/cgroup/process_api/X/cgroup.subtree_control": ""}
    home = cgroup.find_home({"": "/process_api/X"}, cgroup.parse_mounts(V2_ONLY), read=files(tree),
                            writable=lambda p: True)
    api = Path("/sys/fs/cgroup/process_api")
    assert home == cgroup.Home(2, {"memory": api, "pids": api})
    tree["/sys/fs/cgroup/process_api/cgroup.subtree_control"] = "cpu"  # not there: the root, then
    home = cgroup.find_home({"": "/process_api/X"}, cgroup.parse_mounts(V2_ONLY), read=files(tree),
                            writable=lambda p: True)
    assert home.folders() == [Path("/sys/fs/cgroup")]


def test_v2_a_cgroup_namespace_root_and_a_mounted_subtree():
    tree = {"/sys/fs/cgroup/cgroup.controllers": "memory pids", "/sys/fs/cgroup/cgroup.subtree_control": "memory pids"}
    home = cgroup.find_home({"": "/"}, cgroup.parse_mounts(V2_ONLY), read=files(tree), writable=lambda p: True)
    assert home.folders() == [Path("/sys/fs/cgroup")]
    sub = V2_ONLY.replace(" / /sys/fs/cgroup ", " /docker/abc /sys/fs/cgroup ")
    home = cgroup.find_home({"": "/docker/abc"}, cgroup.parse_mounts(sub), read=files(tree), writable=lambda p: True)
    assert home.folders() == [Path("/sys/fs/cgroup")]


def test_hybrid_uses_the_v1_hierarchies_that_hold_the_controllers():
    """This machine's layout: a v2 hierarchy without controllers, memory and pids in v1."""
    tree = {"/sys/fs/cgroup/unified/cgroup.controllers": ""}
    membership = cgroup.parse_membership("8:pids:/\n4:memory:/process_api/X\n0::/\n")
    home = cgroup.find_home(membership, cgroup.parse_mounts(HYBRID), read=files(tree), writable=lambda p: True)
    assert home == cgroup.Home(1, {"memory": Path("/sys/fs/cgroup/memory/process_api/X"),
                                   "pids": Path("/sys/fs/cgroup/pids")})


def test_nowhere_to_write_is_unavailable_with_the_reasons():
    tree = {"/sys/fs/cgroup/cgroup.controllers": "memory pids", "/sys/fs/cgroup/cgroup.subtree_control": "memory pids"}
    with pytest.raises(cgroup.Unavailable) as info:
        cgroup.find_home({"": "/user.slice/x"}, cgroup.parse_mounts(V2_ONLY), read=files(tree),
                         writable=lambda p: False)
    assert "may write" in str(info.value)
    with pytest.raises(cgroup.Unavailable) as info:
        cgroup.find_home({}, [])
    assert "no memory hierarchy" in str(info.value)


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("JUDGE_CGROUP", "0")
    assert not cgroup.wanted()
    with pytest.raises(cgroup.Unavailable, match="JUDGE_CGROUP=0"):
        cgroup.make(64 * MIB)


# -- the kernel's limits, against host_flood.c -------------------------------------------------
@pytest.fixture
def group():
    made = []

    def make(memory_bytes: int = 256 * MIB, tasks: int = cgroup.TASK_LIMIT) -> cgroup.Group:
        made.append(cgroup.make(memory_bytes, tasks))
        return made[-1]

    yield make
    for g in made:
        g.remove()


def start(host_flood: Path, *args: str, group: cgroup.Group | None = None) -> subprocess.Popen:
    """The attack, started as judge/worker/client.py starts a worker: its limits, its own session,
    its group if given."""
    return subprocess.Popen([str(host_flood), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=client._limits(client._user_tasks(), group), start_new_session=True)


def finish(p: subprocess.Popen) -> tuple[int, str]:
    out, _ = p.communicate(timeout=60)
    return p.returncode, out


@needs_cgroup
def test_threads_the_old_limits_let_through_are_refused_at_the_groups_limit(host_flood, group):
    code, out = finish(start(host_flood, "threads", "2000"))
    assert (code, out.strip()) == (0, "threads: all 2000 started")  # before: RLIMIT_NPROC (none for root)
    g = group(tasks=64)
    code, out = finish(start(host_flood, "threads", "2000", group=g))
    assert code == 3, out
    started = int(out.split()[1])
    assert 50 <= started < 64  # the process itself and its threads: 64 tasks
    assert g.refused_tasks() >= 1
    code, out = finish(start(host_flood, "threads", "16", group=group(tasks=64)))  # control: room to work
    assert (code, out.strip()) == (0, "threads: all 16 started")


@needs_cgroup
def test_a_memory_burst_between_the_watchs_looks_passes_it_and_not_the_group(host_flood, group):
    """Before: the memory watch (a poll every 0.2 s) misses a burst of twice its limit that lasts
    less than its interval: of up to ten bursts, one passes (a burst of ~50 ms is missed three
    times in four). After: the kernel refuses the page past the group's limit, every time."""
    limit, burst = 64 * MIB, "128"
    for _ in range(10):
        p = start(host_flood, "burst", burst)
        watch = MemoryWatch(p.pid, limit)
        code, out = finish(p)
        watch.stop()
        if code == 0 and watch.exceeded is None:
            break
    else:
        pytest.fail("the memory watch saw every one of ten bursts: the demonstration needs a faster burst")
    g = group(memory_bytes=limit)
    p = start(host_flood, "burst", burst, group=g)
    code, out = finish(p)
    assert code == -signal.SIGKILL, out
    assert g.oom_kills() >= 1
    control = group(memory_bytes=limit)
    assert finish(start(host_flood, "burst", "16", group=control))[0] == 0
    assert control.oom_kills() == 0


@needs_cgroup
def test_a_new_session_escapes_the_process_group_kill_not_the_group(host_flood, group):
    g = group()
    p = start(host_flood, "escape", group=g)
    assert p.stdout is not None
    child = int(p.stdout.readline())
    os.killpg(p.pid, signal.SIGKILL)  # the old kill: the worker's process group
    p.wait(timeout=10)
    assert alive(child)
    g.kill()
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(child)
    assert g.pids() == []


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@needs_cgroup
def test_remove_leaves_nothing_and_make_sweeps_groups_of_judges_that_are_gone(group):
    g = group()
    folders = g.folders()
    assert all(f.is_dir() for f in folders)
    g.remove()
    assert not any(f.exists() for f in folders)
    where = cgroup.home()
    stale = [d / f"{cgroup.PREFIX}999999999-dead" for d in where.folders()]
    for d in stale:
        d.mkdir()
    group()
    assert not any(d.exists() for d in stale)


@needs_cgroup
def test_the_worker_joins_its_group_before_its_program_starts(tmp_path, monkeypatch):
    """The real spawn path (WorkerProcess): the worker's first line of code already runs in the
    group, which close() removes; JUDGE_CGROUP=0 starts it without one."""
    script = tmp_path / "w.py"
    script.write_text(f"#!{os.sys.executable}\nimport sys\nprint(open('/proc/self/cgroup').read(), flush=True)\n"
                      "sys.stdin.read()\n")
    script.chmod(0o755)
    monkeypatch.setattr(client, "command", lambda torch=False, triton=False: [str(script)])
    w = client.WorkerProcess(device=0, role="candidate")
    try:
        assert w.group is not None
        name = w.group.folders()[0].name
        deadline = time.monotonic() + 10
        while name not in w.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert name in w.log_path.read_text()
        assert w.proc.pid in w.group.pids()
    finally:
        w.close()
    assert not any(f.exists() for f in w.group.folders())
    monkeypatch.setenv("JUDGE_CGROUP", "0")
    w = client.WorkerProcess(device=0, role="candidate")
    try:
        assert w.group is None
    finally:
        w.close()


@needs_cgroup
def test_a_worker_that_cannot_join_its_group_starts_without_one_and_the_group_is_removed(tmp_path, monkeypatch):
    script = tmp_path / "w.py"
    script.write_text(f"#!{os.sys.executable}\nimport sys\nsys.stdin.read()\n")
    script.chmod(0o755)
    monkeypatch.setattr(client, "command", lambda torch=False, triton=False: [str(script)])
    made: list[cgroup.Group] = []
    make = cgroup.make
    monkeypatch.setattr(cgroup, "make", lambda *a, **k: made.append(make(*a, **k)) or made[-1])

    def refuse(self):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(cgroup.Group, "join", refuse)
    w = client.WorkerProcess(device=0, role="candidate")
    try:
        assert w.group is None and w.proc.poll() is None
        assert len(made) == 1 and not any(f.exists() for f in made[0].folders())
    finally:
        w.close()
