"""One writer per run folder: a second run into a live folder is refused at once, naming the
holder; a killed holder's folder is taken over, with nothing of its unfinished saves left."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from evolax.runlock import LOCK_FILE, RunFolderBusy, RunLock, read_holder
from helpers import run_evolax, start_evolax

FLAGS = [
    "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "50",
    "--hidden-sizes", "8", "--log-interval", "1", "--test-interval", "100000",
    "--checkpoint-interval", "5", "--test-episodes", "2", "--no-progress",
]  # fmt: skip
HOLD = "import sys, time; from evolax.runlock import RunLock; RunLock(sys.argv[1]); print('held', flush=True); time.sleep(600)"  # noqa: E501


def _holder(folder):
    """A process that takes ``folder``'s lock and sleeps holding it."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_held_folder_is_refused_and_a_killed_holders_is_taken_over(tmp_path):
    holder = _holder(tmp_path)
    try:
        with pytest.raises(RunFolderBusy, match=f"in use by process {holder.pid} on "):
            RunLock(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert read_holder(tmp_path)["pid"] == holder.pid  # the dead holder's line is still there
    with RunLock(tmp_path) as lock:  # the OS released its lock: taken over
        assert lock.stale["pid"] == holder.pid
        assert read_holder(tmp_path)["pid"] == os.getpid()
        with RunLock(tmp_path / ".") as again:  # re-entrant within one process
            assert again.stale == {}
        assert read_holder(tmp_path)["pid"] == os.getpid()  # still held
    assert (tmp_path / LOCK_FILE).read_text() == ""  # released: no holder to name
    RunLock(tmp_path).release()  # and free again


def _wait_for(condition, process, seconds=240):
    deadline = time.monotonic() + seconds
    while not condition():
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)


def test_two_runs_into_one_folder_and_a_resume_of_a_live_run_are_refused(tmp_path):
    """Two real `evolax train` processes: the second is refused before it compiles anything,
    as is a `--resume` of the live run; once the first is SIGKILLed, a resume takes its folder
    over, removes the half-written checkpoint it left, and the metrics hold every generation
    once."""
    live = tmp_path / "live"
    first = start_evolax(
        "train", *FLAGS, "--generations", "1000000", "--run-dir", live, cwd=tmp_path
    )
    try:
        _wait_for(lambda: (live / "checkpoints" / "5").exists(), first)
        tries = [["train", *FLAGS, "--run-dir", live], ["train", "--resume", live]]
        seconds = [start_evolax(*t, "--generations", "10", cwd=tmp_path) for t in tries]
        for second in seconds:  # both at once
            _, err = second.communicate(timeout=300)
            assert second.returncode == 2
            (line,) = err.splitlines()  # one line, no traceback
            assert line.startswith(
                f"evolax train: error: {live} is in use by process {first.pid} on "
            )
            assert line.endswith("wait for that run to end, or choose another run folder")
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()
    # the killed run may have died mid-save; make sure one is there to be cleaned
    (live / "best" / "7.orbax-checkpoint-tmp").mkdir(parents=True, exist_ok=True)
    saved = max(int(p.name) for p in (live / "checkpoints").iterdir() if p.name.isdigit())
    target = saved + 3
    resumed = run_evolax("train", "--resume", live, "--generations", target, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    leftovers = [p for p in live.rglob("*") if "orbax-checkpoint-tmp" in p.name]
    assert leftovers == []
    rows = [json.loads(line) for line in (live / "metrics.jsonl").read_text().splitlines()]
    generations = [row["generation"] for row in rows if row["kind"] == "train"]
    assert generations == list(range(1, target + 1))  # each once, whoever wrote it
    assert (live / LOCK_FILE).read_text() == ""
