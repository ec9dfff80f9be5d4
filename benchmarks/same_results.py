"""Same seed, same results: a fixed set of small training runs, recorded with one source tree
and compared row by row with another, to show that a change to the training driver (trainer,
runner, layout, CLI) leaves every result as it was, bit for bit.

``run`` trains each run of ``RUNS`` with the ``evolax train`` of ``--tree`` (subprocesses with
``PYTHONPATH=TREE/src``, on the CPU, ``EVOLAX_MEASURE_LAYOUT=0`` so that the evaluation layout
is not timed but the same in every tree, no progress bar), each into ``OUT/NAME``, its
console output in ``OUT/NAME.log``, and records the commands, the tree's commit and each run's
seconds in ``OUT/runs.json``. The runs: cart-pole (``cartpole_easy``, tests and
checkpoints), the same with 3 seeds as one vmapped run, MAP-Elites on the arm
(``archive.json``), NSGA-II on cart-pole with the control effort as a second objective
(``pareto_front.json``), a gymnasium task stepped on the host, LowRankES (a population held as
seeds), a two-process run on localhost (gloo), and two resumed runs (train to generation 10,
then ``--resume`` to 20; one of them with two processes).

``compare`` reads two such folders and, for each run, compares every ``train`` and ``test``
row of ``metrics.jsonl`` (matched by kind, generation and seed), ``summary.json``, and
``pareto_front.json`` and ``archive.json`` where present: every field except timings
(``wall_time`` and names ending in ``_s``, such as ``compile_s`` and ``env_steps_per_s``) and
``layout_source`` (where the layout came from: a resumed run reads it from its folder), with
exact equality; the layout itself is compared. A field only one side has is reported but
does not fail. A resumed run is also compared with its uninterrupted twin in each folder. It
prints a table (rows compared, largest absolute difference, identical or not) and the first
differences, and exits with 1 if any run differs.

    git worktree add --detach /tmp/evolax-base HEAD      # the tree before the change
    python benchmarks/same_results.py run --tree /tmp/evolax-base --out /tmp/rows-base
    python benchmarks/same_results.py run --out /tmp/rows-new    # this tree; 2-4 minutes
    python benchmarks/same_results.py compare /tmp/rows-base /tmp/rows-new

The script imports nothing of evolax itself, so any Python with evolax's dependencies runs it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: small: 16 members x 2 episodes, an MLP [16], 4 test episodes; a chunk and a test every 5
#: generations, a checkpoint every 10 (and the last)
SMALL = [
    *("--pop-size", "16", "--n-repeats", "2", "--hidden-sizes", "16", "--log-interval", "5"),
    *("--test-interval", "5", "--checkpoint-interval", "10", "--test-episodes", "4"),
]
ONE_PROCESS = ["--cpu-devices", "2"]  # whatever the machine's cores: 2 devices, as in 2 processes
CARTPOLE = ["cartpole_easy", *SMALL, "--max-steps", "100"]  # episodes of 100 steps
TWO_PROCESSES = [*CARTPOLE, "--seed", "7"]  # a device per process (XLA_FLAGS)


@dataclasses.dataclass(frozen=True)
class Run:
    """One run: ``evolax train ARGS --generations GENERATIONS --run-dir OUT/NAME``; with
    ``resume_at``, to that generation first and then ``--resume`` to ``generations``."""

    name: str
    args: list[str]
    generations: int = 20
    resume_at: int | None = None
    processes: int = 1
    twin: str | None = None  # the uninterrupted run whose rows a resumed one must repeat


RUNS = [
    Run("cartpole", [*CARTPOLE, "--seed", "3", *ONE_PROCESS]),
    Run("cartpole-seeds", [*CARTPOLE, "--seed", "3", "--seeds", "3", *ONE_PROCESS]),
    Run(
        "qd",
        [
            *("arm", "--pop-size", "16", "--grid-shape", "8,8", "--log-interval", "5"),
            *("--test-interval", "10", "--checkpoint-interval", "10", "--test-episodes", "1"),
            *("--seed", "1", *ONE_PROCESS),
        ],
    ),
    Run(
        "multi-objective",
        [
            "cartpole_easy",
            "algorithm.name=evolax.algorithms.nsga2:NSGA2",
            "algorithm.n_objectives=2",
            "algorithm.lower=[-3]",
            "algorithm.upper=[3]",
            "algorithm.reference_point=[0,-100]",
            "task.name=evolax.tasks.action_cost:ActionCost",
            "task.task.name=cartpole",
            "task.task.max_steps=100",
            *SMALL,
            *("--seed", "2", *ONE_PROCESS),
        ],
    ),
    Run(
        "host",
        [
            *("cartpole_easy", "task.name=gymnasium:CartPole-v1", "task.max_steps=100"),
            *("task.n_workers=2", "task.overlap=true", "--pop-size", "8", "--n-repeats", "2"),
            *("--hidden-sizes", "8", "--log-interval", "5", "--test-interval", "5"),
            *("--checkpoint-interval", "5", "--test-episodes", "2", "--seed", "4", *ONE_PROCESS),
        ],
        generations=10,
    ),
    Run("seeded", [*CARTPOLE, "--algo", "low_rank_es", "--seed", "6", *ONE_PROCESS]),
    Run("two-process", TWO_PROCESSES, processes=2),
    Run("resume", [*CARTPOLE, "--seed", "3", *ONE_PROCESS], resume_at=10, twin="cartpole"),
    Run("two-process-resume", TWO_PROCESSES, resume_at=10, processes=2, twin="two-process"),
]
OTHER_FILES = ["pareto_front.json", "archive.json"]
SHOWN = 5  # differences printed per run


# --- run ---------------------------------------------------------------------------------


def environment(tree: Path, processes: int) -> dict[str, str]:
    """The subprocesses' environment: this one's without JAX's, XLA's and evolax's settings,
    then the tree's sources, the CPU, unmeasured layouts (and one device per process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "EVOLAX_"))}
    env |= {
        "PYTHONPATH": str(tree / "src"),
        "JAX_PLATFORMS": "cpu",
        "EVOLAX_MEASURE_LAYOUT": "0",
    }
    if processes > 1:
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steps(run: Run, run_dir: Path) -> list[list[str]]:
    """The ``evolax train`` argument lists the run takes, one after another."""
    first = run.resume_at or run.generations
    commands = [[*run.args, "--generations", str(first), "--run-dir", str(run_dir)]]
    if run.resume_at is not None:
        commands.append(["--resume", str(run_dir), "--generations", str(run.generations)])
    return [["train", *c, "--no-progress"] for c in commands]


def train(tree: Path, run: Run, run_dir: Path, log: Path) -> list[str]:
    """Train ``run`` into ``run_dir`` (all its processes at once); returns the command lines."""
    env = environment(tree, run.processes)
    shown_env = {k: env[k] for k in ("PYTHONPATH", "JAX_PLATFORMS", "EVOLAX_MEASURE_LAYOUT")}
    if run.processes > 1:
        shown_env["XLA_FLAGS"] = env["XLA_FLAGS"]
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in shown_env.items())
    lines = []
    with log.open("w") as out:
        for args in steps(run, run_dir):
            commands = [[sys.executable, "-m", "evolax.cli", *args]]
            if run.processes > 1:
                where = ["--coordinator", f"127.0.0.1:{free_port()}"]
                where += ["--num-processes", str(run.processes)]
                commands = [[*commands[0], *where, "--process-id", str(i)] for i in range(2)]
            for command in commands:
                lines.append(f"{prefix} {shlex.join(command)}")
                out.write(f"$ {lines[-1]}\n")
            out.flush()
            procs = [
                subprocess.Popen(c, env=env, cwd=run_dir.parent, stdout=out, stderr=out)
                for c in commands
            ]
            try:  # until all end, or one fails (the other process would wait for it)
                deadline = time.monotonic() + 600
                while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
                    if any(p.poll() for p in procs):
                        break
                    time.sleep(0.1)
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            codes = [p.returncode for p in procs]
            if any(codes):
                tail = "".join(log.read_text().splitlines(keepends=True)[-20:])
                raise SystemExit(f"{run.name} failed (exit {codes}); {log} ends:\n{tail}")
    return lines


def tree_info(tree: Path) -> dict[str, Any]:
    """Where the tree's evolax is imported from (must be ``TREE/src``) and its commit."""
    where = subprocess.run(
        [sys.executable, "-c", "import evolax; print(evolax.__file__)"],
        env=environment(tree, 1),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(where).resolve().is_relative_to((tree / "src").resolve()):
        raise SystemExit(f"evolax is imported from {where}, not from {tree / 'src'}")

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True)
        return done.stdout.strip()

    return {"evolax": where, "commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "-s"))}


def run_all(tree: Path, out: Path, names: list[str] | None) -> int:
    tree = tree.resolve()
    out = out.resolve()
    chosen = [r for r in RUNS if names is None or r.name in names]
    if names is not None and len(chosen) != len(set(names)):
        raise SystemExit(f"unknown runs among {names}; choose from {[r.name for r in RUNS]}")
    info = tree_info(tree)
    print(f"tree {tree} at {info['commit'][:12]}{' (with changes)' if info['dirty'] else ''}")
    out.mkdir(parents=True, exist_ok=True)
    record_path = out / "runs.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {"runs": {}}
    record |= {"tree": str(tree), **info}
    begin = time.perf_counter()
    for run in chosen:
        run_dir = out / run.name
        if run_dir.exists():  # an earlier recording of this run: replaced
            shutil.rmtree(run_dir)
        start = time.perf_counter()
        commands = train(tree, run, run_dir, out / f"{run.name}.log")
        seconds = time.perf_counter() - start
        record["runs"][run.name] = {"commands": commands, "seconds": round(seconds, 1)}
        record_path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{run.name}: {seconds:.1f} s", flush=True)
    print(f"all {len(chosen)} runs: {time.perf_counter() - begin:.1f} s -> {out}")
    return 0


# --- compare -----------------------------------------------------------------------------


def timing(key: str) -> bool:
    """Whether a field is a time or a rate (differs from run to run), or says where the
    layout came from rather than what it is."""
    return key in ("wall_time", "layout_source") or key.endswith("_s")


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, value)`` for each number, string, bool or null in a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


@dataclasses.dataclass
class Diff:
    """What comparing one run found."""

    rows: int = 0  # metrics rows compared
    max_abs: float = 0.0  # over the numeric fields both sides have
    differences: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)  # one-sided fields

    def fields(self, where: str, a: dict[str, Any], b: dict[str, Any]) -> None:
        """Compare two flat records field by field (timings skipped)."""
        for key in sorted(a.keys() | b.keys()):
            if timing(key.rsplit(".", 1)[-1].split("[")[0]):
                continue
            if key not in a or key not in b:
                side = "first" if key in a else "second"
                self.notes.append(f"{where}: {key} only in the {side}")
                continue
            x, y = a[key], b[key]
            if number(x) and number(y):
                if x == y or (math.isnan(x) and math.isnan(y)):
                    continue
                gap = abs(x - y)
                self.max_abs = max(self.max_abs, gap if not math.isnan(gap) else math.inf)
            elif x == y:
                continue
            self.differences.append(f"{where}: {key} {x!r} != {y!r}")

    def file(self, name: str, a: Path, b: Path) -> None:
        """Compare a JSON file of both runs (one missing: a difference)."""
        if not a.exists() and not b.exists():
            return
        if not (a.exists() and b.exists()):
            self.differences.append(f"{name} only in {a.parent if a.exists() else b.parent}")
            return
        load = lambda p: dict(leaves(json.loads(p.read_text())))  # noqa: E731
        self.fields(name, load(a), load(b))


def rows(run_dir: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The ``train`` and ``test`` rows of a run, by kind, generation and seed."""
    found = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("kind") in ("train", "test"):
            found[(row["kind"], row.get("generation"), row.get("seed"))] = row
    return found


def compare_runs(a: Path, b: Path) -> Diff:
    """Compare run folder ``a`` with ``b``."""
    diff = Diff()
    for side in (a, b):
        if not (side / "metrics.jsonl").exists():
            diff.differences.append(f"{side}: no metrics.jsonl")
    if diff.differences:
        return diff
    rows_a, rows_b = rows(a), rows(b)
    for key in sorted(rows_a.keys() | rows_b.keys(), key=str):
        label = f"{key[0]} row of generation {key[1]}"
        label += "" if key[2] is None else f" seed {key[2]}"
        if key not in rows_a or key not in rows_b:
            diff.differences.append(f"{label} only in {a if key in rows_a else b}")
            continue
        diff.rows += 1
        diff.fields(label, rows_a[key], rows_b[key])
    for name in ["summary.json", *OTHER_FILES]:
        diff.file(name, a / name, b / name)
    return diff


def compare(dir_a: Path, dir_b: Path) -> int:
    """Print the table of each run's comparison; 1 if any differs."""
    for d in (dir_a, dir_b):
        record = d / "runs.json"
        if record.exists():
            info = json.loads(record.read_text())
            dirty = " (with changes)" if info.get("dirty") else ""
            print(f"{d}: tree {info.get('tree')} at {info.get('commit', '?')[:12]}{dirty}")
    names = [r.name for r in RUNS]
    names += sorted(
        {p.name for d in (dir_a, dir_b) for p in d.iterdir() if (p / "metrics.jsonl").exists()}
        - set(names)
    )
    pairs = [(name, dir_a / name, dir_b / name) for name in names]
    for run in RUNS:  # a resumed run against its uninterrupted twin, in each folder
        if run.twin is not None:
            for tag, d in (("A", dir_a), ("B", dir_b)):
                pairs.append((f"{run.name} = {run.twin} ({tag})", d / run.twin, d / run.name))
    results = [(name, compare_runs(a, b)) for name, a, b in pairs]
    width = max(len(name) for name, _ in results)
    print(f"\n{'run':<{width}}  {'rows':>5}  {'max abs diff':>12}  identical")
    failed = False
    for name, diff in results:
        same = not diff.differences
        failed |= not same
        one_sided = len(set(diff.notes))
        note = f" ({one_sided} one-sided field(s), see below)" if one_sided else ""
        verdict = ("yes" if same else "NO") + note
        print(f"{name:<{width}}  {diff.rows:>5}  {diff.max_abs:>12.6g}  {verdict}")
    for name, diff in results:
        if diff.differences or diff.notes:
            print(f"\n{name}:")
            for line in diff.differences[:SHOWN]:
                print(f"  {line}")
            if len(diff.differences) > SHOWN:
                print(f"  ... {len(diff.differences) - SHOWN} more differences")
            notes = sorted(set(diff.notes))
            for line in notes[:SHOWN]:
                print(f"  note: {line}")
            if len(notes) > SHOWN:
                print(f"  note: ... {len(notes) - SHOWN} more fields only one side has")
    print("\nidentical" if not failed else "\nDIFFERENT: see above")
    return int(failed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("run", help="train the runs with a tree's evolax")
    p.add_argument("--tree", type=Path, default=ROOT, help="source tree (default: this one)")
    p.add_argument("--out", type=Path, required=True, help="folder of the run folders")
    p.add_argument("--only", nargs="+", metavar="NAME", help=f"some of {[r.name for r in RUNS]}")
    p = commands.add_parser("compare", help="compare two folders of runs row by row")
    p.add_argument("dir_a", type=Path)
    p.add_argument("dir_b", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        return run_all(args.tree, args.out, args.only)
    return compare(args.dir_a, args.dir_b)


if __name__ == "__main__":
    sys.exit(main())
