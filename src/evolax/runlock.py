"""One writer per run folder: an advisory lock held for a run's whole life.

:class:`RunLock` takes an exclusive ``flock`` on ``RUN_DIR/run.lock`` and writes its holder
(pid, host, start time, command line) into it. A second process asking for the same folder is
refused at once with one line naming that holder (:class:`RunFolderBusy`). The operating
system releases the lock when the holding process ends in any way, SIGKILL included, so the
lock of a killed run is simply taken over (its stale holder line is overwritten). In one
process the lock is re-entrant: the ``evolax train`` command and the :func:`evolax.train` it
calls share it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

LOCK_FILE = "run.lock"
_HELD: dict[Path, tuple[int, int]] = {}  # lock file -> (file descriptor, holders here)


class RunFolderBusy(ValueError):
    """The run folder is held by another live process."""


def _describe(holder: dict[str, Any]) -> str:
    started = holder.get("started")
    since = time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(started)) if started else ""
    return f"process {holder.get('pid', '?')} on {holder.get('host', '?')}{since}"


def read_holder(run_dir: str | Path) -> dict[str, Any]:
    """What the lock file of ``run_dir`` says of its (last) holder; ``{}`` if nothing."""
    try:
        return json.loads((Path(run_dir) / LOCK_FILE).read_text())
    except (OSError, ValueError):
        return {}


class RunLock:
    """Hold ``run_dir`` (made if missing) for writing until :meth:`release`.

    Raises:
        RunFolderBusy: another process holds it.
        OSError: advisory locks are unavailable here (no ``fcntl``: not a POSIX system).
    """

    def __init__(self, run_dir: str | Path):
        try:
            import fcntl
        except ImportError:  # Windows
            raise OSError(
                "evolax locks a run folder with fcntl.flock, which this system lacks"
            ) from None
        folder = Path(run_dir).absolute()
        folder.mkdir(parents=True, exist_ok=True)
        self.path = (folder / LOCK_FILE).resolve()
        self._held = True
        #: the last holder's line, where a run that died holding the folder left one
        self.stale: dict[str, Any] = {}
        if self.path in _HELD:
            fd, count = _HELD[self.path]
            _HELD[self.path] = (fd, count + 1)
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunFolderBusy(
                f"{run_dir} is in use by {_describe(read_holder(folder))}: one run writes to a "
                "folder at a time; wait for that run to end, or choose another run folder"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        self.stale = read_holder(folder)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.time(),
            "argv": sys.argv,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        _HELD[self.path] = (fd, 1)

    def release(self) -> None:
        """Let go of the folder (the last holder in this process unlocks it)."""
        if not self._held:
            return
        self._held = False
        fd, count = _HELD.pop(self.path)
        if count > 1:
            _HELD[self.path] = (fd, count - 1)
            return
        os.ftruncate(fd, 0)  # no holder: nothing stale for the next one to read
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["LOCK_FILE", "RunFolderBusy", "RunLock", "read_holder"]
