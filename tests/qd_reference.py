"""Plain-numpy references for multi-task MAP-Elites, Dominated Novelty Search and MOME, written
from the authors' code (``pymap_elites``' ``map_elites/multitask.py``; QDax's
``dns_repertoire.py`` and ``mome_repertoire.py``) one individual at a time, for the tests and
``benchmarks/qd_tasks.py``. Never evolax's own output."""

from __future__ import annotations

import itertools
import math

import numpy as np

TARGET = np.array([0.5, 0.5])


def arm_fitness(genome: np.ndarray, task: np.ndarray) -> float:
    """``pymap_elites``' ``examples/multitask_arm.py``: joint angles ``(g - 1/2) 2 pi
    task[0] / n``, links ``task[1] / n``, fitness minus the tip's distance to ``(1/2, 1/2)``
    (forward kinematics link by link, as its ``kinematic_arm.py``)."""
    n = len(genome)
    angle, tip = 0.0, np.zeros(2)
    for g in genome:
        angle += (min(max(g, 0.0), 1.0) - 0.5) * task[0] / n * math.pi * 2
        tip = tip + task[1] / n * np.array([math.cos(angle), math.sin(angle)])
    return -float(np.linalg.norm(tip - TARGET))


def iso_line(rng, x, y, iso_sigma, line_sigma, low=None, high=None):
    """Iso+line variation (Vassiliades & Mouret 2018; ``pymap_elites``' ``iso_dd``)."""
    z = x + rng.normal(0, iso_sigma, size=len(x)) + rng.normal(0, line_sigma) * (y - x)
    return z if low is None else np.clip(z, low, high)


def bandit(rng, successes: dict, sizes) -> int:
    """``pymap_elites``' UCB1 over tournament sizes: random until each was used, then the
    largest mean successes per generation plus ``sqrt(2 ln n / n_a)``."""
    if len(successes) < len(sizes):
        return int(rng.choice(sizes))
    n = sum(len(v) for v in successes.values())
    ucb = [np.mean(successes[s]) + math.sqrt(2 * math.log(n) / len(successes[s])) for s in sizes]
    return sizes[int(np.argmax(ucb))]


def mt_map_elites(
    fitness, tasks, dim, evaluations, batch, seed, sizes=(1, 10, 50, 100, 500), init=0.1
):
    """``pymap_elites``' multi-task MAP-Elites (tasks and their distances), with clipped
    iso+line variation on ``[0, 1]^dim``: returns each task's best fitness (``-inf`` where
    none), after ``evaluations`` evaluations in batches of ``batch``."""
    rng = np.random.default_rng(seed)
    n = len(tasks)
    archive: dict[int, tuple[np.ndarray, float]] = {}
    successes: dict[int, list[int]] = {}
    t_size, done = 1, 0
    while done < evaluations:
        if done == 0 or len(archive) <= init * n:
            for _ in range(batch):
                x, t = rng.random(dim), int(rng.integers(n))
                f = fitness(x, tasks[t])
                if t not in archive or f > archive[t][1]:
                    archive[t] = (x, f)
        else:
            keys = list(archive)
            suc = 0
            for _ in range(batch):
                parent = keys[rng.integers(len(keys))]
                other = keys[rng.integers(len(keys))]
                z = iso_line(rng, archive[parent][0], archive[other][0], 0.01, 0.2, 0.0, 1.0)
                drawn = rng.integers(n, size=t_size)
                t = int(drawn[np.argmin(np.linalg.norm(tasks[drawn] - tasks[parent], axis=1))])
                f = fitness(z, tasks[t])
                if t not in archive or f > archive[t][1]:
                    archive[t] = (z, f)
                    suc += 1
            successes.setdefault(t_size, []).append(suc)
        done += batch
        t_size = bandit(rng, successes, list(sizes))
    best = np.full(n, -np.inf)
    for t, (_, f) in archive.items():
        best[t] = f
    return best


def competition_fitness(fitness: np.ndarray, descriptors: np.ndarray, k: int) -> np.ndarray:
    """Dominated novelty, one individual at a time: the mean distance to the ``k`` nearest
    of those strictly fitter (all when fewer), ``inf`` when none, ``-inf`` when not finite."""
    out = np.empty(len(fitness))
    for i in range(len(fitness)):
        if not np.isfinite(fitness[i]):
            out[i] = -np.inf
            continue
        fitter = [
            float(np.linalg.norm(descriptors[j] - descriptors[i]))
            for j in range(len(fitness))
            if np.isfinite(fitness[j]) and fitness[j] > fitness[i]
        ]
        out[i] = np.inf if not fitter else float(np.mean(sorted(fitter)[:k]))
    return out


def grid_cell(descriptor, grid, low, high) -> int:
    """The row-major cell of ``descriptor`` on a grid over ``[low, high]`` (borders clamp)."""
    index = [
        min(max(int(np.floor((v - lo) / (hi - lo) * g)), 0), g - 1)
        for v, lo, hi, g in zip(descriptor, low, high, grid, strict=True)
    ]
    return int(np.ravel_multi_index(index, grid))


def dns(evaluate, dim, capacity, k, batch, generations, seed, grid, low, high, init_std=0.1):
    """QDax's ``DominatedNoveltySearch`` with iso+line variation (uniform parents among the
    valid), from ``x0 = 0``: returns the best fitness in each cell of a passive grid that
    took every evaluated child. ``evaluate(x) -> (fitness, descriptor)`` for one genome."""
    rng = np.random.default_rng(seed)
    population = np.zeros((0, dim))
    scores, places = np.zeros(0), np.zeros((0, len(grid)))
    passive = np.full(int(np.prod(grid)), -np.inf)
    for _ in range(generations):
        if len(population) == 0:
            children = init_std * rng.normal(size=(batch, dim))
        else:
            pick = rng.integers(len(population), size=(batch, 2))
            children = np.stack(
                [iso_line(rng, population[a], population[b], 0.01, 0.2) for a, b in pick]
            )
        evaluated = [evaluate(c) for c in children]
        f = np.array([e[0] for e in evaluated])
        d = np.array([e[1] for e in evaluated])
        for fi, di in zip(f, d, strict=True):
            cell = grid_cell(di, grid, low, high)
            passive[cell] = max(passive[cell], fi)
        population = np.concatenate([population, children])
        scores, places = np.concatenate([scores, f]), np.concatenate([places, d])
        keep = np.argsort(-competition_fitness(scores, places, k), kind="stable")[:capacity]
        population, scores, places = population[keep], scores[keep], places[keep]
    return passive


def dominated(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` is dominated by ``b`` (maximisation)."""
    return bool(np.all(b >= a) and np.any(b > a))


def mome_insert(fronts: list[list], candidate, cell: int, size: int) -> bool:
    """QDax's ``MOMERepertoire.add`` for one candidate ``(fitness, payload)``: the cell's new
    front is the non-dominated of its members and the candidate, in order with the candidate
    last, cut to ``size``; returns whether the candidate stayed."""
    merged = [*fronts[cell], candidate]
    kept = [p for p in merged if not any(dominated(p[0], q[0]) for q in merged)]
    fronts[cell] = kept[:size]
    return any(p is candidate for p in fronts[cell])


def area(points: np.ndarray, reference: np.ndarray) -> float:
    """The 2-D hypervolume above ``reference`` of maximised ``points``: the area of the
    union of the boxes, summed over vertical strips between consecutive x values."""
    points = np.array([p for p in points if np.all(p > reference)])
    if len(points) == 0:
        return 0.0
    xs = np.sort(np.unique(np.concatenate([[reference[0]], points[:, 0]])))
    total = 0.0
    for left, right in itertools.pairwise(xs):
        above = points[points[:, 0] >= right]
        total += (right - left) * (above[:, 1].max() - reference[1]) if len(above) else 0.0
    return total
