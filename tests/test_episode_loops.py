"""The episode loop's forms (`EpisodeLoop`): the scan and the chunked loop give the while loop's
returns, lengths and wrapper records bit for bit, on tasks that end early, draw per step,
have several agents or several objectives.

The default suite compiles with LLVM's cheapest pipeline (conftest.py), where an unrolled
loop's float sums can differ from the while loop's in the last bit; with XLA's default
optimisation, as users run, they are equal bit for bit (a subprocess checks, in the slow
suite)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax import MLP, PGPE, ActionCost, CartPoleSwingUp, ObsStats, Trainer, evaluate
from evolax.layout import EpisodeLoop, Layout, loop_for
from evolax.policies import Direct
from evolax.tasks import MultiAgentTask, Task
from helpers import state_leaves

WHILE = EpisodeLoop()
# blocks that divide max_steps (20 or 100 below) and blocks that do not
FORMS = [
    EpisodeLoop("scan"),
    EpisodeLoop("scan", unroll=3),
    EpisodeLoop("chunked", block=4),
    EpisodeLoop("chunked", unroll=2, block=7),
]


@chex.dataclass(frozen=True)
class WalkState:
    obs: jax.Array


class RandomWalk(Task):
    """``x`` moves by the action plus noise drawn from each step's key; the episode ends once
    ``|x| > 1`` (after a few steps, differently per episode and individual)."""

    max_steps: int = eqx.field(static=True, default=20)
    obs_shape: tuple = eqx.field(static=True, default=(1,))
    action_shape: tuple = eqx.field(static=True, default=(1,))

    def reset(self, key):
        return WalkState(obs=jax.random.uniform(key, (1,), minval=-0.5, maxval=0.5))

    def step(self, state, action, key):
        x = state.obs + 0.1 * action + 0.3 * jax.random.normal(key, (1,))
        return WalkState(obs=x), jnp.sum(x**2), jnp.abs(x[0]) > 1.0


@chex.dataclass(frozen=True)
class PoolState:
    obs: jax.Array  # [n_agents, 2]: each agent's position and the pool's mean


class RandomPool(MultiAgentTask):
    """:class:`RandomWalk` for ``n_agents`` agents at once, each rewarded its own ``x**2``; the
    pool's episode ends once the agents' mean ``|x|`` passes 1."""

    n_agents: int = eqx.field(static=True, default=2)
    max_steps: int = eqx.field(static=True, default=20)
    obs_shape: tuple = eqx.field(static=True, default=(2,))
    action_shape: tuple = eqx.field(static=True, default=(1,))

    def _state(self, x):
        return PoolState(obs=jnp.stack([x, jnp.full_like(x, jnp.mean(x))], axis=1))

    def reset(self, key):
        return self._state(jax.random.uniform(key, (self.n_agents,), minval=-0.5, maxval=0.5))

    def step(self, state, action, key):
        self.check_actions(action)
        noise = 0.3 * jax.random.normal(key, (self.n_agents,))
        x = state.obs[:, 0] + 0.1 * action[:, 0] + noise
        return self._state(x), x**2, jnp.mean(jnp.abs(x)) > 1.0


def _population(policy, task, key, size, scale=1.0):
    params = [
        policy.init(k, task.obs_shape, task.action_shape) for k in jax.random.split(key, size)
    ]
    return jax.tree.map(lambda *x: scale * jnp.stack(x), *params)


def _equal_in_every_form(policy, task, population, forms=FORMS, **kwargs):
    """Each of ``forms`` gives the while loop's fitness and info; returns the lengths."""
    run = jax.jit(
        lambda p, loop: evaluate(policy, task, p, jax.random.key(1), loop=loop, **kwargs),
        static_argnums=1,
    )
    reference = run(population, WHILE)
    for loop in forms:
        got = run(population, loop)
        jax.tree.map(_same if loop.unroll == 1 else _same_to_a_bit, got, reference)
    return np.asarray(reference[1].lengths)


def _same(x, y):
    np.testing.assert_array_equal(x, y)


def _same_to_a_bit(x, y):
    """Integers equal, floats to their last bits (this suite's cheapest LLVM pipeline)."""
    if jnp.issubdtype(x.dtype, jnp.floating):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=0)
    else:
        np.testing.assert_array_equal(x, y)


def test_cartpole_mlp_with_descriptors_and_observation_statistics():
    policy, task = MLP(hidden_sizes=(8,)), CartPoleSwingUp(max_steps=100, hard=True)
    population = _population(policy, task, jax.random.key(0), 6, scale=4.0)
    stats = ObsStats(count=jnp.array(4.0), mean=jnp.full(5, 0.1), m2=jnp.full(5, 8.0))
    lengths = _equal_in_every_form(
        policy, task, population, n_repeats=3, obs_stats=stats, descriptors=True
    )
    assert lengths.min() < 100 and lengths.max() == 100  # some episodes end early, some not


@pytest.mark.slow  # every form on cart-pole, descriptors and statistics stays in the default run
def test_a_task_drawing_at_every_step_ending_at_random_steps():
    policy, task = MLP(hidden_sizes=(4,)), RandomWalk()
    population = _population(policy, task, jax.random.key(0), 4)
    stats = ObsStats.zeros((1,))
    lengths = _equal_in_every_form(policy, task, population, n_repeats=4, obs_stats=stats)
    assert len(np.unique(lengths)) > 3


def test_a_block_longer_than_an_episode_is_one_block_of_max_steps():
    policy, task = MLP(hidden_sizes=(4,)), RandomWalk(max_steps=6)
    population = _population(policy, task, jax.random.key(0), 4)
    run = jax.jit(
        lambda loop: evaluate(policy, task, population, jax.random.key(1), 4, loop=loop),
        static_argnums=0,
    )
    long = EpisodeLoop("chunked", block=64)
    jax.tree.map(np.testing.assert_array_equal, run(long), run(WHILE))


@pytest.mark.slow
def test_a_multi_agent_task():
    policy, task = MLP(hidden_sizes=(4,)), RandomPool()
    population = _population(policy, task, jax.random.key(0), 4)  # two pools of two
    stats = ObsStats.zeros(task.obs_shape)
    forms = [EpisodeLoop("scan"), EpisodeLoop("chunked", unroll=2, block=7)]
    lengths = _equal_in_every_form(policy, task, population, forms, n_repeats=3, obs_stats=stats)
    assert len(np.unique(lengths)) > 1


def test_a_vector_reward():
    task = ActionCost(CartPoleSwingUp(max_steps=100, hard=True))
    policy = MLP(hidden_sizes=(8,))
    population = _population(policy, task, jax.random.key(0), 6, scale=4.0)
    forms = [EpisodeLoop("scan", unroll=3), EpisodeLoop("chunked", block=4)]
    lengths = _equal_in_every_form(policy, task, population, forms, n_repeats=3)
    assert lengths.min() < 100


@pytest.mark.slow
@chex.dataclass(frozen=True)
class RulesState:
    obs: jax.Array
    rules: jax.Array  # f32[7, 13], drawn at reset, read by every step and never written


class Rules(Task):
    """:class:`RandomWalk` whose drift is a rule drawn at reset: the rules are state that no
    step changes, as an environment's own rules, level or key (XLand-MiniGrid's rulesets)."""

    max_steps: int = eqx.field(static=True, default=20)
    obs_shape: tuple = eqx.field(static=True, default=(1,))
    action_shape: tuple = eqx.field(static=True, default=(1,))

    def reset(self, key):
        return RulesState(obs=jnp.zeros(1), rules=jax.random.normal(key, (7, 13)))

    def step(self, state, action, key):
        x = state.obs + 0.1 * action + 0.3 * state.rules[2, 5] + 0.3 * jax.random.normal(key, ())
        return RulesState(obs=x, rules=state.rules), jnp.sum(x**2), jnp.abs(x[0]) > 1.0


def _loop_input_shapes(jaxpr) -> set[tuple[int, ...]]:
    """The shapes of every input of the (nested) loops of ``jaxpr``."""
    shapes = set()
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("while", "scan"):
            shapes |= {tuple(v.aval.shape) for v in eqn.invars}
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple) else (value,):
                sub = getattr(sub, "jaxpr", sub)
                if hasattr(sub, "eqns"):
                    shapes |= _loop_input_shapes(sub)
    return shapes


@pytest.mark.parametrize("loop", [WHILE, FORMS[0], FORMS[2]], ids=lambda loop: loop.form)
@pytest.mark.parametrize("n_repeats", [1, 3])
def test_state_no_step_changes_is_carried_once_per_episode_not_per_individual(loop, n_repeats):
    """The loop batches the episodes' states only where the steps make them differ: the
    rules come into it once per episode (``[repeats, 7, 13]``, ``[7, 13]`` for one), not once
    per individual, so the steps read them as the environment's own loop would. The
    returns are the while loop's in every form."""
    task, policy = Rules(), MLP(hidden_sizes=())
    population = _population(policy, task, jax.random.key(0), 5)
    jaxpr = jax.make_jaxpr(
        lambda p, k: evaluate(policy, task, p, k, n_repeats=n_repeats, loop=loop)
    )(population, jax.random.key(1))
    rules = [s for s in _loop_input_shapes(jaxpr.jaxpr) if s[-2:] == (7, 13)]
    assert rules and all(s == ((n_repeats,) if n_repeats > 1 else ()) + (7, 13) for s in rules)
    lengths = _equal_in_every_form(policy, task, population, [loop], n_repeats=n_repeats)
    assert 1 < lengths.min() < lengths.max()  # episodes that end early, at different steps


def test_unrolled_loops_are_bit_for_bit_in_the_default_compilation():
    """As users compile (XLA's default optimisation), not this suite's cheapest pipeline."""
    script = textwrap.dedent(
        """
        import jax, numpy as np
        from test_episode_loops import RandomWalk, _population, FORMS, WHILE
        from evolax import MLP, ObsStats, evaluate
        policy, task = MLP(hidden_sizes=(4,)), RandomWalk()
        population = _population(policy, task, jax.random.key(0), 4)
        run = jax.jit(
            lambda loop: evaluate(
                policy, task, population, jax.random.key(1), 4, ObsStats.zeros((1,)), loop=loop
            ),
            static_argnums=0,
        )
        reference = run(WHILE)
        for loop in FORMS:
            if loop.unroll > 1:
                jax.tree.map(np.testing.assert_array_equal, run(loop), reference)
        print("equal")
        """
    )
    tests = Path(__file__).parent
    env = {"PYTHONPATH": f"{tests.parent / 'src'}:{tests}", "XLA_FLAGS": "", "PATH": ""}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.stdout.strip() == "equal", result.stderr[-2000:]


def test_a_whole_run_ends_in_the_same_state_in_every_loop():
    trainer = Trainer(
        algorithm=PGPE(pop_size=8),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=20, hard=True),
        n_repeats=2,
        normalize_obs=True,
        mesh=None,
    )
    state = trainer.init(jax.random.key(0))
    run = eqx.filter_jit(lambda t, s: t.run(s, 2))
    reference = run(trainer, state)
    # chunked: a scan inside a while (the evaluate-level tests above check scan alone)
    for loop in (EpisodeLoop("chunked", block=7),):
        placed = trainer.with_layout(Layout(1, 8, loop))
        assert placed.layout.loop == loop
        got = run(placed, state)
        for x, y in zip(state_leaves(got[0]), state_leaves(reference[0]), strict=True):
            _same_to_a_bit(x, y)  # equal bit for bit with XLA's default code generator
        jax.tree.map(_same_to_a_bit, got[1], reference[1])


def test_fixed_length_is_the_scan_whatever_the_layout():
    assert loop_for(None) == WHILE and loop_for(None, fixed_length=True) == EpisodeLoop("scan")
    assert loop_for(EpisodeLoop("chunked", block=5), True) == EpisodeLoop("scan")
    assert loop_for(EpisodeLoop("scan", unroll=4), True) == EpisodeLoop("scan", unroll=4)
    common = dict(algorithm=PGPE(pop_size=4), policy=Direct(), task=RandomWalk(), mesh=None)
    fixed = Trainer(**common, fixed_length=True)
    assert fixed.layout.loop == EpisodeLoop("scan")
    assert fixed.with_layout(Layout(1, 4)).layout.loop == EpisodeLoop("scan")
    chunked = EpisodeLoop("chunked", block=3)
    assert Trainer(**common, loop=chunked).layout.loop == chunked
    assert Trainer(**common, loop="scan").layout.loop == EpisodeLoop("scan")
    assert Trainer(**common).layout.loop == WHILE


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(form="for"), "form must be one of 'while', 'scan', 'chunked', 'fused', got 'for'"),
        (dict(form="scan", unroll=0), "unroll must be a positive integer, got 0"),
        (dict(form="scan", unroll=2.0), "unroll must be a positive integer, got 2.0"),
        (dict(unroll=2), "unroll must be 1 for form='while'"),
        (dict(form="chunked"), "block must be a positive integer, got None"),
        (dict(form="chunked", block=0), "block must be a positive integer, got 0"),
        (dict(form="scan", block=4), "block is for form='chunked' or 'fused' only, got block=4"),
        (dict(form="fused"), "block must be a positive integer, got None"),
        (dict(form="fused", block=8, unroll=2), "unroll must be 1 for form='fused', got 2"),
        (dict(form="scan", interpret=True), "interpret is for form='fused' only"),
    ],
)
def test_bad_loops_are_refused_in_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as error:
        EpisodeLoop(**kwargs)
    assert "\n" not in str(error.value)


def test_a_trainer_refuses_a_loop_that_is_not_one():
    common = dict(algorithm=PGPE(pop_size=4), policy=Direct(), task=RandomWalk())
    with pytest.raises(ValueError, match="loop must be an EpisodeLoop, 'auto', 'while' or 'scan'"):
        Trainer(**common, loop="chunked")


def test_layout_records_without_a_loop_mean_the_while_loop():
    assert Layout.read({"devices": 2, "pop_chunk": 8}) == Layout(2, 8, WHILE)
    record = {"devices": 1, "pop_chunk": 4, "loop": {"form": "chunked", "unroll": 2, "block": 5}}
    assert Layout.read(record) == Layout(1, 4, EpisodeLoop("chunked", 2, 5))


def test_a_configuration_sets_the_loop_and_older_checkpoints_resume():
    from evolax.config import build_trainer, resolve
    from evolax.runner import check_resumable

    config = resolve("cartpole_easy", ["trainer.loop={form: chunked, block: 50}"])
    assert build_trainer(config).layout.loop == EpisodeLoop("chunked", block=50)
    assert build_trainer(resolve("cartpole_easy", ["trainer.loop=scan"])).layout.loop == (
        EpisodeLoop("scan")
    )

    class Store:  # a checkpoint saved before trainer.loop existed
        run_dir = "runs/old"

        def __init__(self, config):
            self.config = config

        def metadata(self):
            return {"config": self.config}

    here = resolve("cartpole_easy")
    saved = {**here, "trainer": {k: v for k, v in here["trainer"].items() if k != "loop"}}
    check_resumable(Store(saved), here)  # read as the loop those runs had: "auto"
    with pytest.raises(ValueError, match=r"trainer\.loop 'scan' here, 'auto' saved"):
        check_resumable(Store(saved), resolve("cartpole_easy", ["trainer.loop=scan"]))
