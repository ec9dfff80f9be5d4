"""The runs the reference comparisons of multi-task MAP-Elites, Dominated Novelty Search and
MOME make at equal evaluations, shared by their slow tests and ``benchmarks/qd_tasks.py``:
evolax's algorithm, and the reference (``tests/qd_reference.py``'s numpy rules, or QDax 0.5's
MOME where it is installed), each returning its final archive metrics."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

import evolax
import qd_reference
from evolax.algorithms import MOME, DominatedNoveltySearch, MTMAPElites
from evolax.tasks import MultiTaskArm


def grid_metrics(best: np.ndarray, offset: float) -> dict:
    """Coverage and QD-score (``sum(fitness - offset)`` over filled cells) of per-cell bests."""
    filled = np.isfinite(best)
    return {"coverage": float(filled.mean()), "qd_score": float(np.sum(best[filled] - offset))}


def run_evolax_mt_map_elites(seed, evaluations, n_tasks=200, batch=100, dim=10) -> dict:
    """MT-ME on the multi-task arm through the trainer; QD-score offset -2."""
    task = MultiTaskArm(n_joints=dim, n_tasks=n_tasks)
    algo = MTMAPElites(batch, task.distribution.vectors(), lower=0.0, upper=1.0)
    trainer = evolax.Trainer(algo, evolax.Direct(), task)
    state, _ = trainer.run(trainer.init(jax.random.key(seed)), evaluations // batch)
    return grid_metrics(np.asarray(state.algo_state.archive.fitness), -2.0)


def run_reference_mt_map_elites(seed, evaluations, n_tasks=200, batch=100, dim=10) -> dict:
    """pymap_elites' rules in numpy on the same tasks."""
    params = np.asarray(MultiTaskArm(n_joints=dim, n_tasks=n_tasks).distribution.vectors())
    best = qd_reference.mt_map_elites(
        qd_reference.arm_fitness, params, dim, evaluations, batch, seed
    )
    return grid_metrics(best, -2.0)


def run_evolax_dns(seed, generations, capacity=256, k=3, batch=64, dim=8, grid=(16, 16)):
    """DNS on the 8-joint arm of QDax's example: returns the passive grid's best fitness."""
    algo = DominatedNoveltySearch(batch, grid, (0, 0), (1, 1), capacity=capacity, k=k)
    arm = evolax.Arm(dim)

    def evaluate(x):
        state = arm.step(arm.reset(jax.random.key(0)), x, jax.random.key(0))[0]
        return -jnp.std(arm.angles(x)), arm.descriptor(state)

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        fitness, descriptors = jax.vmap(evaluate)(x)
        return algo.tell(tell_key, state, x, fitness, descriptors=descriptors)[0], None

    keys = jax.random.split(jax.random.key(seed), generations)
    state, _ = jax.lax.scan(generation, algo.init(jax.random.key(0), jnp.zeros(dim)), keys)
    return grid_metrics(np.asarray(state.archive.fitness), -np.pi)


def numpy_arm(x):
    angles = 2 * np.pi * (np.clip(x, 0, 1) - 0.5)
    tip = np.array([np.cos(np.cumsum(angles)).sum(), np.sin(np.cumsum(angles)).sum()]) / len(x)
    return -float(np.std(angles)), 0.5 * tip + 0.5


def run_reference_dns(seed, generations, capacity=256, k=3, batch=64, dim=8, grid=(16, 16)):
    """QDax's DNS rules in numpy on the same arm and grid."""
    best = qd_reference.dns(
        numpy_arm, dim, capacity, k, batch, generations, seed, grid, (0, 0), (1, 1)
    )
    return grid_metrics(best, -np.pi)


def mo_rastrigin(x, lag=2.2):
    """QDax's MOME example: two shifted Rastrigin functions (maximised), descriptor the first
    two genes."""

    def rastrigin(shift):
        return -(
            10 * x.shape[-1]
            + jnp.sum((x - shift) ** 2 - 10 * jnp.cos(2 * jnp.pi * (x - shift)), -1)
        )

    return jnp.stack([rastrigin(0.0), rastrigin(lag)], -1), x[..., :2]


def grid_centroids(grid, low, high):
    edges = [
        (np.arange(g) + 0.5) / g * (hi - lo) + lo for g, lo, hi in zip(grid, low, high, strict=True)
    ]
    return jnp.asarray(
        np.stack(np.meshgrid(*edges, indexing="ij"), -1).reshape(-1, len(grid)), jnp.float32
    )


def run_evolax_mome(
    seed, generations, batch=64, dim=6, grid=(8, 8), size=10, reference=(-150.0, -150.0)
):
    algo = MOME(batch, 2, grid, (-2, -2), (4, 4), reference, max_front_size=size, line_std=0.2)
    start = jax.random.uniform(jax.random.key(seed + 1000), (batch, dim), minval=-2, maxval=4)
    state = algo.init(jax.random.key(0), jnp.zeros(dim))
    f, d = mo_rastrigin(start)
    state = algo.tell(jax.random.key(0), state, start, f, descriptors=d)[0]

    def generation(state, key):
        ask_key, tell_key = jax.random.split(key)
        x, state = algo.ask(ask_key, state)
        f, d = mo_rastrigin(x)
        state, metrics = algo.tell(tell_key, state, x, f, descriptors=d)
        return state, metrics

    _, metrics = jax.lax.scan(
        generation, state, jax.random.split(jax.random.key(seed), generations)
    )
    return {k: float(v[-1]) for k, v in metrics.items() if k in ("moqd_score", "coverage")}


def run_qdax_mome(
    seed, generations, batch=64, dim=6, grid=(8, 8), size=10, reference=(-150.0, -150.0)
):
    from qdax.core.emitters.mutation_operators import isoline_variation
    from qdax.core.emitters.standard_emitters import MixingEmitter
    from qdax.core.mome import MOME as QDaxMOME
    from qdax.utils.metrics import default_moqd_metrics

    emitter = MixingEmitter(
        mutation_fn=None,  # every child from iso+line (variation_percentage 1)
        variation_fn=partial(isoline_variation, iso_sigma=0.01, line_sigma=0.2),
        variation_percentage=1.0,
        batch_size=batch,
    )
    mome = QDaxMOME(
        scoring_function=lambda x, key: (*mo_rastrigin(x), {}),
        emitter=emitter,
        metrics_function=partial(default_moqd_metrics, reference_point=jnp.asarray(reference)),
        pareto_front_max_length=size,
    )
    start = jax.random.uniform(jax.random.key(seed + 1000), (batch, dim), minval=-2, maxval=4)
    with jax.numpy_rank_promotion("allow"):  # QDax broadcasts ranks
        return _run_qdax(mome, start, grid, generations, seed)


def _run_qdax(mome, start, grid, generations, seed):
    repertoire, emitter_state, _ = mome.init(
        start, grid_centroids(grid, (-2, -2), (4, 4)), jax.random.key(seed)
    )
    (repertoire, _, _), metrics = jax.lax.scan(
        mome.scan_update, (repertoire, emitter_state, jax.random.key(seed)), (), length=generations
    )
    scores = metrics["moqd_score"][-1]
    return {
        "moqd_score": float(jnp.sum(jnp.where(scores > -jnp.inf, scores, 0.0))),
        "coverage": float(metrics["coverage"][-1]) / 100,
    }
