"""Environment steps per second of each JAX environment family's adapter inside evolax's
rollout, against the family's own vmapped loop of the same policy, side by side in one run.

For each environment the same population of evolax's ``MLP`` (the presets' [64, 64] tanh
policy; each member its own LeCun-normal draw) plays one episode of at most ``--max-steps``
steps from the same reset key:

- ``evolax evaluate``: ``evolax.evaluate(policy, task, population, key)`` called as a user
  calls it (it compiles itself once; one device, the while loop that stops once every episode
  has ended).
- ``evolax Trainer``: the evaluation ``Trainer.step`` runs, ``trainer.evaluate`` on the
  trainer's default layout (importing evolax gives JAX a CPU device per core, and the trainer
  splits the population over them), jitted; and the same on one device
  (``trainer.with_layout(Layout(1, pop))``), to tell the layout's share from the rollout's.
- ``family loop``: ``jax.jit(jax.vmap(member))`` written against the family's own API: for
  each member a ``lax.scan`` over ``max_steps`` steps of (flatten the observation -> the MLP
  with the member's weights -> ``argmax`` over the allowed actions -> the family's step),
  from the one reset shared by the population, rewards summed until the episode's first
  ``done`` and the environment stepped on after it (no reset), as evolax does. It draws
  the step keys as evolax does (for the families whose step takes one) and reads the
  observation the way evolax flattens it, so both run the same episodes: the script checks
  that the returns agree.

Env steps per second count every environment step run: ``max_steps`` per episode for the
scan, the while loop's iterations (the longest episode) for evolax; a JaxMARL step moves all
its agents (``n_agents`` members of the population) at once. Every runner takes the key as an
argument (a key fixed at compile time would let XLA fold the family's reset into constants).
Compilation is excluded (one untimed call each); then timing rounds alternate between the
runners, so drift of the machine hits all alike, and each reports its median. The ratio is
evolax's rate over the family loop's, of wall-clock time and of the process's CPU time (the
steadier figure on a shared machine, where the wall clock waits for other processes).
Run with
``nice -n 10 python benchmarks/env_family_speed.py [--rounds 9] [--quick] [--only navix]``;
it writes ``benchmarks/results/env_family_speed.json`` and ``docs/results/env_family_speed.md``.
Kinetix (the ``kinetix_levels`` preset's variant on its level file, unmutated as the family
loop plays it; continuous actions: the MLP's tanh outputs are Kinetix's ``Box(-1, 1)``
actions) runs only when named
(``--only kinetix``): kinetix-env 3.0.2 requires ``jax <= 0.9.0``, so it runs in ``nox -s
kinetix``'s environment, apart from the other families, and its row is merged into the table.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

import evolax
from evolax.config import resolve
from evolax.layout import Layout
from evolax.rollout.episode import episode_keys
from results_table import RESULTS, write_results

HIDDEN = (64, 64)  # the presets' MLP (evolax.MLP's default), tanh


def import_navix():
    """NAVIX, importable where TensorFlow Probability 0.25 (which NAVIX's distrax imports)
    still writes ``jax.interpreters.xla.pytype_aval_mappings``, gone from current JAX."""
    import jax._src.core as core

    if not hasattr(jax.interpreters.xla, "pytype_aval_mappings"):
        jax.interpreters.xla.pytype_aval_mappings = core.pytype_aval_mappings
    import navix

    return navix


def mlp(params, obs):
    """The MLP's forward pass, written out: tanh hidden layers, tanh output."""
    x = obs
    for layer in params[:-1]:
        x = jnp.tanh(x @ layer["w"] + layer["b"])
    return jnp.tanh(x @ params[-1]["w"] + params[-1]["b"])


def flat(obs) -> jax.Array:
    """Every leaf of the observation raveled to float32 and joined (as evolax does)."""
    return jnp.concatenate([jnp.ravel(x).astype(jnp.float32) for x in jax.tree.leaves(obs)])


def step_key(episode_step_key, t):
    """The key of step ``t`` (evolax's: the second half of a split of ``fold_in(key, t)``)."""
    return jax.random.split(jax.random.fold_in(episode_step_key, t))[1]


@dataclasses.dataclass
class Case:
    """One environment: its evolax task and the family's own ``(reset, step, act)``:
    ``reset(key) -> (obs, state)``, ``step(key, state, action) -> (obs, state, reward,
    done)``, ``act(params, obs) -> action``."""

    label: str
    task: Any
    reset: Callable
    step: Callable
    act: Callable
    n_agents: int = 1


def argmax_act(masked: bool):
    def act(params, obs):
        scores = mlp(params, flat(obs))
        if masked:
            scores = jnp.where(obs.action_mask, scores, -jnp.inf)
        return jnp.argmax(scores).astype(jnp.int32)

    return act


def jumanji_case(env_name: str, max_steps: int, masked: bool = True) -> Case:
    from evolax.tasks import Jumanji

    task = Jumanji(env_name, max_steps=max_steps)
    env = task.env  # jumanji.make(env_name)

    def reset(key):
        state, timestep = env.reset(key)
        return timestep.observation, state

    def step(key, state, action):
        state, timestep = env.step(state, action)
        return timestep.observation, state, timestep.reward, timestep.last()

    return Case(f"jumanji:{env_name}", task, reset, step, argmax_act(masked))


def navix_case(env_name: str, max_steps: int) -> Case:
    import_navix()
    from evolax.tasks import Navix

    task = Navix(env_name, max_steps=max_steps)
    env = task.env  # navix.make(env_name, max_steps=max_steps)

    def reset(key):
        timestep = env.reset(key)
        return timestep.observation, timestep

    def step(key, timestep, action):
        timestep = env.step(timestep, action)
        return timestep.observation, timestep, timestep.reward, timestep.is_done()

    return Case(f"navix:{env_name}", task, reset, step, argmax_act(False))


def xminigrid_case(env_name: str, max_steps: int) -> Case:
    from evolax.tasks import XLandMiniGrid

    task = XLandMiniGrid(env_name, max_steps=max_steps)
    env, params = task.env, task.env_params  # xminigrid.make, max_steps replaced

    def reset(key):
        timestep = env.reset(params, key)
        return timestep.observation, timestep

    def step(key, timestep, action):
        timestep = env.step(params, timestep, action)
        return timestep.observation, timestep, timestep.reward, timestep.last()

    return Case(f"xminigrid:{env_name}", task, reset, step, argmax_act(False))


def craftax_case(env_name: str, max_steps: int) -> Case:
    from evolax.tasks import Craftax

    task = Craftax(env_name, max_steps=max_steps)
    env, params = task.env, task.env_params  # auto_reset=False, max_timesteps replaced

    def reset(key):
        return env.reset(key, params)

    def step(key, state, action):
        obs, state, reward, done, _ = env.step(key, state, action, params)
        return obs, state, reward, done

    return Case(f"craftax:{env_name}", task, reset, step, argmax_act(False))


def kinetix_case(env_name: str, levels: tuple[str, ...], max_steps: int) -> Case:
    from evolax.tasks import Kinetix

    task = Kinetix(env_name, levels, max_steps=max_steps)
    env, params = task.env, task.env_params.physics  # auto_reset=False, max_timesteps replaced

    def reset(key):
        return env.reset(key, params)

    def step(key, state, action):
        obs, state, reward, done, _ = env.step(key, state, action, params)
        return obs, state, reward, done

    space = env.action_space(params)  # Box(-1, 1): rescaled as evolax rescales a Box

    def act(params, obs):
        unit = (jnp.clip(mlp(params, flat(obs)), -1.0, 1.0) + 1.0) / 2.0
        return space.low + unit * (space.high - space.low)

    return Case(f"kinetix:{env_name}", task, reset, step, act)


def jaxmarl_case(env_name: str, max_steps: int) -> Case:
    from evolax.tasks import JaxMARL

    task = JaxMARL(env_name, max_steps=max_steps)
    env = task.env  # jaxmarl.make(env_name)
    if len({env.observation_space(a).shape for a in env.agents}) != 1:
        raise ValueError(f"{env_name}: the loop here takes agents of one observation shape")

    def reset(key):
        return env.reset(key)

    def step(key, state, actions):
        key, _ = jax.random.split(key)  # as JaxMARL's own `step` (without its reset)
        obs, state, rewards, dones, _ = env.step_env(key, state, actions)
        return obs, state, jnp.stack([rewards[a] for a in env.agents]), dones["__all__"]

    def act(team_params, obs):  # team_params: [n_agents, ...], agent i played by member i
        stacked = jnp.stack([flat(obs[a]) for a in env.agents])
        scores = jax.vmap(mlp)(team_params, stacked)
        return {a: jnp.argmax(scores[i]).astype(jnp.int32) for i, a in enumerate(env.agents)}

    return Case(f"jaxmarl:{env_name}", task, reset, step, act, n_agents=len(env.agents))


def family_runner(case: Case, population, key, max_steps: int):
    """``run()`` of the family's own loop: ``(returns [pop], env steps run)``."""
    n = case.n_agents
    units = jax.tree.map(lambda x: x.reshape(-1, n, *x.shape[1:]) if n > 1 else x, population)
    n_units = len(jax.tree.leaves(units)[0])

    @jax.jit
    def rollout(units, key):  # the key an argument, so XLA cannot fold the reset
        reset_key, _, episode_step_key = (k[0] for k in episode_keys(key, 1))
        obs, state = case.reset(reset_key)  # one reset, shared by the population

        def member(params):
            def body(carry, t):
                obs, state, ret, alive = carry
                action = case.act(params, obs)
                obs, state, reward, done = case.step(step_key(episode_step_key, t), state, action)
                ret = ret + jnp.where(alive, jnp.asarray(reward, jnp.float32), 0.0)
                return (obs, state, ret, alive & ~done), None

            ret = jnp.zeros((n,) if n > 1 else (), jnp.float32)
            carry = (obs, state, ret, jnp.asarray(True))
            (_, _, ret, _), _ = jax.lax.scan(body, carry, jnp.arange(max_steps))
            return ret

        return jax.vmap(member)(units).reshape(-1)

    def run():
        returns = jax.block_until_ready(rollout(units, key))
        return np.asarray(returns), n_units * max_steps

    return run


def returns_and_steps(info, n_agents: int) -> tuple[np.ndarray, int]:
    """The returns of evolax's one episode per member and the environment steps it ran: the
    while loop runs until its longest episode has ended."""
    lengths = np.asarray(info.lengths)
    return np.asarray(info.returns)[:, 0], lengths.shape[0] // n_agents * int(lengths.max())


def evolax_runner(case: Case, population, key):
    """``run()`` of ``evolax.evaluate``, called eagerly: ``(returns [pop], env steps run)``."""
    policy, task = evolax.MLP(hidden_sizes=HIDDEN), case.task

    def run():
        _, info = jax.block_until_ready(evolax.evaluate(policy, task, population, key))
        return returns_and_steps(info, case.n_agents)

    return run


def trainer_runner(case: Case, population, key, one_device: bool = False):
    """``run()`` of the evaluation in ``Trainer.step``: on the trainer's default layout, or
    on one device (``Layout(1, pop)``, as ``Trainer.with_layout`` sets it)."""
    pop_size = len(jax.tree.leaves(population)[0])
    trainer = evolax.Trainer(
        algorithm=evolax.PGPE(pop_size=pop_size, optimizer=optax.adam(0.05)),
        policy=evolax.MLP(hidden_sizes=HIDDEN),
        task=case.task,
    )
    if one_device:
        trainer = trainer.with_layout(Layout(1, pop_size))
    evaluate = jax.jit(lambda p, k: trainer.evaluate(p, k, None))

    def run():
        _, info = jax.block_until_ready(evaluate(population, key))
        return returns_and_steps(info, case.n_agents)

    return run, trainer.layout


CASES: dict[str, Callable[[int], Case]] = {
    "jumanji:Snake-v1": lambda t: jumanji_case("Snake-v1", t),
    "jumanji:Game2048-v1": lambda t: jumanji_case("Game2048-v1", t),
    "navix:Navix-Empty-5x5-v0": lambda t: navix_case("Navix-Empty-5x5-v0", t),
    "xminigrid:MiniGrid-Empty-5x5": lambda t: xminigrid_case("MiniGrid-Empty-5x5", t),
    "craftax:Craftax-Classic-Symbolic-v1": lambda t: craftax_case("Craftax-Classic-Symbolic-v1", t),
    # MPE ends its episodes at 25 steps: the loops run those (a longer scan would step on)
    "jaxmarl:MPE_simple_spread_v3": lambda t: jaxmarl_case("MPE_simple_spread_v3", min(t, 25)),
    # the kinetix_levels preset's variant and level file (a small "s/" level), unmutated
    "kinetix:Kinetix-Symbolic-Continuous-v1": lambda t: kinetix_case(
        "Kinetix-Symbolic-Continuous-v1", tuple(resolve("kinetix_levels")["task"]["levels"]), t
    ),
}
FAMILY = "family loop"
NEEDS_OLD_JAX = ("kinetix",)  # kinetix-env 3.0.2 requires jax <= 0.9.0: run with --only kinetix
RUNNERS = {  # evolax's runners: the table's heading of each
    "evolax evaluate": "evolax `evaluate`",
    "evolax Trainer": "evolax `Trainer`, default layout",
    "evolax Trainer, one device": "evolax `Trainer`, one device",
}


def table(rows: list[dict]) -> str:
    lines = [
        "| environment | family's own loop | "
        + " | ".join(RUNNERS.values())
        + " | returns equal |",
        "|---|---|" + "---|" * len(RUNNERS) + "---|",
    ]
    for row in rows:
        if row.get("skipped"):
            lines.append(f"| `{row['env']}` | {row['skipped']} |" + " |" * (len(RUNNERS) + 1))
            continue
        rate, ratio, cpu = row["env_steps_per_second"], row["ratio"], row["cpu_ratio"]
        cells = [f"{rate[r]:,.0f}: **{ratio[r]:.2f}** (CPU {cpu[r]:.2f})" for r in RUNNERS]
        lines.append(
            f"| `{row['env']}` | {rate[FAMILY]:,.0f} | " + " | ".join(cells) + f" | "
            f"{row['returns_equal']} |"
        )
    return "\n".join(lines)


def measure(name: str, args) -> dict:
    case = CASES[name](args.max_steps)
    policy = evolax.MLP(hidden_sizes=HIDDEN)
    keys = jax.random.split(jax.random.key(0), args.pop_size)
    population = jax.vmap(lambda k: policy.init(k, case.task.obs_shape, case.task.action_shape))(
        keys
    )
    key = jax.random.key(1)
    trainer_run, layout = trainer_runner(case, population, key)
    runners = {
        FAMILY: family_runner(case, population, key, case.task.max_steps),
        "evolax evaluate": evolax_runner(case, population, key),
        "evolax Trainer": trainer_run,
        "evolax Trainer, one device": trainer_runner(case, population, key, True)[0],
    }
    compile_seconds, returns = {}, {}
    for runner, run in runners.items():
        start = time.perf_counter()
        returns[runner], _ = run()
        compile_seconds[runner] = time.perf_counter() - start
    rates: dict[str, list[float]] = {runner: [] for runner in runners}
    cpu_rates: dict[str, list[float]] = {runner: [] for runner in runners}
    steps: dict[str, int] = {}
    for _ in range(args.rounds):
        for runner, run in runners.items():
            start, cpu = time.perf_counter(), time.process_time()
            _, steps[runner] = run()
            rates[runner].append(steps[runner] / (time.perf_counter() - start))
            cpu_rates[runner].append(steps[runner] / (time.process_time() - cpu))
    median = {runner: statistics.median(r) for runner, r in rates.items()}
    cpu_median = {runner: statistics.median(r) for runner, r in cpu_rates.items()}
    equal = all(np.allclose(returns[r], returns[FAMILY], rtol=1e-5, atol=1e-5) for r in runners)
    row = {
        "env": name,
        "env_steps_per_second": median,
        "ratio": {r: median[r] / median[FAMILY] for r in RUNNERS},
        "env_steps_per_cpu_second": cpu_median,
        "cpu_ratio": {r: cpu_median[r] / cpu_median[FAMILY] for r in RUNNERS},
        "returns_equal": "yes" if equal else "no",
        "trainer_layout": dataclasses.asdict(layout),
        "env_steps_per_call": steps,
        "first_call_seconds": compile_seconds,
        "all_rounds": rates,
        "all_rounds_cpu": cpu_rates,
        "mean_return": float(np.mean(returns[FAMILY])),
    }
    ratios = ", ".join(
        f"{r} {row['ratio'][r]:.2f} (CPU {row['cpu_ratio'][r]:.2f})" for r in RUNNERS
    )
    print(
        f"{name}: family loop {median[FAMILY]:,.0f} steps/s; {ratios}; returns equal: {equal}",
        flush=True,
    )
    return row


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pop-size", type=int, default=126, help="a multiple of 3 (JaxMARL)")
    parser.add_argument("--max-steps", type=int, default=100, help="episode length limit")
    parser.add_argument("--rounds", type=int, default=9, help="alternating timing rounds")
    parser.add_argument("--quick", action="store_true", help="pop 24, 30 steps, 2 rounds")
    parser.add_argument("--only", nargs="*", help="environments (or families) to run")
    parser.add_argument("--out", type=Path, default=RESULTS / "env_family_speed.json")
    args = parser.parse_args()
    if args.quick:
        args.pop_size, args.max_steps, args.rounds = 24, 30, 2
    names = [
        n
        for n in CASES
        if (any(n == o or n.startswith(o + ":") for o in args.only))
        or (not args.only and not n.startswith(NEEDS_OLD_JAX))
    ]
    rows = [measure(name, args) for name in names]
    packages = ("evolax", "jax", "jumanji", "navix", "xminigrid", "craftax", "jaxmarl")
    packages += ("kinetix-env",)
    write_results(
        args.out,
        "env_family_speed",
        rows,
        table,
        config={
            "pop_size": args.pop_size,
            "max_steps": args.max_steps,
            "n_repeats": 1,
            "policy": f"MLP {list(HIDDEN)} tanh",
            "rounds": args.rounds,
            "devices": len(jax.devices()),
        },
        versions={n: package_version(n) for n in packages},
    )
    print(table(rows))


if __name__ == "__main__":
    main()
