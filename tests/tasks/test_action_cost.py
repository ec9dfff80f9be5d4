"""Vector rewards end to end: ``ActionCost`` makes cart-pole a 2-objective task, evaluated as
``[pop, 2]`` fitness and trained by NSGA-II through the ``Trainer`` and ``train``."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import evolax
from evolax import cli
from evolax.algorithms import NSGA2
from evolax.policies.base import Policy
from evolax.tasks import ActionCost, CartPoleSwingUp, MultiAgentWaterWorld


class Constant(Policy):
    """Acts ``params["a"]`` whatever it sees."""

    def init(self, key, obs_shape, action_shape):
        return {"a": jnp.zeros(action_shape)}

    def apply(self, params, obs, state, key):
        return params["a"], state


def test_evaluate_returns_the_reward_and_minus_the_squared_actions(key):
    """Objective 0 is the task's own fitness (evaluated without the wrapper); objective 1 is
    ``-scale * a^2`` per step times the episode's length, for a constant action ``a``."""
    task = CartPoleSwingUp(max_steps=40)
    actions = jnp.array([[0.0], [0.5], [-1.0]])
    population = {"a": actions}
    fitness, info = evolax.evaluate(
        Constant(), ActionCost(task, scale=0.5), population, key, n_repeats=3
    )
    alone, _ = evolax.evaluate(Constant(), task, population, key, n_repeats=3)
    assert fitness.shape == (3, 2) and info.returns.shape == (3, 3, 2)
    np.testing.assert_allclose(fitness[:, 0], alone, rtol=1e-6)
    expected = -0.5 * actions[:, 0] ** 2 * jnp.mean(info.lengths, axis=1)
    np.testing.assert_allclose(fitness[:, 1], expected, rtol=1e-6)


def test_mistakes_are_one_line_errors():
    task = CartPoleSwingUp(max_steps=20)
    nsga2 = NSGA2(pop_size=8, n_objectives=2, lower=-1.0, upper=1.0)
    with pytest.raises(ValueError, match=r"task.reward_shape \(\) must equal NSGA2's"):
        evolax.Trainer(algorithm=nsga2, policy=evolax.MLP(hidden_sizes=(4,)), task=task)
    with pytest.raises(ValueError, match=r"task.reward_shape \(2,\) must equal PGPE's"):
        evolax.Trainer(
            algorithm=evolax.PGPE(pop_size=8),
            policy=evolax.MLP(hidden_sizes=(4,)),
            task=ActionCost(task),
        )
    with pytest.raises(ValueError, match="task must have one objective"):
        ActionCost(ActionCost(task))
    with pytest.raises(ValueError, match="single-agent"):
        ActionCost(MultiAgentWaterWorld())
    with pytest.raises(ValueError, match="scale"):
        ActionCost(task, scale=0.0)


@pytest.mark.slow  # 12 s; benchmarks/pareto_cartpole.py runs it at length
def test_nsga2_trains_two_objective_cartpole_through_train(tmp_path):
    """The metrics hold the objectives' sum and each objective's mean; tests score
    ``[episodes, 2]``, logged by their sum and per objective; the last population goes to
    pareto_front.json and `evolax plot` draws it; the run resumes from its checkpoint. (That a
    trainer's generation compiles once is the trainer's tests'.)"""
    trainer = evolax.Trainer(
        algorithm=NSGA2(pop_size=8, n_objectives=2, lower=-2.0, upper=2.0),
        policy=evolax.MLP(hidden_sizes=(4,)),
        task=ActionCost(CartPoleSwingUp(max_steps=20)),
    )
    run_dir = tmp_path / "run"
    settings = dict(seed=3, run_dir=run_dir, test_interval=2, n_test_episodes=4,
                    checkpoint_interval=2, log_interval=1, progress=False)  # fmt: skip
    evolax.train(trainer, 2, **settings)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for row in (r for r in rows if r["kind"] == "train"):
        assert row["fitness_mean"] == pytest.approx(row["fitness_mean_0"] + row["fitness_mean_1"])
        assert row["fitness_mean_1"] <= 0.0  # minus the effort
    (test,) = [r for r in rows if r["kind"] == "test"]
    assert test["test_mean"] == pytest.approx(test["test_mean_0"] + test["test_mean_1"])
    # the last population, for `evolax plot`: 8 members of 2 objectives, at least one
    # non-dominated, and the plot of it
    front = json.loads((run_dir / "pareto_front.json").read_text())
    assert np.shape(front["objectives"]) == (8, 2) and any(front["pareto_front"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["final_front_size"] == sum(front["pareto_front"])
    assert cli.main(["plot", str(run_dir)]) == 0
    assert (run_dir / "pareto_front.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    resumed = evolax.train(trainer, 4, resume=True, **settings)
    assert int(resumed.state.generation) == 4
