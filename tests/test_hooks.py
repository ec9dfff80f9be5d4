"""`evolax.train`'s phases: hooks after every chunk, added to or replacing the standard ones."""

import dataclasses
import json

import numpy as np
import optax

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, train
from evolax.algorithms.base import Output
from evolax.hooks import Hook, LogGenerations, Progress, standard_hooks
from evolax.logging import read_rows


def tiny_trainer() -> Trainer:
    return Trainer(
        algorithm=PGPE(pop_size=8, optimizer=optax.adam(0.05)),
        policy=MLP(hidden_sizes=(4,)),
        task=CartPoleSwingUp(max_steps=20),
    )


@dataclasses.dataclass
class Recorder(Hook):
    """Remembers, after each chunk, the generation and the test results it saw."""

    interval: int = 4
    seen: list = dataclasses.field(default_factory=list)

    def after_chunk(self, run: Progress) -> None:
        self.seen.append((run.generation, [t["test_mean"] for t in run.tests], run.stopping))


def test_a_users_hook_runs_after_the_standard_ones_and_sets_chunk_ends(tmp_path):
    mine = Recorder()
    hooks = [*standard_hooks(log_interval=2, test_interval=3, n_test_episodes=2), mine]
    result = train(tiny_trainer(), 7, hooks=hooks, run_dir=tmp_path / "run", progress=False)
    # chunks end at the multiples of 2 (log), 3 (test), 4 (mine) and the last generation
    assert [g for g, _, _ in mine.seen] == [2, 3, 4, 6, 7]
    tests_seen = [len(t) for _, t, _ in mine.seen]  # tests at 3, 6 and the last: seen after
    assert tests_seen == [0, 1, 1, 1, 1]
    assert mine.seen[-1][1] == [result.summary["final_test_mean"]]
    rows = read_rows(tmp_path / "run" / "metrics.jsonl")
    assert [r["generation"] for r in rows if r["kind"] == "test"] == [3, 6, 7]
    assert {"log_s", "test_s", "checkpoint_s", "hook_s"} <= set(result.summary)


def test_replacing_the_hooks_drops_what_they_did(tmp_path):
    rows = []

    class Rows:
        def write(self, row):
            rows.append(row)

        def close(self):
            pass

    result = train(
        tiny_trainer(), 4, hooks=[LogGenerations(2)], sinks=[Rows()], run_dir=None, progress=False
    )
    assert [r["generation"] for r in rows if r["kind"] == "train"] == [1, 2, 3, 4]
    assert not [r for r in rows if r["kind"] == "test"]  # no test hook: no tests
    assert result.summary["final_test_mean"] is None
    assert "test_s" not in result.summary


class DeclaringPGPE(PGPE):
    """PGPE that declares an output of its own: the run writes it without knowing PGPE."""

    def outputs(self, state):
        mean = np.asarray(state.mean).tolist()
        return {"centre": Output(per_seed={"mean": mean}, shared={"d": 1})}


def test_the_run_writes_what_the_algorithm_declares(tmp_path):
    trainer = dataclasses.replace(tiny_trainer(), algorithm=DeclaringPGPE(pop_size=8))
    one = train(trainer, 2, run_dir=tmp_path / "one", progress=False, n_test_episodes=2)
    record = json.loads((tmp_path / "one" / "centre.json").read_text())
    assert record["generation"] == 2 and record["d"] == 1
    np.testing.assert_allclose(record["mean"], np.ravel(one.state.algo_state.mean))
    many = train(trainer, 2, seed=[3, 4], run_dir=tmp_path / "many", progress=False)
    record = json.loads((tmp_path / "many" / "centre.json").read_text())
    assert record["seeds"] == [3, 4] and record["d"] == 1 and len(record["mean"]) == 2
    np.testing.assert_allclose(record["mean"][1], np.ravel(many.state.algo_state.mean[1]))
