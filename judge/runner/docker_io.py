"""Talk to the Docker engine for the docker runner: connect, then run one container with its stdin
fed, its stdout read line by line under a byte cap, its stderr's tail kept, a hard wall-clock
limit, and the container always removed. The docker SDK is imported only here, lazily."""
from __future__ import annotations

import os
import select
import struct
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

STDERR_TAIL_BYTES = 4000
BUILD_HINT = ("build it: `docker build -t kernel-judge -f docker/Dockerfile .` on a machine with a registry, "
              "or `bash docker/host-image.sh` and `--image kernel-judge:host --docker-host-env` without one "
              "(docker/README.md)")


class DockerUnavailable(Exception):
    """No SDK, no engine, no image: the judge's problem (INTERNAL_ERROR), with the fix in the text."""


@dataclass
class Outcome:
    exit_code: int | None = None
    oom_killed: bool = False
    timed_out: bool = False
    killed: bool = False
    stdout_capped: bool = False
    stderr_tail: str = ""


def connect(image: str):
    """(client, the engine's `docker info`) with `image` present; DockerUnavailable with the fix otherwise."""
    try:
        import docker.client  # (docker.client: mypy takes a bare `docker` for the repository's docker/ folder)
        from docker.errors import DockerException, ImageNotFound
    except ImportError:
        raise DockerUnavailable("the docker runner needs the docker SDK for Python; fix: "
                                "pip install docker (or pip install -e .)") from None
    try:
        client = docker.client.from_env(timeout=300)  # a loaded machine makes the engine slow
        info = client.info()
    except DockerException as e:
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        raise DockerUnavailable(f"no Docker engine reachable at {where} ({e}); fix: start dockerd "
                                "(docker/README.md), or set DOCKER_HOST") from None
    try:
        client.images.get(image)
    except ImageNotFound:
        raise DockerUnavailable(f"no image {image!r} in the Docker engine; fix: {BUILD_HINT}") from None
    except DockerException as e:
        raise DockerUnavailable(f"the Docker engine failed looking up {image!r}: {e}") from None
    return client, info


def run_container(client: Any, config: dict[str, Any], stdin: bytes, timeout_s: float,
                  stdout_cap: int) -> Generator[bytes, None, Outcome]:
    """Create and start a container from `config` (containers.create's arguments, with
    stdin_open), send it `stdin`, yield each stdout line as it comes; return (StopIteration.value)
    its Outcome. Past `timeout_s` or `stdout_cap` it is killed. Closing the generator early kills
    it. It is removed in every case."""
    from docker.errors import APIError, DockerException

    try:
        container = client.containers.create(**config)
    except DockerException as e:
        raise DockerUnavailable(f"the Docker engine refused the container: {e}") from None
    outcome = Outcome()
    try:
        try:
            sock = client.api.attach_socket(container.id, params={"stdin": 1, "stdout": 1, "stderr": 1,
                                                                  "stream": 1})
            container.start()
        except APIError as e:
            raise DockerUnavailable(f"the Docker engine could not start the container: {e}") from None
        raw = getattr(sock, "_sock", sock)
        deadline = time.monotonic() + timeout_s
        try:  # no half-close: the engine would end the whole attach (docker 20.10); one line is read
            raw.sendall(stdin)
        except OSError:
            pass  # it already ended: what it wrote is read below
        stdout_bytes, pending, tail = 0, [], b""
        for stream, chunk in _frames(raw, deadline):
            if stream is None:  # the deadline passed
                outcome.timed_out = True
                break
            if stream == 2:
                tail = (tail + chunk)[-STDERR_TAIL_BYTES:]
                continue
            stdout_bytes += len(chunk)
            if stdout_bytes > stdout_cap:
                outcome.stdout_capped = True
                break
            if b"\n" not in chunk:  # pieces, joined once a newline comes: a long line costs O(n)
                pending.append(chunk)
                continue
            *whole, rest = b"".join(pending + [chunk]).split(b"\n")
            pending = [rest]
            yield from whole
        else:
            if b"".join(pending):
                yield b"".join(pending)
        outcome.stderr_tail = tail.decode(errors="replace")
        _close(sock)  # first: an engine with unread output for us would hold the container back
        if outcome.timed_out or outcome.stdout_capped:
            _kill(container)
            outcome.killed = True
        try:
            outcome.exit_code = container.wait(timeout=60).get("StatusCode")
            container.reload()
            outcome.oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
        except Exception:  # noqa: BLE001 — the engine or the wait failed: no exit code to report
            _kill(container)
        return outcome
    finally:
        _remove(container)


def _remove(container, patience_s: float = 120.0) -> None:
    """Remove it (killing it first if it still runs). A busy engine is given time: a removal it
    already has in progress (409) counts once the container is gone or marked `removing`."""
    from docker.errors import DockerException, NotFound

    deadline = time.monotonic() + patience_s
    while True:
        try:
            container.remove(force=True)
            return
        except NotFound:
            return
        except DockerException:
            try:
                container.reload()
                if container.status == "removing":
                    return
            except NotFound:
                return
            except DockerException:
                pass
        if time.monotonic() > deadline:
            return
        time.sleep(1.0)


def _close(sock) -> None:
    for s in (getattr(sock, "_sock", None), sock):
        try:
            if s is not None:
                s.close()
        except OSError:
            pass


def _kill(container) -> None:
    try:
        container.kill()
    except Exception:  # noqa: BLE001 — already ended
        pass


def _frames(raw, deadline: float) -> Iterator[tuple[int | None, bytes]]:
    """The attach stream's multiplexed frames (8-byte header: stream, 0, 0, 0, big-endian size)
    until EOF; (None, b"") once `deadline` passes."""
    buf = b""
    while True:
        while len(buf) >= 8:
            stream, size = struct.unpack(">BxxxI", buf[:8])
            if len(buf) < 8 + size:
                break
            yield stream, buf[8:8 + size]
            buf = buf[8 + size:]
        left = deadline - time.monotonic()
        if left <= 0:
            yield None, b""
            return
        ready, _, _ = select.select([raw], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            chunk = raw.recv(1 << 16)
        except OSError:
            return
        if not chunk:
            return
        buf += chunk
