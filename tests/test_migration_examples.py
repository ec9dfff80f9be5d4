"""The guides for evosax and EvoJAX users, tried end to end from those libraries' own examples:
evosax's README loop (read from the installed package's description) against its port by
docs/from_evosax.md's table, and EvoJAX's cart-pole example (examples/train_cartpole.py's
configuration, through its own Trainer) against the `cartpole_easy` preset that
docs/from_evojax.md names. On the same problem and budget the port must match or beat the
original (medians over seeds). Slow: each runs minutes on 2 cores."""

import importlib.metadata
import logging
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import evolax
from evolax.config import build_trainer, resolve

SEEDS = range(4)


def rosenbrock(x):  # minimised; 0 at x = 1
    return jnp.sum(100.0 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1.0 - x[..., :-1]) ** 2, -1)


def evosax_readme_loop() -> str:
    """The first Python example of evosax's README, as the installed package describes it."""
    readme = importlib.metadata.metadata("evosax").get_payload()  # type: ignore[attr-defined]
    loop = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    assert "es = CMA_ES(population_size=32, solution=dummy_solution)" in loop
    assert "es.tell(key, population, fitness, state, params)" in loop
    return loop


# the README's loop ported line by line with docs/from_evosax.md's table
PORTED = """
import jax
from evolax.algorithms import CMAES


# Instantiate the search strategy
es = CMAES(pop_size=32)

# Initialize state
key = jax.random.key(0)
state = es.init(key, dummy_solution)

# Ask-Eval-Tell loop
for i in range(num_generations):
    key, key_ask, key_eval = jax.random.split(key, 3)

    # Generate a set of candidate solutions to evaluate
    population, state = es.ask(key_ask, state)

    # Evaluate the fitness of the population
    fitness = ...

    # Update the evolution strategy (evolax maximises)
    state, metrics = es.tell(key, state, population, -fitness)

# Get best solution
state.best_genome, state.best_fitness
"""


def run_loop(source: str, seed: int) -> float:
    """The loop on Rosenbrock in d = 10 for 150 generations from 0: its best value found."""
    source = source.replace("fitness = ...", "fitness = f(population)")
    source = source.replace("jax.random.key(0)", f"jax.random.key({seed})")
    namespace = {"dummy_solution": jnp.zeros(10), "num_generations": 150, "f": rosenbrock}
    with jax.numpy_rank_promotion("allow"):  # evosax's own code promotes ranks
        exec(compile(source, "readme", "exec"), namespace)
    return abs(float(namespace["state"].best_fitness))


@pytest.mark.slow
def test_evosax_readme_loop_and_its_port_reach_the_same_optimum():
    original = np.median([run_loop(evosax_readme_loop(), s) for s in SEEDS])
    ported = np.median([run_loop(PORTED, s) for s in SEEDS])
    print(
        f"best Rosenbrock value, median of {len(SEEDS)} seeds: "
        f"evolax {ported:.3g}, evosax {original:.3g}"
    )
    assert original < 1.0, "evosax's loop makes progress on this budget"
    assert ported <= 1.5 * original + 1e-8, (ported, original)


def evojax_cartpole(seed: int, generations: int, tmp_path) -> float:
    """EvoJAX's train_cartpole.py configuration (PGPE, pop 64, 16 repeats, MLP [64, 64],
    Adam 0.05, std lr 0.1, init std 0.1) with 200-step episodes, through EvoJAX's Trainer: the
    final test's mean over 100 episodes."""
    from evojax import Trainer
    from evojax.algo import PGPE
    from evojax.policy import MLPPolicy
    from evojax.task.cartpole import CartPoleSwingUp

    (tmp_path / f"evojax-{seed}").mkdir()  # EvoJAX saves its final model there
    logger = logging.getLogger("evojax-cartpole")
    logger.setLevel(logging.WARNING)
    policy = MLPPolicy(input_dim=5, hidden_dims=[64, 64], output_dim=1, logger=logger)
    solver = PGPE(
        pop_size=64, param_size=policy.num_params, optimizer="adam",
        center_learning_rate=0.05, stdev_learning_rate=0.1, init_stdev=0.1, seed=seed,
        logger=logger,
    )  # fmt: skip
    trainer = Trainer(
        policy=policy, solver=solver, train_task=CartPoleSwingUp(max_steps=200),
        test_task=CartPoleSwingUp(max_steps=200, test=True), max_iter=generations,
        log_interval=generations, test_interval=generations, n_repeats=16,
        n_evaluations=100, seed=seed, log_dir=str(tmp_path / f"evojax-{seed}"), logger=logger,
    )  # fmt: skip
    with jax.numpy_rank_promotion("allow"):  # EvoJAX's own code promotes ranks
        return float(trainer.run())


@pytest.mark.slow
def test_evojax_cartpole_example_and_the_preset_reach_the_same_score(tmp_path):
    generations, seeds = 60, [0, 1, 2]
    original = np.median([evojax_cartpole(s, generations, tmp_path) for s in seeds])
    config = resolve("cartpole_easy", ["task.max_steps=200"])  # docs/from_evojax.md's preset
    result = evolax.train(
        build_trainer(config), generations, seed=seeds, test_interval=generations,
        n_test_episodes=100, progress=False,
    )  # fmt: skip
    ported = result.summary["final_test_median"]
    print(f"final test, median of {len(seeds)} seeds: evolax {ported:.1f}, EvoJAX {original:.1f}")
    assert ported >= 0.9 * original, (ported, original)
