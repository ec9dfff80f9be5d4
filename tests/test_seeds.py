"""Several seeds as one vmapped run: each seed goes as its own run would, with its own tests,
metrics rows and best checkpoint, and the summary, eval and plot report over seeds."""

import json

import jax
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer, cli, train
from evolax.runner import seed_slice
from evolax.runs import load_run
from helpers import state_leaves

SMALL = [
    "cartpole", "--pop-size", "8", "--n-repeats", "2", "--max-steps", "50", "--hidden-sizes", "8",
    "--log-interval", "2", "--test-interval", "3", "--checkpoint-interval", "2",
    "--test-episodes", "4", "--no-progress",
]  # fmt: skip


def small_trainer():
    return Trainer(
        algorithm=PGPE(pop_size=8),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=50),
        n_repeats=2,
    )


def test_each_seed_goes_as_its_own_run():
    trainer = small_trainer()
    options = {"test_interval": 3, "n_test_episodes": 4, "progress": False}
    batched = train(trainer, 6, seed=[5, 6], **options)
    for index, seed in enumerate([5, 6]):
        single = train(trainer, 6, seed=seed, **options)
        alone = state_leaves(single.state)
        for x, y in zip(state_leaves(seed_slice(batched.state, index)), alone, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-5)
        per_seed = batched.summary["per_seed"][index]
        assert per_seed["seed"] == seed
        assert per_seed["final_test_mean"] == pytest.approx(single.summary["final_test_mean"], 1e-4)
    finals = [s["final_test_mean"] for s in batched.summary["per_seed"]]
    assert batched.summary["final_test_median"] == pytest.approx(np.median(finals))


def test_seed_list_is_checked():
    with pytest.raises(ValueError, match="distinct ints"):
        train(small_trainer(), 2, seed=[1, 1], progress=False)


@pytest.fixture(scope="module")
def seeds_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("seeds") / "run"
    args = ["train", *SMALL, "--generations", "6", "--seeds", "3", "--run-dir", str(run_dir)]
    assert cli.main(args) == 0
    return run_dir


def test_the_command_writes_every_seed(seeds_run, capsys):
    rows = [json.loads(line) for line in (seeds_run / "metrics.jsonl").read_text().splitlines()]
    seeds = [42, 43, 44]  # the preset's seed, 42, and the next two
    for kind, generations in (("train", range(1, 7)), ("test", (3, 6))):
        logged = {(r["generation"], r["seed"]) for r in rows if r["kind"] == kind}
        assert logged == {(g, s) for g in generations for s in seeds}
    summary = json.loads((seeds_run / "summary.json").read_text())
    finals = [r["test_mean"] for r in rows if r["kind"] == "test" and r["generation"] == 6]
    q25, median, q75 = np.percentile(finals, [25, 50, 75])
    assert summary["seeds"] == seeds
    assert summary["final_test_median"] == pytest.approx(median)
    assert (summary["final_test_q25"], summary["final_test_q75"]) == pytest.approx((q25, q75))
    # best/ holds each seed's best-scoring state: the generation of its best test
    _, _, best, meta = load_run(seeds_run, "best")
    for index, seed in enumerate(seeds):
        tests = [r for r in rows if r["kind"] == "test" and r["seed"] == seed]
        top = max(tests, key=lambda r: r["test_mean"])
        assert int(best.generation[index]) == top["generation"]
        assert meta["best_test_mean"][index] == pytest.approx(top["test_mean"])

    capsys.readouterr()
    assert cli.main(["eval", str(seeds_run), "--episodes", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in out[:3]] == [f"cartpole seed {s}" for s in seeds]
    assert out[3].startswith("median over 3 seeds: ")
    assert cli.main(["plot", str(seeds_run)]) == 0
    assert (seeds_run / "learning_curves.png").stat().st_size > 0


@pytest.mark.slow  # 22 s; one seed's exact resume is in the default suite (test_interrupt)
def test_a_run_of_seeds_resumes_exactly(seeds_run, tmp_path):
    import shutil

    resumed = tmp_path / "resumed"
    shutil.copytree(seeds_run, resumed)
    assert cli.main(["train", "--resume", str(resumed), "--generations", "8"]) == 0
    reference = tmp_path / "reference"
    args = ["train", *SMALL, "--generations", "8", "--seeds", "3", "--run-dir", str(reference)]
    assert cli.main(args) == 0
    (_, _, a, _), (_, _, b, _) = load_run(resumed), load_run(reference)
    for x, y in zip(state_leaves(a), state_leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)
    assert jax.tree.leaves(a.generation)[0].shape == (3,)
