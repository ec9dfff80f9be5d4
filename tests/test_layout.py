"""The automatic evaluation layout: the search, its cache, and a trainer that measures."""

import itertools
import json

import equinox as eqx
import jax
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer
from evolax.algorithms import LowRankES
from evolax.layout import Choice, Layout
from evolax.placement import choose_layout, tuner
from evolax.placement.tuner import choose, chunk_candidates, groups_timed, start_chunk
from evolax.runner import train


def test_chunk_candidates_are_divisors_near_powers_of_four():
    assert chunk_candidates(64) == [1, 4, 16, 64]
    assert chunk_candidates(6) == [1, 3, 6]
    assert chunk_candidates(1) == [1]
    assert chunk_candidates(100) == [1, 4, 10, 50, 100]
    assert chunk_candidates(4, group=16) == [16, 64]  # whole environments of 16 agents
    assert groups_timed(1, 64) == 8 and groups_timed(4, 16) == 2 and groups_timed(16, 4) == 1
    assert groups_timed(1, 3) == 3  # never more groups than a device has


def test_start_chunk_reads_the_cost_model_on_cpu_only():
    chunks = [1, 4, 16, 64]
    assert start_chunk(chunks, 2**15, "cpu") == 3  # 2 MiB for all: the whole population
    assert start_chunk(chunks, 2**17, "cpu") == 2  # 128 KiB each: groups of 16 (2 MiB)
    assert start_chunk(chunks, 2**22, "cpu") == 0
    assert start_chunk(chunks, float("inf"), "cpu") == 0
    assert start_chunk(chunks, 2**30, "gpu") == 3  # accelerators start at the whole population


def _search(cost, options, start, budget=1e9, min_seconds=0.0, clock=None):
    measured = []

    def compile(layout):
        measured.append(layout)
        return lambda: cost[layout]

    kwargs = {} if clock is None else {"clock": clock}
    choice = choose(
        compile, options, start, budget_generations=budget, min_budget_seconds=min_seconds, **kwargs
    )
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
    """Layouts measured as for a user: no switch off, an empty cache file, no process cache."""
    monkeypatch.delenv(tuner.MEASURE_ENV, raising=False)
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
    trainer = _trainer(pop_chunk=4, mesh=None)
    choice = choose_layout(trainer, trainer.init(jax.random.key(0)))
    assert choice == Choice(Layout(1, 4), choice.seconds, 0.0, (), "explicit")
    assert not measuring.exists()


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
    kept = Layout(1, 8)
    first = train(_trainer().with_layout(kept), 2, run_dir=run_dir, **common)
    assert first.summary["layout"] == {"devices": 1, "pop_chunk": 8}
    assert first.summary["layout_source"] == "explicit"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert {row["pop_chunk"] for row in rows if row["kind"] == "train"} == {8}
    assert json.loads((run_dir / "layout.json").read_text()) == {"devices": 1, "pop_chunk": 8}
    # resumed with a trainer laid out otherwise: the run folder's layout is kept, unmeasured
    resumed = train(_trainer(), 4, run_dir=run_dir, resume=True, **common)
    assert resumed.summary["layout"] == {"devices": 1, "pop_chunk": 8}
    assert resumed.summary["layout_source"] == "run folder"
    assert not measuring.exists()  # nothing was measured, before or after


def test_a_trainer_is_given_its_layout_and_never_measures(measuring):
    """`step` and `run` are pure: tracing them times nothing and caches nothing; "auto" is
    the most devices that split the work, each device's whole share at once."""
    trainer = _trainer()
    assert trainer.layout == Layout(1, 16)
    state = trainer.init(jax.random.key(0))
    jax.make_jaxpr(lambda s: trainer.run(s, 2))(state)
    assert tuner.choices() == [] and not measuring.exists()
    assert trainer.with_layout(Layout(1, 4)).layout == Layout(1, 4)


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
