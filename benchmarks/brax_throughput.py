"""Brax ant on CPU: environment steps per second of evolax's ``evaluate`` against a plain
vmapped Brax rollout of the same policy and parameters, and against EvoJAX's ``BraxTask``.

All three run the same population (EvoJAX's Brax benchmark policy: an MLP [32, 32, 32, 32]
with tanh, 27 -> 8) on the same Brax environment (``ant``, ``mjx`` backend by default):

- ``evolax``: ``evolax.evaluate`` on ``evolax.tasks.brax.Brax`` (repeats vmapped with shared
  parameters inside the population vmap; a ``while_loop`` that stops when every episode has
  ended).
- ``plain brax``: ``lax.scan`` over ``max_steps`` steps of ``vmap(env.step)`` on Brax's bare
  environment, the population repeated ``n_repeats`` times along one batch axis, rewards
  summed until each episode's first ``done``; the same reset keys and parameters as evolax,
  so it runs the same episodes. Their returns agree only for episodes that end within a few
  dozen steps: the ant's contact dynamics are chaotic in float32, and two batch layouts of
  the same Brax step (``vmap`` over ``pop * repeats`` or ``vmap(vmap)`` over ``[pop,
  repeats]``) already differ by about 1e-5 in the observations after one step, which grows
  tenfold every few steps. The JSON records how many episodes agree.
- ``evojax``: EvoJAX's ``BraxTask`` driven by its ``SimManager.eval_params``. EvoJAX 0.2.17
  passes ``legacy_spring=True`` to ``brax.envs.create``, which current Brax rejects; the
  script records that error, then runs EvoJAX's task with ``brax.envs.create`` wrapped to
  drop the argument (and to choose the backend), so the rest of EvoJAX's code runs unchanged.

Compilation is timed separately (one untimed call of each before the rounds); then timing
rounds alternate between the runners so that drift of the machine hits all of them alike.
Steps per second count every simulated environment step: evolax's loop stops when its last
episode ends, the scans always run ``max_steps``. Results go to
``benchmarks/results/brax_throughput.json`` and the Markdown table docs/results.md includes to
``brax_throughput.md`` (``--out``), and the table to stdout. Example (2 CPU cores, a few
minutes, most of it compiling)::

    python benchmarks/brax_throughput.py --pop-size 16 --n-repeats 4 --max-steps 200
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

import evolax
from evolax.rollout import episode_keys
from evolax.tasks.brax import Brax
from results_table import RESULTS, write_results

HIDDEN = (32, 32, 32, 32)  # EvoJAX scripts/benchmarks/problems.py, setup_brax


def evolax_runner(task: Brax, policy, population, key, n_repeats: int):
    """``run()`` of evolax's evaluate: ``(returns [pop, repeats], simulated steps)``."""
    pop_size = len(population[0]["b"])
    evaluate = jax.jit(lambda p, k: evolax.evaluate(policy, task, p, k, n_repeats=n_repeats))

    def run():
        _, info = jax.block_until_ready(evaluate(population, key))
        # the while loop ran until its longest episode ended
        return np.asarray(info.returns), pop_size * n_repeats * int(np.max(info.lengths))

    return run


def plain_runner(task: Brax, policy, population, key, n_repeats: int, max_steps: int):
    """``run()`` of a plain Brax rollout: the same episodes as ``evaluate`` (same reset keys,
    same parameters), ``scan`` over ``vmap(env.step)`` on the bare environment."""
    from brax import envs

    env = envs.get_environment(task.env_name, backend=task.backend)
    pop_size = len(population[0]["b"])

    def rollout(population, key):
        reset_keys = episode_keys(key, n_repeats)[0]
        states = jax.vmap(env.reset)(reset_keys)  # [repeats]
        # one batch axis of pop * repeats environments: individual i, repeat r at i * R + r
        states = jax.tree.map(lambda x: jnp.tile(x, (pop_size,) + (1,) * (x.ndim - 1)), states)
        params = jax.tree.map(lambda x: jnp.repeat(x, n_repeats, axis=0), population)
        policy_state = policy.reset(key)

        def act(p, obs):
            return policy.apply(p, obs, policy_state, key)[0]

        def body(carry, _):
            states, returns, alive = carry
            states = jax.vmap(env.step)(states, jax.vmap(act)(params, states.obs))
            returns = returns + jnp.where(alive, states.reward, 0.0)
            return (states, returns, alive & (states.done == 0)), None

        n = pop_size * n_repeats
        carry = (states, jnp.zeros(n), jnp.ones(n, bool))
        (_, returns, _), _ = jax.lax.scan(body, carry, None, length=max_steps)
        return returns.reshape(pop_size, n_repeats)

    compiled = jax.jit(rollout)

    def run():
        returns = jax.block_until_ready(compiled(population, key))
        return np.asarray(returns), pop_size * n_repeats * max_steps

    return run


def evojax_runner(
    env_name: str, backend: str, flat_params, n_repeats: int, max_steps: int, seed: int
) -> tuple[str, Callable[[], tuple[None, int]] | None]:
    """EvoJAX's ``BraxTask`` as published (its error, if any), then with ``brax.envs.create``
    wrapped to drop ``legacy_spring``: ``(error, run)``; ``run`` is None if it still fails."""
    import brax.envs
    import evojax.task.brax_task as brax_task
    from evojax.policy import MLPPolicy
    from evojax.sim_mgr import SimManager

    try:
        brax_task.BraxTask(env_name=env_name, max_steps=max_steps)
        error = ""
    except Exception as exc:  # report whatever EvoJAX's task raises on current Brax
        error = f"{type(exc).__name__}: {exc}"

    def create(env_name, episode_length, legacy_spring=None, **kwargs):
        del legacy_spring  # Brax >= 0.10 has no legacy spring model
        return brax.envs.create(env_name, episode_length=episode_length, backend=backend, **kwargs)

    original = brax_task.create
    brax_task.create = create
    try:
        task = brax_task.BraxTask(env_name=env_name, max_steps=max_steps)
        logger = logging.getLogger("evojax-bench")
        logger.setLevel(logging.WARNING)
        policy = MLPPolicy(
            input_dim=task.obs_shape[0],
            hidden_dims=list(HIDDEN),
            output_dim=task.act_shape[0],
            logger=logger,
        )
        pop_size = flat_params.shape[0]
        params = jnp.asarray(flat_params[:, : policy.num_params])
        sim = SimManager(
            n_repeats=n_repeats,
            test_n_repeats=1,
            pop_size=pop_size,
            n_evaluations=1,
            policy_net=policy,
            train_vec_task=task,
            valid_vec_task=task,
            seed=seed,
            logger=logger,
        )
    except Exception as exc:
        return f"{error}; with legacy_spring dropped: {type(exc).__name__}: {exc}", None
    finally:
        brax_task.create = original

    def run():
        scores, _ = sim.eval_params(params=params, test=False)
        jax.block_until_ready(scores)
        return None, pop_size * n_repeats * max_steps  # its scan always runs max_steps

    return error, run


#: The table's name of each runner.
RUNNERS = {
    "evolax evaluate": "evolax `evaluate`",
    "plain vmapped brax": "a plain `vmap`ped Brax rollout of the same policy (`lax.scan`)",
    "evojax BraxTask (legacy_spring dropped)": "EvoJAX's `BraxTask` (with the `legacy_spring` "
    "argument dropped)",
}


def table(rows: list[dict]) -> str:
    lines = [
        "| runner | env steps per second | first call (compile + run) |",
        "|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {RUNNERS[row['runner']]} | {row['env_steps_per_second']:,.0f} "
            f"| {row['first_call_seconds']:.1f} s |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ant", help="Brax environment")
    parser.add_argument("--backend", default="mjx", help="Brax physics backend")
    parser.add_argument("--pop-size", type=int, default=16)
    parser.add_argument("--n-repeats", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds")
    parser.add_argument("--no-evojax", action="store_true", help="skip EvoJAX's BraxTask")
    parser.add_argument("--out", type=Path, default=RESULTS / "brax_throughput.json")
    args = parser.parse_args()

    task = Brax(args.env, backend=args.backend, max_steps=args.max_steps)
    policy = evolax.MLP(hidden_sizes=HIDDEN)
    keys = jax.random.split(jax.random.key(0), args.pop_size)
    population = jax.vmap(lambda k: policy.init(k, task.obs_shape, task.action_shape))(keys)
    key = jax.random.key(1)

    runners: dict[str, Callable[[], tuple[np.ndarray | None, int]]] = {
        "evolax evaluate": evolax_runner(task, policy, population, key, args.n_repeats),
        "plain vmapped brax": plain_runner(
            task, policy, population, key, args.n_repeats, args.max_steps
        ),
    }
    evojax_error = "not run (--no-evojax)"
    if not args.no_evojax:
        flat = np.asarray(jax.vmap(lambda p: ravel_pytree(p)[0])(population))
        evojax_error, run = evojax_runner(
            args.env, args.backend, flat, args.n_repeats, args.max_steps, seed=0
        )
        print(f"EvoJAX BraxTask as published: {evojax_error or 'ran'}", flush=True)
        if run is not None:
            runners["evojax BraxTask (legacy_spring dropped)"] = run

    compile_seconds, returns = {}, {}
    for name, run in runners.items():
        start = time.perf_counter()
        returns[name], _ = run()  # compiles
        compile_seconds[name] = time.perf_counter() - start
        print(f"{name}: first call (compile + run) {compile_seconds[name]:.1f} s", flush=True)
    difference = np.abs(returns["plain vmapped brax"] - returns["evolax evaluate"])
    agree = int(np.sum(difference <= 1e-3 + 1e-4 * np.abs(returns["plain vmapped brax"])))

    rates: dict[str, list[float]] = {name: [] for name in runners}
    steps: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            _, steps[name] = run()
            rates[name].append(steps[name] / (time.perf_counter() - start))

    median = {name: statistics.median(r) for name, r in rates.items()}
    rows = [
        {
            "runner": name,
            "env_steps_per_second": median[name],
            "first_call_seconds": compile_seconds[name],
        }
        for name in runners
    ]
    write_results(
        args.out,
        f"brax_{args.env}_throughput",
        rows,
        table,
        config={
            "env": args.env,
            "backend": args.backend,
            "pop_size": args.pop_size,
            "n_repeats": args.n_repeats,
            "max_steps": args.max_steps,
            "policy": f"MLP {list(HIDDEN)} tanh",
            "rounds": args.rounds,
        },
        env_steps_per_second=median,
        all_rounds=rates,
        simulated_steps_per_call=steps,
        first_call_seconds=compile_seconds,
        mean_return={name: float(np.mean(r)) for name, r in returns.items() if r is not None},
        episodes_with_equal_returns_evolax_vs_plain=f"{agree} of {difference.size}",
        evojax_brax_task_error=evojax_error,
        versions={n: version(n) for n in ("evolax", "brax", "jax", "mujoco", "evojax")},
    )
    print(table(rows))
    print(f"\nreturns equal (evolax vs plain) in {agree} of {difference.size} episodes")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
