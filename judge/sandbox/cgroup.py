"""A cgroup of the worker's own: the kernel bounds its host memory and its tasks, and ends all of it.

Each worker joins a group made for it before its program starts (`Group.join`, in the child
between fork and exec), so everything it ever starts is in the group too, pid namespace or not:
- `memory.max` (v1: `memory.limit_in_bytes`) is the worker's host-memory limit: the kernel refuses
  the page past it and its OOM killer ends the group (`memory.oom.group`). The parent's memory
  watch (judge/sandbox/memwatch.py) polls five times a second; a burst between two looks passes
  it, never this. Swap is refused to the group where the kernel offers the setting.
- `pids.max` bounds its processes and threads together. RLIMIT_NPROC, the other bound, counts per
  user and the kernel ignores it for root: as root a worker could otherwise start threads until
  the machine has no pids left.
- `kill()` ends every process of the group (v2: `cgroup.kill`), whatever session or process group
  it moved to.

Where the group lives. cgroup v2 when the unified hierarchy has the memory and pids controllers,
else v1's memory and pids hierarchies (a hybrid machine keeps them there).
- v1: in the judge's own group of each hierarchy.
- v2: in the nearest group, from the judge's own upwards, that hands both controllers to its
  children and that this user can write. That is never the judge's own group unless it is the root,
  because v2 gives controllers to the children of a group without processes only. So the worker's
  group is usually a sibling of the judge's: its limits are its own, not a share of the judge's.

No group where none can be made (not root and no delegation, a container's read-only cgroupfs, no
such controllers, JUDGE_CGROUP=0): the worker runs with the memory watch and RLIMIT_NPROC alone,
and the report's `environment.cgroup` says so. `judge doctor` names the reason (`probe()`).
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from judge import paths

TASK_LIMIT = 1024  # pids.max: a CUDA worker runs ~10 tasks, a baseline's torch one per core and a few
CONTROLLERS = ("memory", "pids")
PREFIX = "judge-worker-"
KILL_WAIT_S = 5.0  # how long kill() waits for the group to empty


class Unavailable(Exception):
    """Why this machine gives the worker no group of its own."""


@dataclass(frozen=True)
class Home:
    """Where the workers' groups are made: one folder (v2) or one per controller (v1)."""

    version: int
    dirs: dict[str, Path]  # controller -> folder; v2: both controllers map to the same folder

    def folders(self) -> list[Path]:
        return sorted(set(self.dirs.values()))


def wanted() -> bool:
    """Whether workers get a group of their own: yes unless JUDGE_CGROUP=0."""
    return os.environ.get(paths.ENV_CGROUP, "1").strip() != "0"


# -- where: parsed from /proc/self/cgroup and /proc/self/mountinfo (pure functions, tested on text) --
@dataclass(frozen=True)
class Mount:
    fstype: str  # "cgroup2" or "cgroup"
    root: str  # the hierarchy's path that is mounted (usually "/")
    point: Path
    options: frozenset[str]  # v1: the controllers it holds


def parse_mounts(mountinfo: str) -> list[Mount]:
    out = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        f, r = left.split(), right.split()
        if len(f) < 5 or len(r) < 3 or r[0] not in ("cgroup", "cgroup2"):
            continue
        out.append(Mount(r[0], f[3], Path(f[4].replace("\\040", " ")), frozenset(r[2].split(","))))
    return out


def parse_membership(text: str) -> dict[str, str]:
    """/proc/self/cgroup: controller -> path ("" for the v2 line's empty controller list)."""
    out = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for name in parts[1].split(",") if parts[1] else [""]:
            out[name] = parts[2]
    return out


def on_disk(mount: Mount, path: str) -> Path | None:
    """The folder of hierarchy path `path` under `mount`, or None when the mount does not show it."""
    root = mount.root.rstrip("/")
    if not (path == root or path.startswith(root + "/") or root == ""):
        return None
    return mount.point / path[len(root):].lstrip("/")


def find_home(membership: dict[str, str], mounts: list[Mount], read=Path.read_text,
              writable=lambda p: os.access(p, os.W_OK)) -> Home:
    """Where this process's workers' groups go (the module's docstring), or Unavailable."""
    v2 = next((m for m in mounts if m.fstype == "cgroup2"), None)
    reasons = []
    if v2 is not None and "" in membership:
        own = on_disk(v2, membership[""])
        try:
            held = set(read(v2.point / "cgroup.controllers").split())
        except OSError as e:
            held, own = set(), None
            reasons.append(f"cgroup v2 at {v2.point}: {e.strerror}")
        if own is not None and set(CONTROLLERS) <= held:
            folder = own
            while True:
                try:
                    given = set(read(folder / "cgroup.subtree_control").split())
                except OSError:
                    given = set()
                if set(CONTROLLERS) <= given and writable(folder):
                    return Home(2, {c: folder for c in CONTROLLERS})
                if folder == v2.point or v2.point not in folder.parents:
                    break
                folder = folder.parent
            reasons.append(f"cgroup v2: no group from {own} up that gives its children the memory and pids "
                           "controllers and that this user may write")
        elif own is not None:
            reasons.append(f"cgroup v2 at {v2.point} holds no memory and pids controllers")
    dirs = {}
    for c in CONTROLLERS:
        m = next((m for m in mounts if m.fstype == "cgroup" and c in m.options), None)
        mine = on_disk(m, membership[c]) if m is not None and c in membership else None
        if mine is None or not writable(mine):
            reasons.append(f"cgroup v1: no {c} hierarchy that this user may write")
            raise Unavailable("; ".join(reasons))
        dirs[c] = mine
    return Home(1, dirs)


def home() -> Home:
    """This process's home for workers' groups, or Unavailable (with why)."""
    if not wanted():
        raise Unavailable(f"{paths.ENV_CGROUP}=0")
    try:
        membership = parse_membership(Path("/proc/self/cgroup").read_text())
        mounts = parse_mounts(Path("/proc/self/mountinfo").read_text())
    except OSError as e:
        raise Unavailable(f"cannot read this process's cgroups: {e.strerror}") from None
    return find_home(membership, mounts)


# -- a worker's group ---------------------------------------------------------------------------
class Group:
    """One worker's group: made with its limits by `make()`, joined by the worker's child process
    before exec (`join`), read for why the worker died (`oom_kills`, `refused_tasks`), ended by
    `kill()` and removed by `remove()`."""

    def __init__(self, version: int, dirs: dict[str, Path], memory_bytes: int, tasks: int):
        self.version, self.dirs, self.memory_bytes, self.tasks = version, dirs, memory_bytes, tasks

    def folders(self) -> list[Path]:
        return sorted(set(self.dirs.values()))

    def describe(self) -> str:
        return (f"cgroup v{self.version} {self.folders()[0].name}: memory {self.memory_bytes / (1 << 30):.1f} GiB, "
                f"{self.tasks} tasks")

    def join(self) -> None:
        """Move the calling process into the group (the worker's child, between fork and exec)."""
        me = str(os.getpid()).encode()
        for folder in self.folders():
            fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, me)
            finally:
                os.close(fd)

    def pids(self) -> list[int]:
        out: set[int] = set()
        for folder in self.folders():
            try:
                out |= {int(x) for x in (folder / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
        return sorted(out)

    def oom_kills(self) -> int:
        """How many of its processes the kernel killed at the memory limit."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return _field(self.dirs["memory"] / name, "oom_kill")

    def refused_tasks(self) -> int:
        """How many new processes or threads the limit refused."""
        return _field(self.dirs["pids"] / "pids.events", "max")

    def kill(self) -> None:
        """SIGKILL everything in the group and wait (KILL_WAIT_S at most) until it is empty."""
        kill_file = self.dirs["pids"] / "cgroup.kill"
        deadline = time.monotonic() + KILL_WAIT_S
        while pids := self.pids():
            if self.version == 2 and kill_file.exists():
                _write(kill_file, "1")
            else:  # v1: one by one, again for any a dying parent started meanwhile
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the group's folders (best effort: a folder the kernel still
        holds stays, empty, and `make()` removes it later)."""
        self.kill()
        for folder in self.folders():
            _rmdir(folder)


def make(memory_bytes: int, tasks: int = TASK_LIMIT, where: Home | None = None) -> Group:
    """A new group with these limits (Unavailable, with why, where none can be made). Empty groups
    left by judges that are gone are removed first."""
    where = where or home()
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    for folder in where.folders():
        _sweep(folder)
    dirs = {c: d / name for c, d in where.dirs.items()}
    group = Group(where.version, dirs, memory_bytes, tasks)
    try:
        for folder in group.folders():
            folder.mkdir()
        mem, pids = dirs["memory"], dirs["pids"]
        if where.version == 2:
            _write(mem / "memory.max", str(memory_bytes))
            _write(mem / "memory.swap.max", "0", optional=True)
            _write(mem / "memory.oom.group", "1", optional=True)
        else:
            _write(mem / "memory.limit_in_bytes", str(memory_bytes))
            _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
        _write(pids / "pids.max", str(tasks))
    except OSError as e:
        for folder in group.folders():
            _rmdir(folder)
        raise Unavailable(f"making a group in {where.folders()[0]}: {e.strerror or e}") from None
    return group


def probe() -> str | None:
    """None when a worker here gets a group of its own (a throwaway one is made and removed), else why not."""
    try:
        group = make(64 << 20, 16)
    except Unavailable as e:
        return str(e)
    group.remove()
    return None


def _field(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
    except (OSError, ValueError):
        pass
    return 0


def _write(path: Path, value: str, optional: bool = False) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        if optional:
            return
        raise
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _rmdir(folder: Path) -> None:
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _sweep(folder: Path) -> None:
    """Remove the empty groups that judges no longer running left in `folder`."""
    try:
        names = [p for p in folder.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return
    for p in names:
        owner = p.name[len(PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                p.rmdir()
            except OSError:
                pass
