"""The training step: ask -> evaluate -> tell, and ``run`` as one ``lax.scan``."""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any, cast

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import Algorithm
from evolax.layout import (
    MAX_LOWERING_SECONDS,
    Choice,
    Layout,
    choose_cached,
    chunk_candidates,
    concrete,
    groups_timed,
    lower,
    measuring,
    signature,
    start_chunk,
    step_bytes,
    timer,
)
from evolax.normalize import ObsStats
from evolax.policies.base import Policy
from evolax.policies.team import replicate
from evolax.rollout import EvalInfo, evaluate
from evolax.seeded import has_shared, is_shared, per_part
from evolax.sharding import POP_AXIS, default_mesh, even_split, population_mesh, split_axis
from evolax.tasks.base import MultiAgentTask, Task
from evolax.types import Metrics, PRNGKey
from evolax.validation import check_positive_int


def _place(state: TrainState, mesh: Mesh | None) -> TrainState:
    """``state`` replicated over ``mesh``'s devices (``None``: left where it is), so every
    step takes and returns states placed alike and a jitted ``run`` compiles once."""
    if mesh is None:
        return state
    return jax.lax.with_sharding_constraint(state, NamedSharding(mesh, P()))


@chex.dataclass(frozen=True)
class TrainState:
    """Everything a training run carries from one generation to the next.

    Attributes:
        algo_state: the algorithm's state.
        obs_stats: running observation statistics (updated only with ``normalize_obs``).
        key: the PRNG key for the next generation.
        generation: generations completed, ``i32[]``.
        env_steps: environment steps simulated so far (episodes until ``done``), ``f32[]``.
    """

    algo_state: object
    obs_stats: ObsStats
    key: PRNGKey
    generation: Int[Array, ""]
    env_steps: Float[Array, ""]


def _check_component(name: str, value: object, base: type, methods: tuple[str, ...]) -> None:
    """Raise unless ``value`` is an instance of ``base``, or has its ``methods``."""
    if isinstance(value, type):
        raise TypeError(
            f"{name} must be an instance, got the class {value.__name__}: pass "
            f"{value.__name__}(...)"
        )
    if not isinstance(value, base) and not all(hasattr(value, m) for m in methods):
        raise TypeError(
            f"{name} must be an evolax {base.__name__} (or have its {', '.join(methods)}), got "
            f"{type(value).__name__} {value!r:.60}"
        )


class Trainer(eqx.Module):
    """Composes an algorithm, a policy and a task into a pure training step.

    ``step`` runs one generation; ``run`` scans it over ``n_generations`` in one compiled
    program. Both are pure: jit them, ``vmap`` them over seeds or hyperparameters, embed them.

    Args:
        algorithm: the evolution algorithm.
        policy: the policy network whose parameters are evolved.
        task: the training task.
        n_repeats: episodes per individual per generation (fitness is their mean).
        normalize_obs: normalise observations with running statistics of training rollouts.
        test_task: the task :meth:`test` scores the best solution on (default: ``task``).
        mesh: a device mesh with a ``"pop"`` axis (see :func:`evolax.sharding.population_mesh`);
            each device then evaluates its slice of the population, or, where the population
            does not split into whole environments per device, the whole population on its
            share of the ``n_repeats`` episodes (:func:`evolax.sharding.split_axis`).
            ``None``: no sharding. ``"auto"`` (the default): whichever is faster of one device
            and the most devices that split the work evenly
            (:func:`evolax.sharding.default_mesh`; on a CPU host, call
            :func:`evolax.use_cpu_cores` first to have one device per core).
        pop_chunk: evaluate (each device's slice of) the population in groups of this many
            individuals one after another (see :func:`evaluate`); ``None``: all at once.
            ``"auto"`` (the default): the fastest group size. Automatic choices are made by
            timing a few candidates when the state is first made or the step first traced
            (:func:`evolax.layout.choose`), once per shape, and recorded in the metrics
            ``eval_devices`` and ``pop_chunk``.
        init_scale: the search starts at ``init_scale`` times the policy's initial parameters,
            ``>= 0``; ``0.0`` starts it at all-zero parameters, as EvoJAX's solvers do.
    """

    algorithm: Algorithm
    policy: Policy
    task: Task
    n_repeats: int = eqx.field(static=True, default=1)
    normalize_obs: bool = eqx.field(static=True, default=False)
    test_task: Task | None = None
    mesh: Mesh | str | None = eqx.field(static=True, default="auto")
    pop_chunk: int | str | None = eqx.field(static=True, default="auto")
    init_scale: float = eqx.field(static=True, default=1.0)

    def __check_init__(self):
        _check_component("algorithm", self.algorithm, Algorithm, ("init", "ask", "tell", "best"))
        _check_component("policy", self.policy, Policy, ("init", "apply"))
        _check_component("task", self.task, Task, ("reset", "step", "obs_shape"))
        if self.test_task is not None:
            _check_component("test_task", self.test_task, Task, ("reset", "step", "obs_shape"))
        check_positive_int("n_repeats", self.n_repeats)
        if not (isinstance(self.init_scale, int | float) and 0 <= self.init_scale < math.inf):
            raise ValueError(f"init_scale must be a finite number >= 0, got {self.init_scale!r}")
        if isinstance(self.task, MultiAgentTask) and self.algorithm.pop_size % self.task.n_agents:
            raise ValueError(
                f"pop_size={self.algorithm.pop_size} must be a multiple of "
                f"task.n_agents={self.task.n_agents}: each environment holds n_agents individuals"
            )
        if not (self.mesh is None or self.mesh == "auto" or isinstance(self.mesh, Mesh)):
            raise ValueError(f"mesh must be a jax.sharding.Mesh, None or 'auto', got {self.mesh!r}")
        if isinstance(self.mesh, Mesh):
            if POP_AXIS not in self.mesh.axis_names:
                raise ValueError(f"mesh must have a {POP_AXIS!r} axis, got {self.mesh.axis_names}")
            # raises when neither the population nor the episodes split evenly
            self._split(self.mesh, self.algorithm.pop_size, self.n_repeats)
        chunk = self.pop_chunk
        if chunk != "auto" and chunk is not None:
            if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
                raise ValueError(
                    f"pop_chunk must be a positive integer, None or 'auto', got {chunk!r}"
                )
        unknown = set(self.algorithm.extra_inputs) - {"descriptors"}
        if unknown:
            raise ValueError(
                f"{type(self.algorithm).__name__} needs {sorted(unknown)} in tell, which the "
                f"trainer cannot provide (it provides descriptors)"
            )
        objectives = tuple(self.algorithm.objectives_shape)
        for name, task in (("task", self.task), ("test_task", self.test_task)):
            if task is not None and tuple(task.reward_shape) != objectives:
                raise ValueError(
                    f"{name}.reward_shape {tuple(task.reward_shape)} must equal "
                    f"{type(self.algorithm).__name__}'s objectives_shape {objectives}: a "
                    f"multi-objective algorithm needs a task with a reward per objective, "
                    f"and one objective a scalar reward"
                )
        if self.uses_descriptors and self.task.descriptor_bounds is None:
            raise ValueError(
                f"{type(self.algorithm).__name__} needs behaviour descriptors, but task "
                f"{type(self.task).__name__} defines none (Task.descriptor, descriptor_bounds)"
            )

    @property
    def _group(self) -> int:
        """Individuals that share one environment."""
        return self.task.n_agents if isinstance(self.task, MultiAgentTask) else 1

    def _meshes(self) -> list[Mesh | None]:
        """The meshes the layout is chosen among: ``mesh``, or for ``"auto"`` the default
        mesh (if there is one) and no mesh."""
        if self.task.on_host:  # stepped on the host: one device computes the actions
            return [None]
        if self.mesh != "auto":
            return [cast(Mesh | None, self.mesh)]
        mesh = default_mesh(self.algorithm.pop_size, self.n_repeats, self._group)
        return [None] if mesh is None else [mesh, None]

    @property
    def uses_descriptors(self) -> bool:
        """Whether the algorithm declares behaviour descriptors among its ``extra_inputs``."""
        return "descriptors" in self.algorithm.extra_inputs

    def _split(self, mesh: Mesh | None, pop_size: int, n_repeats: int) -> str | None:
        """What ``mesh``'s devices split (:func:`evolax.sharding.split_axis`); ``None``: one."""
        if mesh is None:
            return None
        return split_axis(pop_size, n_repeats, mesh.shape[POP_AXIS], self._group)

    @property
    def split(self) -> str | None:
        """What the devices of ``mesh`` (for ``"auto"``: of the default mesh) split:
        ``"pop"``, ``"repeats"``, or ``None`` for one device."""
        return self._split(self._meshes()[0], self.algorithm.pop_size, self.n_repeats)

    def _evaluate(self, population, key, obs_stats, chosen=None) -> tuple[jax.Array, EvalInfo]:
        """The population's fitness and :class:`EvalInfo`, on ``chosen`` (a mesh and layout)
        or else the layout :meth:`layout` picks."""
        mesh, layout = self.layout(population, key, obs_stats) if chosen is None else chosen
        split = self._split(mesh, self.algorithm.pop_size, self.n_repeats)
        return self._evaluate_on(
            self.task,
            population,
            key,
            self.n_repeats,
            obs_stats,
            mesh,
            split,
            layout.pop_chunk,
            self.uses_descriptors,
        )

    def layout(self, population, key, obs_stats) -> tuple[Mesh | None, Layout]:
        """The mesh and :class:`~evolax.layout.Layout` the population is evaluated with (see
        :meth:`layout_choice`)."""
        mesh, choice = self.layout_choice(population, key, obs_stats)
        return mesh, choice.layout

    def layout_choice(
        self, population, key, obs_stats, centre=None, seeds: int = 1
    ) -> tuple[Mesh | None, Choice]:
        """The mesh and :class:`~evolax.layout.Choice` the population is evaluated with: the
        explicit settings, else the fastest candidates measured (now, or once per shape:
        :func:`evolax.layout.choose_cached`) on stand-in individuals around ``centre`` (one
        genome; default zero), for a step ``vmap``-ped over ``seeds`` runs (``seeds`` times
        a group's individuals then share each evaluation)."""
        check_positive_int("seeds", seeds)
        pop_size = self.algorithm.pop_size
        if self.task.on_host:  # evaluate_host batches the whole population itself
            return None, Choice(Layout(1, pop_size), math.nan, 0.0, (), "host")
        options, meshes = [], {}
        for mesh in self._meshes():
            devices = 1 if mesh is None else mesh.shape[POP_AXIS]
            split = self._split(mesh, pop_size, self.n_repeats)
            local = pop_size // devices if split == "pop" else pop_size
            if self.pop_chunk == "auto":
                chunks = chunk_candidates(local // self._group, self._group)
            else:
                chunks = [local if self.pop_chunk is None else cast(int, self.pop_chunk)]
            options.append((devices, chunks))
            meshes[devices] = mesh
        if len(options) == 1 and len(options[0][1]) == 1:
            devices, (chunk,) = options[0]
            return meshes[devices], Choice(Layout(devices, chunk), math.nan, 0.0, (), "explicit")

        stand_in: dict[str, Any] = {}  # concrete inputs, made once `start` runs

        @functools.cache
        def program(layout: Layout, groups: int = 1):
            """The evaluation of ``groups`` groups per device on ``layout``'s devices, lowered,
            its inputs and how many individuals it evaluates."""
            mesh = meshes[layout.devices]
            split = self._split(mesh, pop_size, self.n_repeats)
            n_eval = layout.pop_chunk * groups * (layout.devices if split == "pop" else 1)

            def evaluate_group(trainer, population, key, obs_stats):
                return trainer._evaluate_on(
                    trainer.task,
                    population,
                    key,
                    trainer.n_repeats,
                    obs_stats,
                    mesh,
                    split,
                    layout.pop_chunk,
                    trainer.uses_descriptors,
                )

            noise = np.random.default_rng(n_eval)  # stand-in parameters: N(centre, 0.1^2)
            group = jax.tree.map(
                lambda c, p: (
                    c
                    if is_shared(p)
                    else (c + 0.1 * noise.standard_normal((n_eval, *p.shape[1:]))).astype(p.dtype)
                ),
                stand_in["centre"],
                population,
                is_leaf=is_shared,
            )
            args = (stand_in["trainer"], group, stand_in["key"], stand_in["obs_stats"])
            if seeds == 1:
                return *lower(evaluate_group, *args), n_eval

            def evaluate_seeds(trainer, groups, keys, obs_stats):
                one = functools.partial(evaluate_group, trainer, obs_stats=obs_stats)
                return jax.vmap(one)(groups, keys)

            groups = jax.tree.map(lambda g: jnp.stack([g] * seeds), group)  # keys too
            keys = jax.random.split(stand_in["key"], seeds)
            return *lower(evaluate_seeds, args[0], groups, keys, args[3]), n_eval

        def compile(layout: Layout):
            groups = dict(options)[layout.devices][-1] // layout.pop_chunk
            timed = groups_timed(layout.pop_chunk, groups)
            lowered, inputs, _ = program(layout, timed)
            time_it = timer(lowered, inputs)
            return lambda: time_it() * groups / timed

        def start() -> tuple[int, bool]:
            if centre is None or has_shared(population):
                # a seed-held population's shared parts: zeros (keys from seed 0)
                middle = jax.tree.map(
                    lambda p: concrete(p) if is_shared(p) else np.zeros(p.shape[1:]),
                    population,
                    is_leaf=is_shared,
                )
            else:  # traced parameters become zeros
                middle = jax.tree.map(np.asarray, concrete(centre))
            stand_in.update(
                trainer=concrete(self),
                key=concrete(key),
                obs_stats=concrete(obs_stats),
                centre=middle,
            )
            platform = jax.devices()[0].platform
            devices, chunks = options[0]
            # the whole share's program (the search's likely start): its size, bytes per
            # individual by XLA's cost analysis
            begin = time.perf_counter()
            lowered, _, n_eval = program(Layout(devices, chunks[-1]), 1)
            worth = time.perf_counter() - begin <= MAX_LOWERING_SECONDS
            if platform != "cpu":
                return len(chunks) - 1, worth
            return start_chunk(chunks, step_bytes(lowered) / n_eval, platform), worth

        def what() -> str:
            return signature(
                (self.policy, self.task, self.n_repeats, self.init_scale, self.uses_descriptors),
                (population, key, obs_stats),
                options,
                seeds,
            )

        choice = choose_cached(what, options, compile, start)
        return meshes[choice.layout.devices], choice

    def _mesh_for(self, state: TrainState) -> Mesh | None:
        """The mesh :meth:`step` evaluates ``state``'s population on."""
        population = jax.eval_shape(self.algorithm.ask, state.key, state.algo_state)[0]
        stats = state.obs_stats if self.normalize_obs else None
        return self.layout(population, state.key, stats)[0]

    def chosen_layout(self, state: TrainState, seeds: int = 1) -> Choice:
        """How :meth:`step` evaluates ``state``'s population: the layout's
        :class:`~evolax.layout.Choice` (made now if it has not been yet), for a step
        ``vmap``-ped over ``seeds`` runs (:func:`evolax.train` with several seeds)."""
        population = jax.eval_shape(self.algorithm.ask, state.key, state.algo_state)[0]
        stats = state.obs_stats if self.normalize_obs else None
        return self.layout_choice(population, state.key, stats, seeds=seeds)[1]

    def with_layout(self, layout: Layout) -> Trainer:
        """This trainer with ``layout`` set explicitly: ``pop_chunk``, and ``mesh`` (kept
        where it is a mesh of ``layout.devices`` devices already)."""
        mesh = self.mesh
        if not (isinstance(mesh, Mesh) and mesh.shape[POP_AXIS] == layout.devices):
            available = jax.devices()
            if layout.devices > len(available):
                raise ValueError(
                    f"layout.devices={layout.devices}, but only {len(available)} are available"
                )
            mesh = None if layout.devices == 1 else population_mesh(available[: layout.devices])
        return dataclasses.replace(self, mesh=mesh, pop_chunk=layout.pop_chunk)

    def _evaluate_on(
        self,
        task,
        population,
        key,
        n_repeats,
        obs_stats,
        mesh,
        split,
        pop_chunk=None,
        descriptors=False,
    ) -> tuple[jax.Array, EvalInfo]:
        """`evaluate` over ``mesh``'s devices, which split ``split`` (``None``: one device)."""

        def run(population, key, obs_stats, axis_name=None):
            return evaluate(
                self.policy,
                task,
                population,
                key,
                n_repeats,
                obs_stats,
                axis_name,
                pop_chunk,
                descriptors=descriptors,
                split_repeats=split == "repeats",
            )

        if split is None:
            return run(population, key, obs_stats)
        # PartitionSpecs stand in for the arrays of an EvalInfo of specs
        pop: Any
        replicated: Any
        replicated = P()
        pop = P(POP_AXIS) if split == "pop" else replicated
        stats_spec = None if obs_stats is None else replicated
        info_specs = EvalInfo(
            returns=pop,
            lengths=pop,
            obs_stats=stats_spec,
            descriptors=pop if descriptors else None,
        )
        sharded = jax.shard_map(
            functools.partial(run, axis_name=POP_AXIS),
            mesh=mesh,
            in_specs=(per_part(population, replicated, pop), replicated, replicated),
            out_specs=(pop, info_specs),
            check_vma=False,
        )
        return sharded(population, key, obs_stats)

    def init(self, key: PRNGKey) -> TrainState:
        """Initial parameters from the policy (times ``init_scale``), the algorithm's state
        around them."""
        key, policy_key, algo_key = jax.random.split(key, 3)
        x0 = self.policy.init(policy_key, self.task.obs_shape, self.task.action_shape)
        x0 = jax.tree.map(lambda x: x * jnp.asarray(self.init_scale, x.dtype), x0)
        state = TrainState(
            algo_state=self.algorithm.init(algo_key, x0),
            obs_stats=ObsStats.zeros(self.task.obs_shape),
            key=key,
            generation=jnp.zeros([], jnp.int32),
            env_steps=jnp.zeros([], jnp.float32),
        )
        mesh = self._meshes()[0]  # an explicit mesh, or the one an unmeasured layout takes
        if self.mesh == "auto" and measuring():  # chosen now, around the initial parameters
            population = jax.eval_shape(self.algorithm.ask, key, state.algo_state)[0]
            stats = state.obs_stats if self.normalize_obs else None
            mesh, _ = self.layout_choice(population, key, stats, centre=x0)
        return _place(state, mesh)

    def _ask(self, state: TrainState) -> tuple[Any, Any, tuple[PRNGKey, PRNGKey, PRNGKey]]:
        """The generation's population, the algorithm's state after ``ask``, and the keys of
        the next state, the evaluation and ``tell``."""
        # the first three keys are those of a 3-way split: adding tell's kept every stream
        key, ask_key, eval_key, tell_key = jax.random.split(state.key, 4)
        population, algo_state = self.algorithm.ask(ask_key, state.algo_state)
        return population, algo_state, (key, eval_key, tell_key)

    def _tell(
        self,
        state: TrainState,
        population: Any,
        algo_state: Any,
        keys: tuple[PRNGKey, PRNGKey, PRNGKey],
        fitness: jax.Array,
        info: EvalInfo,
        mesh: Mesh | None,
        layout: Layout,
    ) -> tuple[TrainState, Metrics]:
        """The generation's end: ``tell``, the next state and the metrics."""
        key, _, tell_key = keys
        if mesh is not None and has_shared(population):
            # held as seeds: every device redraws the whole update from the gathered fitness
            # (f32[pop]), rather than summing its own members' share of a D-sized gradient
            fitness = jax.lax.with_sharding_constraint(fitness, NamedSharding(mesh, P()))
        extra = {name: getattr(info, name) for name in self.algorithm.extra_inputs}
        algo_state, algo_metrics = self.algorithm.tell(
            tell_key, algo_state, population, fitness, **extra
        )
        steps = jnp.sum(info.lengths).astype(jnp.float32)
        new_state = TrainState(
            algo_state=algo_state,
            # with normalize_obs, _evaluate returns updated (never None) statistics
            obs_stats=cast(ObsStats, info.obs_stats) if self.normalize_obs else state.obs_stats,
            key=key,
            generation=state.generation + 1,
            env_steps=state.env_steps + steps,
        )
        new_state = _place(new_state, mesh)
        # several objectives: the statistics of their sum, and each one's mean
        total = jnp.sum(fitness.reshape(fitness.shape[0], -1), axis=1)
        objectives = fitness.reshape(fitness.shape[0], -1) if fitness.ndim > 1 else None
        metrics = {
            "fitness_max": jnp.max(total),
            "fitness_mean": jnp.mean(total),
            "fitness_min": jnp.min(total),
            "fitness_std": jnp.std(total),
            **(
                {}
                if objectives is None
                else {
                    f"fitness_mean_{i}": jnp.mean(objectives[:, i])
                    for i in range(len(objectives[0]))
                }
            ),
            "env_steps": steps,
            "eval_devices": jnp.float32(layout.devices),
            "pop_chunk": jnp.float32(layout.pop_chunk),
            **algo_metrics,
        }
        return new_state, metrics

    def step(self, state: TrainState) -> tuple[TrainState, Metrics]:
        """One generation. Returns the new state and ``f32[]`` metrics of this generation.

        On a host task (``task.on_host``) it runs eagerly: ``ask`` and ``tell`` compiled,
        the episodes stepped in worker processes between them; it cannot be traced.
        """
        obs_stats = state.obs_stats if self.normalize_obs else None
        if self.task.on_host:
            population, algo_state, keys = _host_ask(self, state)
            fitness, info = evaluate(
                self.policy, self.task, population, keys[1], self.n_repeats, obs_stats
            )
            _, layout = self.layout(population, keys[1], obs_stats)  # one device, no chunks
            return _host_tell(self, state, population, algo_state, keys, fitness, info, layout)
        population, algo_state, keys = self._ask(state)
        mesh, layout = self.layout(population, keys[1], obs_stats)  # measured once, then cached
        fitness, info = self._evaluate(population, keys[1], obs_stats, (mesh, layout))
        return self._tell(state, population, algo_state, keys, fitness, info, mesh, layout)

    def run(self, state: TrainState, n_generations: int) -> tuple[TrainState, Metrics]:
        """``n_generations`` steps in one ``lax.scan`` (on a host task, a loop of eager steps);
        metrics gain a leading generation axis."""
        check_positive_int("n_generations", n_generations)
        if self.task.on_host:  # a Python loop: the episodes are stepped on the host
            history = []
            for _ in range(n_generations):
                state, metrics = self.step(state)
                history.append(metrics)
            return state, jax.tree.map(lambda *m: jax.device_put(np.stack(m)), *history)
        state, metrics = jax.lax.scan(lambda s, _: self.step(s), state, None, length=n_generations)
        # the loop may carry parts split over the devices (a population algorithm's
        # population): the state returns placed as it came, so a jitted run compiles once
        return _place(state, self._mesh_for(state)), metrics

    def test(
        self, state: TrainState, key: PRNGKey, n_episodes: int = 100
    ) -> Float[Array, " episodes *objectives"]:
        """Returns of the algorithm's best solution over ``n_episodes`` test episodes
        (``[n_episodes, *task.reward_shape]``: one per objective of a vector reward).

        On a :class:`~evolax.tasks.MultiAgentTask` every agent plays the best solution, and an
        episode's return is the agents' mean. With a mesh, the devices split the episodes
        when ``n_episodes`` divides evenly over them (else one device runs them all); the
        returns are those of one device. The episodes of a one-step (supervised) task, each
        a whole batch of data, run one after another, so memory does not grow with
        ``n_episodes``; other tasks run them all at once.
        """
        check_positive_int("n_episodes", n_episodes)
        best, stats = self.solution(state)
        task = self.evaluation_task
        copies = task.n_agents if isinstance(task, MultiAgentTask) else 1
        population = replicate(best, copies)

        def returns(key: PRNGKey, n: int) -> Array:
            mesh = self._meshes()[0]
            split = None
            if mesh is not None:
                split = even_split(copies, n, mesh.shape[POP_AXIS], copies)
            mesh = None if split is None else mesh
            _, info = self._evaluate_on(task, population, key, n, stats, mesh, split)
            return jnp.mean(info.returns, axis=0)

        if task.max_steps == 1 and n_episodes > 1:
            keys = jax.random.split(key, n_episodes)
            scores = jax.lax.map(lambda k: returns(k, 1), keys)
            return scores.reshape(n_episodes, *task.reward_shape)
        return returns(key, n_episodes)

    @property
    def evaluation_task(self) -> Task:
        """The task solutions are tested on: ``test_task``, or else the training task."""
        return self.task if self.test_task is None else self.test_task

    def solution(self, state: TrainState) -> tuple[object, ObsStats | None]:
        """The genome to deploy and the observation statistics it needs (``None`` if unused)."""
        stats = state.obs_stats if self.normalize_obs else None
        return self.algorithm.best(state.algo_state), stats


@eqx.filter_jit
def _host_ask(trainer: Trainer, state: TrainState):
    """:meth:`Trainer._ask`, compiled, for a host task's eager step."""
    return trainer._ask(state)


@eqx.filter_jit
def _host_tell(trainer: Trainer, state, population, algo_state, keys, fitness, info, layout):
    """:meth:`Trainer._tell`, compiled, for a host task's eager step."""
    return trainer._tell(state, population, algo_state, keys, fitness, info, None, layout)


def each_seed(fn, state: Any, batched: bool) -> Any:
    """``fn(state)``, or for a ``batched`` state (a leading seed axis) ``fn`` of each seed's
    state one after another, the results stacked: ``vmap`` for a host task's eager steps."""
    if not batched:
        return fn(state)
    n_seeds = jax.tree.leaves(state)[0].shape[0]
    results = [fn(jax.tree.map(lambda x, i=i: x[i], state)) for i in range(n_seeds)]
    return jax.tree.map(lambda *r: jnp.stack(r), *results)
