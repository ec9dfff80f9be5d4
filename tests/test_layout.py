"""The automatic evaluation layout: the search, its cache, and a trainer that measures."""

import dataclasses
import functools
import itertools
import json

import equinox as eqx
import jax
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Direct, Trainer, runner
from evolax.algorithms import LowRankES
from evolax.layout import Choice, EpisodeLoop, Layout
from evolax.placement import choose_layout, tuner
from evolax.placement.tuner import (
    choose,
    chunk_candidates,
    groups_timed,
    loop_candidates,
    start_chunk,
)
from evolax.runner import train
from helpers import Countdown


def test_chunk_candidates_are_divisors_near_powers_of_four():
    assert chunk_candidates(64) == [1, 4, 16, 64]
    assert chunk_candidates(6) == [1, 3, 6]
    assert chunk_candidates(1) == [1]
    assert chunk_candidates(100) == [1, 4, 10, 50, 100]
    assert chunk_candidates(4, group=16) == [16, 64]  # whole environments of 16 agents
    assert groups_timed(1, 64) == 32 and groups_timed(4, 16) == 8 and groups_timed(16, 4) == 2
    assert groups_timed(1, 3) == 3  # never more groups than a device has


def test_start_chunk_reads_the_cost_model_on_cpu_only():
    chunks = [1, 4, 16, 64]
    assert start_chunk(chunks, 2**15, "cpu") == 3  # 2 MiB for all: the whole population
    assert start_chunk(chunks, 2**17, "cpu") == 2  # 128 KiB each: groups of 16 (2 MiB)
    assert start_chunk(chunks, 2**22, "cpu") == 0
    assert start_chunk(chunks, float("inf"), "cpu") == 0
    assert start_chunk(chunks, 2**30, "gpu") == 3  # accelerators start at the whole population


def _search(cost, options, start, budget=1e9, min_seconds=0.0, loops=None, clock=None):
    measured = []

    def compile(layout):
        measured.append(layout)
        return lambda: cost[layout]

    given = {} if clock is None else {"clock": clock}
    if loops is not None:
        given["loops"] = loops
    choice = choose(compile, options, start, budget, min_budget_seconds=min_seconds, **given)
    return choice, measured


def test_choose_walks_to_the_fastest_group_and_compares_device_counts():
    options = [(2, [1, 4, 16, 32]), (1, [1, 4, 16, 64])]
    cost = {
        **{Layout(2, c): t for c, t in zip([1, 4, 16, 32], [9.0, 5.0, 4.0, 6.0], strict=True)},
        **{Layout(1, c): t for c, t in zip([1, 4, 16, 64], [8.0, 3.0, 3.5, 7.0], strict=True)},
    }
    choice, measured = _search(cost, options, 3)
    assert choice.layout == Layout(1, 4) and choice.seconds == 3.0
    # from the first option's start, down its groups, across at 16, down the other's
    path = [(2, 32), (2, 16), (2, 4), (1, 16), (1, 4), (1, 64), (1, 1)]
    assert measured == [Layout(*step) for step in path]
    assert dict(choice.timings) == {layout: cost[layout] for layout in measured}
    assert choice.source == "measured"


def test_choose_stops_when_the_budget_is_spent():
    options = [(1, [1, 4, 16, 64])]
    cost = {Layout(1, c): t for c, t in zip([1, 4, 16, 64], [4.0, 3.0, 2.0, 1.0], strict=True)}
    choice, measured = _search(cost, options, 0, budget=0.0)
    assert measured == [Layout(1, 1)] and choice.layout == Layout(1, 1)
    choice, measured = _search(cost, options, 0)
    assert choice.layout == Layout(1, 64) and len(measured) == 4


def test_choose_may_always_spend_its_minimum_budget():
    """Short generations (1 s here) whose budget of generations a candidate's compilation (2 s
    on this clock) spends at once still get the rounds the minimum budget pays for."""
    options = [(1, [1, 4, 16, 64])]
    cost = {Layout(1, c): t for c, t in zip([1, 4, 16, 64], [4.0, 3.0, 2.0, 1.0], strict=True)}
    ticks = iter(range(0, 1000, 2))  # every reading of the clock: 2 s later
    clock = lambda: float(next(ticks))  # noqa: E731
    _, measured = _search(cost, options, 0, budget=1.0, min_seconds=0.0, clock=clock)
    assert measured == [Layout(1, 1)]
    choice, measured = _search(cost, options, 0, budget=1.0, min_seconds=60.0, clock=clock)
    assert choice.layout == Layout(1, 64) and len(measured) == 4


WHILE, SCAN, SCAN4 = EpisodeLoop(), EpisodeLoop("scan"), EpisodeLoop("scan", unroll=4)
CHUNKED = EpisodeLoop("chunked", block=25)


def test_loop_candidates_are_the_while_loop_first_then_scans_and_blocks():
    chunked = [EpisodeLoop("chunked", block=b) for b in (32, 125)]
    assert loop_candidates(1000) == [WHILE, SCAN, SCAN4, *chunked]
    assert loop_candidates(20) == [WHILE, SCAN, SCAN4, EpisodeLoop("chunked", block=3)]
    assert loop_candidates(3) == [WHILE, SCAN, EpisodeLoop("scan", unroll=3)]  # no block fits
    assert loop_candidates(1) == [WHILE]  # one step: no loop to choose
    # on an accelerator, for a policy and task the kernel runs: the fused kernel too
    fused = [EpisodeLoop("fused", block=b) for b in (64, 256)]
    assert loop_candidates(1000, fused=True) == [WHILE, SCAN, SCAN4, *chunked, *fused]
    assert loop_candidates(20, fused=True)[-1:] == [EpisodeLoop("fused", block=20)]


def test_choose_measures_the_loops_last_at_the_fastest_layout():
    options = [(1, [1, 4, 16])]
    loops = (WHILE, SCAN, SCAN4, CHUNKED)
    layouts = {Layout(1, c, WHILE): t for c, t in zip([1, 4, 16], [3.0, 2.0, 2.5], strict=True)}
    at_4 = {Layout(1, 4, SCAN): 2.5, Layout(1, 4, SCAN4): 1.5, Layout(1, 4, CHUNKED): 1.8}
    choice, measured = _search({**layouts, **at_4}, options, 2, loops=loops)
    assert choice.layout == Layout(1, 4, SCAN4) and choice.seconds == 1.5
    assert measured == [*(Layout(1, c) for c in (16, 4, 1)), *at_4]  # the loops: one round
    # none faster than the while loop: it stays
    slower = {layout: 9.0 for layout in at_4}
    choice, _ = _search({**layouts, **slower}, options, 2, loops=loops)
    assert choice.layout == Layout(1, 4, WHILE)


def test_the_loops_round_keeps_to_the_budget():
    """A round of loops starts only where its estimated cost (what a candidate cost so far,
    times the threads) keeps tuning within the budget of generations."""
    options = [(1, [4])]
    cost = {Layout(1, 4, WHILE): 1.0, Layout(1, 4, SCAN): 0.5}
    # each clock reading 0.1 s later: the first candidate read as a few tenths of a second
    choice, measured = _search(cost, options, 0, budget=0.2, loops=(WHILE, SCAN), clock=ticks(0.1))
    assert measured == [Layout(1, 4, WHILE)] and choice.layout == Layout(1, 4, WHILE)
    choice, measured = _search(cost, options, 0, budget=1e3, loops=(WHILE, SCAN), clock=ticks(0.1))
    assert measured == [Layout(1, 4, WHILE), Layout(1, 4, SCAN)]
    assert choice.layout == Layout(1, 4, SCAN)


def _trainer(**kwargs):
    return Trainer(
        algorithm=PGPE(pop_size=16),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=50),
        n_repeats=2,
        **kwargs,
    )


def ticks(seconds=1e-3):
    """A clock that reads ``seconds`` later at each reading, whatever the machine's load: the
    tuner's decisions (measure or not, the budget) then depend on its logic alone."""
    count = itertools.count()
    return lambda: next(count) * seconds


@pytest.fixture
def measuring(monkeypatch, tmp_path):
    """Layouts measured as for a user: no switch off, an empty cache file, no process cache;
    no minimum budget (test_choose_may_always_spend_its_minimum_budget checks it), so these
    searches end as soon as their budget of generations does."""
    monkeypatch.delenv(tuner.MEASURE_ENV, raising=False)
    monkeypatch.setattr(tuner, "MIN_BUDGET_SECONDS", 0.0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(tuner, "_CHOICES", {})
    return tmp_path / "evolax" / tuner.CACHE_FILE


def test_trainer_measures_its_layout_records_it_and_reuses_it(measuring):
    """The one test on the real clock: on a loaded machine lowering may pass the limit that
    skips measuring (then the cost model's start is taken), so either source is right."""
    trainer = _trainer()
    state = trainer.init(jax.random.key(0))
    choice = choose_layout(trainer, state)
    assert choice.source in ("measured", "cost model")
    assert choice.source == "cost model" or (choice.timings and choice.tuning_seconds > 0)
    assert choice.layout.devices == 1 and choice.layout.pop_chunk in chunk_candidates(16)
    placed = trainer.with_layout(choice.layout)
    _, history = eqx.filter_jit(lambda t, s: t.run(s, 2))(placed, state)
    np.testing.assert_array_equal(history["pop_chunk"], choice.layout.pop_chunk)
    np.testing.assert_array_equal(history["eval_devices"], 1)
    # the same fitness as the whole population at once (groups change only the last bits)
    whole = _trainer(pop_chunk=None)
    _, reference = eqx.filter_jit(lambda t, s: t.run(s, 2))(whole, state)
    np.testing.assert_allclose(history["fitness_mean"], reference["fitness_mean"], rtol=1e-5)

    stored = json.loads(measuring.read_text())
    assert [entry["pop_chunk"] for entry in stored.values()] == [choice.layout.pop_chunk]
    tuner._CHOICES.clear()  # as a new process: the cache file answers, for free
    again = choose_layout(trainer, trainer.init(jax.random.key(1)))
    assert again.source == "cache" and again.layout == choice.layout
    assert again.tuning_seconds == 0.0


def test_explicit_settings_win_and_are_not_measured(measuring):
    trainer = _trainer(pop_chunk=4, mesh=None, loop="while")
    choice = choose_layout(trainer, trainer.init(jax.random.key(0)))
    assert choice == Choice(Layout(1, 4), choice.seconds, 0.0, (), "explicit")
    assert not measuring.exists()
    fixed = _trainer(pop_chunk=4, mesh=None, fixed_length=True)  # the scan, whatever loop says
    choice = choose_layout(fixed, fixed.init(jax.random.key(0)))
    assert choice == Choice(Layout(1, 4, SCAN), choice.seconds, 0.0, (), "explicit")


def test_the_loop_is_measured_for_the_layout_recorded_and_read_back(measuring, monkeypatch):
    """Devices and groups given, the loops alone are measured (a budget that lets them), on
    the given layout; the choice is cached with its loop, and a new process reads it back."""
    monkeypatch.setattr(tuner, "choose", functools.partial(tuner.choose, budget_generations=1e9))
    task = Countdown(max_steps=20)
    trainer = Trainer(PGPE(pop_size=4), Direct(), task, mesh=None, pop_chunk=None)
    state = trainer.init(jax.random.key(0))
    choice = choose_layout(trainer, state, clock=ticks())
    assert choice.source == "measured"
    measured = [layout for layout, _ in choice.timings]
    assert measured == [Layout(1, 4, loop) for loop in loop_candidates(20)]
    assert choice.layout in dict(choice.timings)
    (entry,) = json.loads(measuring.read_text()).values()
    assert Layout.read(entry) == choice.layout
    tuner._CHOICES.clear()  # as a new process: the cache file answers, loop and all
    again = choose_layout(trainer, state)
    assert again.source == "cache" and again.layout == choice.layout


def test_an_unreadable_cache_file_is_measured_again(measuring):
    measuring.parent.mkdir(parents=True)
    measuring.write_text("{not json")
    trainer = _trainer()
    choice = choose_layout(trainer, trainer.init(jax.random.key(0)), clock=ticks())
    assert choice.source == "measured"
    assert len(json.loads(measuring.read_text())) == 1


def test_a_run_records_its_layout_and_resumes_with_it(measuring, tmp_path):
    run_dir = tmp_path / "run"
    common = dict(log_interval=2, test_interval=2, n_test_episodes=2, progress=False)
    kept = Layout(1, 8, EpisodeLoop("chunked", block=7))
    first = train(_trainer().with_layout(kept), 2, run_dir=run_dir, **common)
    chunked = {"form": "chunked", "unroll": 1, "block": 7, "interpret": False}
    assert first.summary["layout"] == {"devices": 1, "pop_chunk": 8, "loop": chunked}
    assert first.summary["layout_source"] == "explicit"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {row["pop_chunk"] for row in rows if row["kind"] == "train"} == {8}
    recorded = json.loads((run_dir / "layout.json").read_text())
    assert recorded == {"devices": 1, "pop_chunk": 8, "loop": chunked}
    # resumed with a trainer laid out otherwise: the run folder's layout is kept, unmeasured
    resumed = train(_trainer(), 4, run_dir=run_dir, resume=True, **common)
    assert resumed.summary["layout"] == recorded
    assert resumed.summary["layout_source"] == "run folder"
    assert not measuring.exists()  # nothing was measured, before or after


def test_a_layout_recorded_without_a_loop_is_the_while_loop(tmp_path):
    """Run folders and checkpoints of earlier versions record devices and groups only."""
    (tmp_path / "layout.json").write_text(json.dumps({"devices": 1, "pop_chunk": 8}))
    assert runner._recorded_layout(tmp_path).layout == Layout(1, 8, EpisodeLoop())
    numbers = runner._layout_numbers({"devices": 1, "pop_chunk": 4})
    assert runner._numbers_layout(numbers) == Layout(1, 4, EpisodeLoop())
    loop = EpisodeLoop("chunked", unroll=2, block=9)
    numbers = runner._layout_numbers(dataclasses.asdict(Layout(1, 4, loop)))
    assert runner._numbers_layout(numbers) == Layout(1, 4, loop)
    assert runner._numbers_layout(runner._layout_numbers(None)) is None  # none recorded
    (tmp_path / "layout.json").write_text(json.dumps({"devices": 1, "pop_chunk": 8, "loop": 3}))
    assert runner._recorded_layout(tmp_path) is None  # unreadable: measured again


def test_a_trainer_is_given_its_layout_and_never_measures(measuring):
    """`step` and `run` are pure: tracing them times nothing and caches nothing; "auto" is
    the most devices that split the work, each device's whole share at once."""
    trainer = _trainer()
    assert trainer.layout == Layout(1, 16)
    state = trainer.init(jax.random.key(0))
    jax.make_jaxpr(lambda s: trainer.run(s, 2))(state)
    assert tuner.choices() == [] and not measuring.exists()
    assert trainer.with_layout(Layout(1, 4)).layout == Layout(1, 4)
    assert trainer.with_layout(Layout(1, 4, SCAN4)).layout == Layout(1, 4, SCAN4)


@pytest.mark.parametrize("chunk", ["fast", 0, -4, 2.0, True])
def test_bad_pop_chunk_is_refused_at_construction(chunk):
    with pytest.raises(ValueError, match="pop_chunk must be a positive integer, None or 'auto'"):
        _trainer(pop_chunk=chunk)


def test_a_program_too_big_to_measure_takes_the_cost_models_start(measuring):
    trainer = _trainer()
    slow = ticks(2 * tuner.MAX_LOWERING_SECONDS)  # lowering reads as twice the limit
    choice = choose_layout(trainer, trainer.init(jax.random.key(0)), clock=slow)
    assert choice.source == "cost model" and choice.timings == ()
    assert choice.layout == Layout(1, 16)  # a small step: the whole population at once
    assert len(json.loads(measuring.read_text())) == 1  # kept, so later runs agree


def test_several_seeds_measure_their_layout_vmapped_over_the_seeds(measuring, monkeypatch):
    """A run of several seeds evaluates seeds x group individuals at once, so it measures its
    own layout on the vmapped program (painting 8 seeds with one seed's group of 16 was 3x
    slower per seed than one seed alone)."""
    shapes = []
    real = tuner.lower

    def spy(fn, *args):
        shapes.append(jax.tree.leaves(args[1])[0].shape)  # the stand-in population
        return real(fn, *args)

    monkeypatch.setattr(tuner, "lower", spy)
    trainer = _trainer()
    state = trainer.init(jax.random.key(0))
    choose_layout(trainer, state, clock=ticks())  # one seed alone
    alone, shapes[:] = list(shapes), []
    choice = choose_layout(trainer, state, seeds=4, clock=ticks())
    assert choice.source == "measured"
    assert shapes and {shape[0] for shape in shapes} == {4}
    assert {shape[1:] for shape in shapes} <= {shape for shape in alone} | {
        (n, *alone[0][1:]) for n in chunk_candidates(16)
    }
    assert len(json.loads(measuring.read_text())) == 2  # a choice per number of seeds
    with pytest.raises(ValueError, match="seeds must be a positive integer"):
        choose_layout(trainer, state, seeds=0)


def test_a_seed_held_population_measures_its_layout_over_several_seeds(measuring):
    """LowRankES's members exist as keys: the stand-in groups of several seeds stack those
    keys too (NumPy cannot hold them; `evolax train` with `run.seeds` failed here)."""
    trainer = Trainer(
        algorithm=LowRankES(pop_size=16),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=50),
        n_repeats=2,
    )
    choice = choose_layout(trainer, trainer.init(jax.random.key(0)), seeds=2, clock=ticks())
    assert choice.source == "measured" and choice.layout.pop_chunk in chunk_candidates(16)
