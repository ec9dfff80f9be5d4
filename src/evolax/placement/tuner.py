"""The measured choice of a trainer's evaluation layout: over how many devices, in groups of
how many individuals one after another, and in which episode loop. :func:`choose_layout`
picks the fastest for a trainer and a state by compiling a few candidates and timing them
(:func:`choose`), within a budget, once per shape (:func:`choose_cached`, with its cache
folder).

This module times programs, runs threads and writes files: nothing that is traced imports it
(a test checks). The runner calls it once per run; a library user may call it too."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from evolax.cache import cache_dir
from evolax.layout import Choice, EpisodeLoop, Layout
from evolax.population import has_shared, is_shared
from evolax.rollout.fused import fused_supported
from evolax.rollout.sharded import evaluate_on, local_share, mesh_split
from evolax.rollout.teams import agents_per_unit
from evolax.sharding import POP_AXIS
from evolax.validation import check_positive_int

if TYPE_CHECKING:
    from evolax.trainer import Trainer, TrainState

#: The tuning budget, in generations: no new round of candidates starts where it would take
#: tuning past this many estimated generations of the best layout so far. Half of 10% of a
#: 100-generation run, since the estimates (stand-in individuals, one call) run high.
BUDGET_GENERATIONS = 5.0
#: ...but tuning may always take this long: a candidate's compilation (1-3 s on a CPU)
#: costs more than five short generations, and a choice is made once per shape on a machine
#: (it is cached). Cart-pole's generation takes 0.05 s on 2 cores, and the group
#: sizes one round apart differ by up to 3x there.
MIN_BUDGET_SECONDS = 8.0
#: On a CPU the search starts at the largest group whose one step reads at most this many
#: bytes (XLA's cost analysis); on accelerators it starts at the whole population. Set on a
#: 2-core Intel Xeon (2026-12-05): cart-pole's best groups read 0.4-2 MB a step (4-16
#: individuals of EvoJAX's MLP, 2-3x faster than the whole population), about what a core's
#: L2 cache holds; larger programs' best groups (painting, MNIST) are found by the search's
#: rounds up, which their long generations pay for.
START_BYTES = 2**21
#: Where lowering the starting program takes longer than this, nothing is measured: such a
#: program (a Brax physics step, say) takes tens of seconds to compile, several times its
#: lowering, so a candidate costs more than a short run could gain; the cost model's start is
#: taken.
MAX_LOWERING_SECONDS = 2.0
#: A candidate within this factor of the best so far is timed again (its faster call counts);
#: slower ones count with their first call, which includes warming up.
CLOSE = 1.5
#: A candidate's program evaluates groups of at least this many individuals in all, one group
#: after another, so that what a call costs besides its groups is spread over several (at 8,
#: cart-pole's groups of 4 were estimated the slowest and ran the fastest, 0.043 s against
#: 0.070 s for groups of 32 on 2 cores).
MIN_INDIVIDUALS = 32
#: The search's own version, part of every cached choice's signature: a change of how it
#: searches (its start, its budget, its candidates) leaves earlier choices unused.
SEARCH_VERSION = 3
#: The scan's unrolled candidate: steps per iteration.
UNROLL = 4
#: The chunked loop's candidates: episodes in about this many blocks (8: at most an eighth
#: of the steps run after every episode has ended; 32: more tests, fewer wasted steps).
BLOCKS = (8, 32)
#: The fused kernel's candidates (accelerators only): steps per launch.
LAUNCH_STEPS = (64, 256)


def loop_candidates(max_steps: int, fused: bool = False) -> list[EpisodeLoop]:
    """The episode loops measured for a task of ``max_steps`` steps: the while loop (first,
    measured with the layouts), the scan one step and :data:`UNROLL` steps per iteration,
    the chunked loop in blocks of ``max_steps`` over each of :data:`BLOCKS` (those of 2 or
    more steps, and fewer than ``max_steps``) and, with ``fused`` (an accelerator, and a
    policy and task :func:`~evolax.rollout.fused.fused_supported` accepts), the fused kernel
    at each of :data:`LAUNCH_STEPS` steps per launch (at most ``max_steps``). One step: the
    while loop alone."""
    if max_steps == 1:
        return [EpisodeLoop()]
    blocks = sorted({math.ceil(max_steps / n) for n in BLOCKS} & set(range(2, max_steps)))
    launches = sorted({min(n, max_steps) for n in LAUNCH_STEPS}) if fused else []
    return [
        EpisodeLoop(),
        EpisodeLoop("scan"),
        EpisodeLoop("scan", unroll=min(UNROLL, max_steps)),
        *(EpisodeLoop("chunked", block=block) for block in blocks),
        *(EpisodeLoop("fused", block=steps) for steps in launches),
    ]


def chunk_candidates(units: int, group: int = 1) -> list[int]:
    """Group sizes (in individuals) to try for ``units`` environments of ``group`` individuals
    on one device: the largest divisors of ``units`` up to 1, 4, 16, ... environments, and all."""
    sizes, target = set(), 1
    while target < units:
        sizes.add(max(d for d in range(1, target + 1) if units % d == 0))
        target *= 4
    sizes.add(units)
    return [s * group for s in sorted(sizes)]


def groups_timed(chunk: int, groups: int) -> int:
    """How many of a device's ``groups`` groups of ``chunk`` individuals a candidate's program
    evaluates: enough for :data:`MIN_INDIVIDUALS` individuals, at least one, at most all."""
    return max(1, min(groups, MIN_INDIVIDUALS // chunk))


def start_chunk(chunks: Sequence[int], step_bytes: float, platform: str) -> int:
    """Where the search over ``chunks`` (increasing group sizes) starts: the whole population
    on an accelerator; on a CPU the largest group whose step reads at most
    :data:`START_BYTES`, given ``step_bytes`` per individual."""
    if platform != "cpu":
        return len(chunks) - 1
    fits = [i for i, c in enumerate(chunks) if c * step_bytes <= START_BYTES]
    return max(fits, default=0)


def choose(
    compile: Callable[[Layout], Callable[[], float]],
    options: Sequence[tuple[int, Sequence[int]]],
    start: int,
    budget_generations: float = BUDGET_GENERATIONS,
    clock: Callable[[], float] = time.perf_counter,
    min_budget_seconds: float | None = None,
    loops: Sequence[EpisodeLoop] = (EpisodeLoop(),),
) -> Choice:
    """The fastest layout found by a local search that measures as few candidates as it can.

    The search starts at the group size ``chunks[start]`` of the first option, in the first
    of ``loops``; each further round measures the unmeasured neighbours of the best layout
    so far (the next smaller and larger group on its devices, and the same group on the
    other device counts). Where none is left, one more round measures the best layout in
    each of the other ``loops``. It stops before a round that would take tuning past
    ``budget_generations`` generations of the best layout or ``min_budget_seconds``,
    whichever is longer (a round costing what the rounds so far cost per candidate, times
    the threads). A round's candidates compile in parallel threads and are timed one after
    another: a first call each, and one more for those within :data:`CLOSE` of the best.

    Args:
        compile: compiles a layout's program, returning a function that runs it once and
            returns the estimated evaluation seconds per generation.
        options: per device count, its group sizes in increasing order; the first is where
            the search starts.
        start: the index of the first group size measured, in the first option's.
        budget_generations: see above.
        clock: seconds now, for the budget (``compile``'s timers have their own).
        min_budget_seconds: see above (``None``: :data:`MIN_BUDGET_SECONDS`).
        loops: the episode loops: the first is the layouts', the others are measured last.

    Returns:
        the :class:`Choice`.
    """
    begin = clock()
    chunks = {devices: list(sizes) for devices, sizes in options}
    timings: dict[Layout, float] = {}
    devices, sizes = options[0]
    loop, *other_loops = loops
    frontier = [Layout(devices, list(sizes)[start], loop)]
    workers = os.cpu_count() or 1
    searching = True  # the layouts' search; then the round of the other loops
    with ThreadPoolExecutor(max_workers=workers) as pool:
        while frontier:
            timers = list(pool.map(compile, frontier))
            for layout, run in zip(frontier, timers, strict=True):
                seconds = run()
                if not timings or seconds <= CLOSE * min(timings.values()):
                    seconds = min(seconds, run())
                timings[layout] = seconds
            best = min(timings, key=timings.__getitem__)
            spent = clock() - begin
            per_round = spent / len(timings) * workers  # a round of `workers` candidates
            floor = MIN_BUDGET_SECONDS if min_budget_seconds is None else min_budget_seconds
            budget = max(budget_generations * timings[best], floor)
            if spent + per_round > budget or not searching:
                break
            sizes = chunks[best.devices]
            i = sizes.index(best.pop_chunk)
            near = [
                Layout(best.devices, sizes[j], loop) for j in (i - 1, i + 1) if 0 <= j < len(sizes)
            ]
            near += [Layout(d, best.pop_chunk, loop) for d in chunks if best.pop_chunk in chunks[d]]
            frontier = [layout for layout in near if layout not in timings]
            if not frontier:
                searching = False
                frontier = [dataclasses.replace(best, loop=other) for other in other_loops]
    best = min(timings, key=timings.__getitem__)
    return Choice(
        layout=best,
        seconds=timings[best],
        tuning_seconds=clock() - begin,
        timings=tuple(timings.items()),
    )


_CHOICES: dict[str, Choice] = {}
CACHE_FILE = "layouts.json"
#: Set to ``0`` to take the most devices and whole shares unmeasured (as several processes do).
MEASURE_ENV = "EVOLAX_MEASURE_LAYOUT"


def choose_cached(
    signature: Callable[[], str],
    options: Sequence[tuple[int, Sequence[int]]],
    compile: Callable[[Layout], Callable[[], float]],
    start: Callable[[], tuple[int, bool]],
    clock: Callable[[], float] = time.perf_counter,
    loops: Sequence[EpisodeLoop] = (EpisodeLoop(),),
) -> Choice:
    """:func:`choose`, measured once per ``signature()`` (called only where layouts are
    measured, see :func:`measuring`) on this machine.

    A choice is kept for the process and in ``layouts.json`` in the cache folder
    (:func:`evolax.cache.cache_dir`), so later runs of the same shapes on this machine reuse
    it at no cost and, since the layout can change results in the last bits, repeat them
    exactly. In a run of several processes nothing is measured (their programs must agree),
    nor where the environment variable ``EVOLAX_MEASURE_LAYOUT`` is ``0``: the first option
    (the most devices) is taken with each device's whole share at once, in the first of
    ``loops``. ``start`` gives the index of the first option's group size the search starts
    at, and whether measuring is worth its cost (if not, that start is taken:
    ``source="cost model"``); ``clock`` gives the seconds now and ``loops`` the episode loops
    (:func:`choose`).
    """
    if not measuring():
        devices, chunks = options[0]  # the most devices, each's whole share at once
        return Choice(Layout(devices, chunks[-1], loops[0]), math.nan, 0.0, (), "unmeasured")
    key = signature()
    if key in _CHOICES:
        return _CHOICES[key]
    known = {Layout(d, c, loop) for d, chunks in options for c in chunks for loop in loops}
    stored = _read_store().get(key, {})
    cached = _stored_layout(stored)
    if cached in known:
        choice = Choice(cached, stored["seconds"], 0.0, (), source="cache")
    else:

        def measure() -> Choice:
            begin = clock()
            first, worth = start()
            if not worth:
                devices, chunks = options[0]
                layout = Layout(devices, list(chunks)[first], loops[0])
                guess = Choice(layout, math.nan, clock() - begin, (), "cost model")
                _write_store(key, guess)
                return guess
            measured = choose(compile, options, first, clock=clock, loops=loops)
            _write_store(key, measured)  # the cost includes making the stand-ins
            return dataclasses.replace(measured, tuning_seconds=clock() - begin)

        # in a thread of its own, outside any trace of the caller's: measurements run now
        with ThreadPoolExecutor(max_workers=1) as thread:
            choice = thread.submit(measure).result()
    _CHOICES[key] = choice
    return choice


def measuring() -> bool:
    """Whether layouts are measured here: one process, ``EVOLAX_MEASURE_LAYOUT`` not ``0``."""
    return jax.process_count() == 1 and os.environ.get(MEASURE_ENV) != "0"


def _store_path() -> Path:
    return cache_dir() / CACHE_FILE


def _read_store() -> dict[str, Any]:
    try:
        return json.loads(_store_path().read_text())
    except (OSError, ValueError):  # none yet, or unreadable: measure again
        return {}


def _stored_layout(entry: Any) -> Layout | None:
    """The layout of a cache file's entry (``None``: none, or unreadable). An entry written
    before loops were measured holds none: the while loop."""
    try:
        return Layout.read(entry) if isinstance(entry["seconds"], float | int) else None
    except (KeyError, TypeError, ValueError):
        return None


def _write_store(signature: str, choice: Choice) -> None:
    """Add ``choice`` to the cache file (atomically; a read-only cache is skipped)."""
    path = _store_path()
    entry = {**dataclasses.asdict(choice.layout), "seconds": choice.seconds}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        store = {**_read_store(), signature: entry}
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False) as file:
            json.dump(store, file)
        os.replace(file.name, path)
    except OSError:
        pass


def choices() -> list[Choice]:
    """The layouts chosen in this process so far, oldest first, with what each cost."""
    return list(_CHOICES.values())


def signature(*trees: Any) -> str:
    """What a layout choice depends on in ``trees`` (their structure, static fields included,
    and their arrays' shapes and dtypes) and the machine's devices and versions, as a hash
    that is the same in every process."""
    leaves, treedef = jax.tree.flatten(trees)
    avals = [(tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") else x for x in leaves]
    devices = [(d.platform, d.device_kind, d.process_index) for d in jax.devices()]
    text = repr((treedef, avals, devices, jax.__version__, _version(), SEARCH_VERSION))
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)  # addresses of functions and objects
    return hashlib.sha256(text.encode()).hexdigest()


def _version() -> str:
    try:
        return importlib.metadata.version("evolax")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def concrete(tree: Any) -> Any:
    """``tree`` with every traced array (or shape-and-dtype stand-in) replaced by zeros of its
    shape and dtype (PRNG keys: key 0) on the default device, so that it can run while a
    function holding it is traced."""

    def fill(x):
        if not isinstance(x, (jax.core.Tracer, jax.ShapeDtypeStruct)):
            return x
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):  # keys from seed 0
            impl = getattr(x.dtype, "_impl", None)  # a key dtype names its generator
            keys = jax.random.split(jax.random.key(0, impl=impl), x.size)
            return keys.reshape(x.shape)
        return jax.device_put(np.zeros(x.shape, x.dtype))

    return jax.tree.map(fill, tree)


def lower(fn: Callable[..., Any], *args: Any) -> tuple[jax.stages.Lowered, Any]:
    """``fn(*args)`` lowered for XLA, and the inputs to call it with once compiled: the array
    leaves of ``args`` (the rest is static)."""
    dynamic, static = eqx.partition(args, eqx.is_array)
    return jax.jit(lambda d: fn(*eqx.combine(d, static))).lower(dynamic), dynamic


def step_bytes(lowered: jax.stages.Lowered) -> float:
    """Bytes one run of ``lowered`` reads and writes (loops counted once), by XLA's cost
    analysis; ``inf`` where that is unavailable."""
    try:
        return float(lowered.cost_analysis()["bytes accessed"])  # type: ignore[index]
    except Exception:  # cost analysis is best effort: the search then starts at the bottom
        return float("inf")


def timer(
    lowered: jax.stages.Lowered, inputs: Any, clock: Callable[[], float] = time.perf_counter
) -> Callable[[], float]:
    """Compiles ``lowered``; the function returned times one call on ``inputs``, in seconds
    by ``clock``."""
    compiled = lowered.compile()

    def call() -> float:
        begin = clock()
        jax.block_until_ready(compiled(inputs))
        return clock() - begin

    return call


def _meshes(trainer: Trainer) -> list[Mesh | None]:
    """The meshes a layout is chosen among: the trainer's explicit ``mesh``, or for
    ``"auto"`` the default mesh it resolved to (if there is one) and no mesh."""
    mesh = trainer.placed_mesh
    if mesh is None or trainer.mesh != "auto":
        return [mesh]
    return [mesh, None]


def choose_layout(
    trainer: Trainer,
    state: TrainState,
    seeds: int = 1,
    clock: Callable[[], float] = time.perf_counter,
) -> Choice:
    """The :class:`~evolax.layout.Choice` of layout for ``trainer`` training ``state`` (one
    seed's): its explicit settings, else the fastest candidates among those ``"auto"``
    allows (devices, groups, and for ``loop="auto"`` the episode loops of
    :func:`loop_candidates`, for the fastest devices and groups), measured now or once per
    shape (:func:`choose_cached`) on stand-in individuals around the algorithm's best genome,
    for a step ``vmap``-ped over ``seeds`` runs (``seeds`` times a group's individuals then
    share each evaluation). ``clock`` gives the seconds now,
    by which the lowering, the candidates and the budget are timed (a test passes its own, so
    that the decisions do not depend on the machine's load). Set it with
    :meth:`Trainer.with_layout <evolax.trainer.Trainer.with_layout>`."""
    check_positive_int("seeds", seeds)
    pop_size = trainer.algorithm.pop_size
    if trainer.hosted:  # the host's workers batch the whole population themselves
        return Choice(Layout(1, pop_size), math.nan, 0.0, (), "host")
    group = agents_per_unit(trainer.task)
    key = state.key
    population = jax.eval_shape(trainer.algorithm.ask, key, state.algo_state)[0]
    obs_stats = state.obs_stats if trainer.normalize_obs else None
    centre = None if seeds > 1 else trainer.algorithm.best(state.algo_state)
    options, meshes = [], {}
    for mesh in _meshes(trainer):
        devices = 1 if mesh is None else mesh.shape[POP_AXIS]
        local = local_share(mesh, pop_size, trainer.n_repeats, trainer.task)
        if trainer.pop_chunk == "auto":
            chunks = chunk_candidates(local // group, group)
        else:
            chunks = [local if trainer.pop_chunk is None else cast(int, trainer.pop_chunk)]
        options.append((devices, chunks))
        meshes[devices] = mesh
    if trainer.loop == "auto" and not trainer.fixed_length:
        # the fused kernel: compiled for an accelerator, on a task the trainer leaves unwrapped
        fused = (
            jax.devices()[0].platform != "cpu"
            and not (trainer.normalize_obs or trainer.uses_descriptors)
            and fused_supported(trainer.policy, trainer.task)
        )
        loops = loop_candidates(trainer.task.max_steps, fused)
    else:  # given, or the scan (fixed_length)
        loops = [trainer.placed_loop]
    if len(options) == 1 and len(options[0][1]) == 1 and len(loops) == 1:
        devices, (chunk,) = options[0]
        return Choice(Layout(devices, chunk, loops[0]), math.nan, 0.0, (), "explicit")

    stand_in: dict[str, Any] = {}  # concrete inputs, made once `start` runs

    @functools.cache
    def program(layout: Layout, groups: int = 1):
        """The evaluation of ``groups`` groups per device on ``layout``'s devices, lowered,
        its inputs and how many individuals it evaluates."""
        mesh = meshes[layout.devices]
        split = mesh_split(mesh, pop_size, trainer.n_repeats, trainer.task)
        n_eval = layout.pop_chunk * groups * (layout.devices if split == "pop" else 1)

        def evaluate_group(trainer, population, key, obs_stats):
            return evaluate_on(
                trainer.policy,
                trainer.task,
                population,
                key,
                trainer.n_repeats,
                obs_stats,
                trainer.uses_descriptors,
                mesh=mesh,
                pop_chunk=layout.pop_chunk,
                split=split,
                loop=layout.loop,
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
        time_it = timer(lowered, inputs, clock)
        return lambda: time_it() * groups / timed

    def start() -> tuple[int, bool]:
        if centre is None or has_shared(population):
            # a seed-held population's shared parts: zeros (keys from seed 0)
            middle = jax.tree.map(
                lambda p: concrete(p) if is_shared(p) else np.zeros(p.shape[1:]),
                population,
                is_leaf=is_shared,
            )
        else:
            middle = jax.tree.map(np.asarray, concrete(centre))
        stand_in.update(
            trainer=concrete(trainer),
            key=concrete(key),
            obs_stats=concrete(obs_stats),
            centre=middle,
        )
        platform = jax.devices()[0].platform
        devices, chunks = options[0]
        # the whole share's program (the search's likely start): its size, bytes per
        # individual by XLA's cost analysis
        begin = clock()
        lowered, _, _ = program(Layout(devices, chunks[-1], loops[0]), 1)
        worth = clock() - begin <= MAX_LOWERING_SECONDS
        if platform != "cpu":
            return len(chunks) - 1, worth
        # the program is one device's: bytes per individual of a device's group
        return start_chunk(chunks, step_bytes(lowered) / chunks[-1], platform), worth

    def what() -> str:
        return signature(
            (
                trainer.policy,
                trainer.task,
                trainer.n_repeats,
                trainer.init_scale,
                trainer.uses_descriptors,
            ),
            (population, key, obs_stats),
            options,
            seeds,
            loops,
        )

    return choose_cached(what, options, compile, start, clock, loops)


def place(trainer: Trainer, state: TrainState, seeds: int = 1) -> Trainer:
    """``trainer`` set to the layout :func:`choose_layout` picks for it and ``state``."""
    return trainer.with_layout(choose_layout(trainer, state, seeds).layout)
