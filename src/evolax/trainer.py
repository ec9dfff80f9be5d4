"""The training step: ask -> evaluate -> tell, and ``run`` as one ``lax.scan``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar, cast

import chex
import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from jaxtyping import Array, Float, Int

from evolax.algorithms.base import Algorithm
from evolax.compiled import compiled, explained_hash
from evolax.layout import EpisodeLoop, Layout, loop_for
from evolax.multitask import check_task_set, evaluate_per_task
from evolax.normalize import ObsStats
from evolax.policies.base import Policy
from evolax.policies.team import replicate
from evolax.population import has_shared
from evolax.rollout import EvalInfo
from evolax.rollout.sharded import evaluate_on, local_share, mesh_split
from evolax.rollout.teams import agents_per_unit
from evolax.sharding import POP_AXIS, default_mesh, even_split, population_mesh
from evolax.tasks.base import Task
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
            ``None``: no sharding. ``"auto"`` (the default): the most devices that split the
            work evenly (:func:`evolax.sharding.default_mesh`; on a CPU host, call
            :func:`evolax.use_cpu_cores` first to have one device per core).
        pop_chunk: evaluate (each device's slice of) the population in groups of this many
            individuals one after another (see :func:`evaluate`); ``None`` or ``"auto"`` (the
            default): all at once.
        init_scale: the search starts at ``init_scale`` times the policy's initial parameters,
            ``>= 0``; ``0.0`` starts it at all-zero parameters, as EvoJAX's solvers do.
        fixed_length: run every episode for ``task.max_steps`` steps (a ``lax.scan``, steps
            after ``done`` masked out) instead of stopping once all are done (a
            ``lax.while_loop``): the same fitness, and reverse-mode ``jax.grad`` can go through
            :meth:`run` (meta-learning through unrolled inner loops). It overrides ``loop``.
        loop: the loop the episodes step in (:class:`~evolax.layout.EpisodeLoop`; ``"while"``
            and ``"scan"`` stand for those forms); every form gives the same results.
            ``"auto"`` (the default): the while loop, until :func:`evolax.placement.place`
            measures the forms.

    The layout (devices, ``pop_chunk``, ``loop``) is resolved when the trainer is made and
    never measured here: a step is pure. :func:`evolax.placement.place` measures the fastest
    layout among those ``"auto"`` allows and returns the trainer set to it
    (:func:`evolax.train` and the ``evolax`` command do so once per run); :meth:`with_layout`
    sets one.
    """

    __hash__ = explained_hash

    algorithm: Algorithm
    policy: Policy
    task: Task
    n_repeats: int = eqx.field(static=True, default=1)
    normalize_obs: bool = eqx.field(static=True, default=False)
    test_task: Task | None = None
    mesh: Mesh | str | None = eqx.field(static=True, default="auto")
    pop_chunk: int | str | None = eqx.field(static=True, default="auto")
    init_scale: float = eqx.field(static=True, default=1.0)
    fixed_length: bool = eqx.field(static=True, default=False)
    loop: EpisodeLoop | str = eqx.field(static=True, default="auto")
    #: the mesh :meth:`step` evaluates on (``mesh`` resolved; ``None``: one device)
    placed_mesh: Mesh | None = eqx.field(static=True, init=False, repr=False)
    #: individuals each device evaluates at once (``pop_chunk`` resolved)
    placed_chunk: int = eqx.field(static=True, init=False, repr=False)
    #: the loop the episodes step in (``loop`` resolved, the scan with ``fixed_length``)
    placed_loop: EpisodeLoop = eqx.field(static=True, init=False, repr=False)
    #: whether the trainer steps its task on the host (:class:`evolax.placement.HostTrainer`)
    hosted: ClassVar[bool] = False

    def __post_init__(self):
        self._check()
        self.placed_mesh = self._resolve_mesh()
        local = local_share(self.placed_mesh, self.algorithm.pop_size, self.n_repeats, self.task)
        chunk = self.pop_chunk
        self.placed_chunk = local if chunk is None or chunk == "auto" else cast(int, chunk)
        loop = self.loop
        if isinstance(loop, str):
            loop = EpisodeLoop("scan" if loop == "scan" else "while")
        self.placed_loop = loop_for(loop, self.fixed_length)

    def _check(self) -> None:
        _check_component("algorithm", self.algorithm, Algorithm, ("init", "ask", "tell", "best"))
        _check_component("policy", self.policy, Policy, ("init", "apply"))
        _check_component("task", self.task, Task, ("reset", "step", "obs_shape"))
        if self.test_task is not None:
            _check_component("test_task", self.test_task, Task, ("reset", "step", "obs_shape"))
        check_positive_int("n_repeats", self.n_repeats)
        if not (isinstance(self.init_scale, int | float) and 0 <= self.init_scale < math.inf):
            raise ValueError(f"init_scale must be a finite number >= 0, got {self.init_scale!r}")
        group = agents_per_unit(self.task)
        if self.algorithm.pop_size % group:
            raise ValueError(
                f"pop_size={self.algorithm.pop_size} must be a multiple of "
                f"task.n_agents={group}: each environment holds n_agents individuals"
            )
        if not (self.mesh is None or self.mesh == "auto" or isinstance(self.mesh, Mesh)):
            raise ValueError(f"mesh must be a jax.sharding.Mesh, None or 'auto', got {self.mesh!r}")
        if isinstance(self.mesh, Mesh):
            if POP_AXIS not in self.mesh.axis_names:
                raise ValueError(f"mesh must have a {POP_AXIS!r} axis, got {self.mesh.axis_names}")
            # raises when neither the population nor the episodes split evenly
            mesh_split(self.mesh, self.algorithm.pop_size, self.n_repeats, self.task)
        chunk = self.pop_chunk
        if chunk != "auto" and chunk is not None:
            if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk <= 0:
                raise ValueError(
                    f"pop_chunk must be a positive integer, None or 'auto', got {chunk!r}"
                )
        if not (isinstance(self.loop, EpisodeLoop) or self.loop in ("auto", "while", "scan")):
            raise ValueError(
                f"loop must be an EpisodeLoop, 'auto', 'while' or 'scan', got {self.loop!r}"
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
        if self.task.on_host != self.hosted:
            which = "HostTrainer" if self.task.on_host else "Trainer"
            where = "on the host" if self.task.on_host else "in JAX"
            raise ValueError(
                f"task {type(self.task).__name__} is stepped {where}: train it with evolax."
                f"{which}(...) (same arguments; evolax.train and the evolax command choose it)"
            )
        if self.chooses_tasks:  # multi-task MAP-Elites: each member on its own task
            who = type(self.algorithm).__name__
            check_task_set(self.task, self.algorithm.n_tasks, who)  # type: ignore[attr-defined]
            if self.normalize_obs or self.hosted:
                raise ValueError(f"{who} evaluates in JAX without normalize_obs")
        if self.uses_descriptors and self.task.descriptor_bounds is None:
            raise ValueError(
                f"{type(self.algorithm).__name__} needs behaviour descriptors, but task "
                f"{type(self.task).__name__} defines none (Task.descriptor, descriptor_bounds)"
            )

    def _resolve_mesh(self) -> Mesh | None:
        """The mesh ``mesh`` stands for: itself, or for ``"auto"`` the default mesh (the most
        devices that split the work evenly; ``None`` for one)."""
        if self.mesh != "auto":
            return cast(Mesh | None, self.mesh)
        group = agents_per_unit(self.task)
        return default_mesh(self.algorithm.pop_size, self.n_repeats, group)

    @property
    def uses_descriptors(self) -> bool:
        """Whether the algorithm declares behaviour descriptors among its ``extra_inputs``."""
        return "descriptors" in self.algorithm.extra_inputs

    @property
    def chooses_tasks(self) -> bool:
        """Whether the algorithm names each member's task (``chooses_tasks``, with
        ``task_indices(state)``): each member is then evaluated on its own member of the
        task's :class:`~evolax.tasks.ParamSet` (:func:`evolax.multitask.evaluate_per_task`)."""
        return bool(getattr(self.algorithm, "chooses_tasks", False))

    @property
    def split(self) -> str | None:
        """What the devices of the mesh :meth:`step` evaluates on split: ``"pop"``,
        ``"repeats"``, or ``None`` for one device."""
        return mesh_split(self.placed_mesh, self.algorithm.pop_size, self.n_repeats, self.task)

    @property
    def layout(self) -> Layout:
        """The :class:`~evolax.layout.Layout` :meth:`step` evaluates the population with."""
        mesh = self.placed_mesh
        devices = 1 if mesh is None else mesh.shape[POP_AXIS]
        return Layout(devices, self.placed_chunk, self.placed_loop)

    def with_layout(self, layout: Layout) -> Trainer:
        """This trainer with ``layout`` set explicitly: ``pop_chunk``, ``loop`` (with
        ``fixed_length``, the scan all the same), and ``mesh`` (kept where it is a mesh of
        ``layout.devices`` devices already)."""
        mesh = self.mesh
        if not (isinstance(mesh, Mesh) and mesh.shape[POP_AXIS] == layout.devices):
            available = jax.devices()
            if layout.devices > len(available):
                raise ValueError(
                    f"layout.devices={layout.devices}, but only {len(available)} are available"
                )
            mesh = None if layout.devices == 1 else population_mesh(available[: layout.devices])
        return dataclasses.replace(self, mesh=mesh, pop_chunk=layout.pop_chunk, loop=layout.loop)

    def evaluate(self, population, key, obs_stats) -> tuple[jax.Array, EvalInfo]:
        """The population's fitness and :class:`EvalInfo` on this trainer's layout."""
        return evaluate_on(
            self.policy,
            self.task,
            population,
            key,
            self.n_repeats,
            obs_stats,
            self.uses_descriptors,
            mesh=self.placed_mesh,
            pop_chunk=self.placed_chunk,
            split=self.split,
            loop=self.placed_loop,
        )

    @compiled
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
        return _place(state, self.placed_mesh)

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
    ) -> tuple[TrainState, Metrics]:
        """The generation's end: ``tell``, the next state and the metrics."""
        key, _, tell_key = keys
        mesh, layout = self.placed_mesh, self.layout
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

    @compiled
    def step(self, state: TrainState) -> tuple[TrainState, Metrics]:
        """One generation. Returns the new state and ``f32[]`` metrics of this generation."""
        obs_stats = state.obs_stats if self.normalize_obs else None
        population, algo_state, keys = self._ask(state)
        if self.chooses_tasks:
            tasks = self.algorithm.task_indices(algo_state)  # type: ignore[attr-defined]
            fitness, info = evaluate_per_task(
                self.policy, self.task, population, tasks, keys[1], self.n_repeats,
                self.uses_descriptors, self.placed_loop,
            )  # fmt: skip
        else:
            fitness, info = self.evaluate(population, keys[1], obs_stats)
        return self._tell(state, population, algo_state, keys, fitness, info)

    @compiled
    def run(self, state: TrainState, n_generations: int) -> tuple[TrainState, Metrics]:
        """``n_generations`` steps in one ``lax.scan``; metrics gain a leading generation
        axis."""
        check_positive_int("n_generations", n_generations)
        state, metrics = jax.lax.scan(lambda s, _: self.step(s), state, None, length=n_generations)
        # the loop may carry parts split over the devices (a population algorithm's
        # population): the state returns placed as it came, so a jitted run compiles once
        return _place(state, self.placed_mesh), metrics

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
        population = replicate(best, agents_per_unit(task))

        def returns(key: PRNGKey, n: int) -> Array:
            return jnp.mean(self._test_returns(task, population, key, n, stats), axis=0)

        if task.max_steps == 1 and n_episodes > 1:
            keys = jax.random.split(key, n_episodes)
            scores = jax.lax.map(lambda k: returns(k, 1), keys)
            return scores.reshape(n_episodes, *task.reward_shape)
        return returns(key, n_episodes)

    def _test_returns(self, task, population, key, n_episodes, stats) -> Array:
        """``[copies, n_episodes, ...]`` returns of ``population`` (the best solution, once
        per agent) on ``task``, the mesh's devices splitting the episodes where they divide
        evenly."""
        mesh, split = self.placed_mesh, None
        if mesh is not None:
            copies = agents_per_unit(task)  # the best solution, once per agent
            split = even_split(copies, n_episodes, mesh.shape[POP_AXIS], copies)
        mesh = None if split is None else mesh
        _, info = evaluate_on(
            self.policy,
            task,
            population,
            key,
            n_episodes,
            stats,
            mesh=mesh,
            split=split,
            loop=self.placed_loop,
        )
        return info.returns

    @property
    def evaluation_task(self) -> Task:
        """The task solutions are tested on: ``test_task``, or else the training task."""
        return self.task if self.test_task is None else self.test_task

    def solution(self, state: TrainState) -> tuple[object, ObsStats | None]:
        """The genome to deploy and the observation statistics it needs (``None`` if unused)."""
        stats = state.obs_stats if self.normalize_obs else None
        return self.algorithm.best(state.algo_state), stats
