"""CheckpointStore: exact round trip, last K plus best, corrupt checkpoints quarantined."""

import time

import jax
import numpy as np
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer
from evolax.checkpoint import CheckpointError, CheckpointStore
from helpers import state_leaves


def assert_same_state(a, b):
    for x, y in zip(state_leaves(a), state_leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module")
def states():
    trainer = Trainer(
        algorithm=PGPE(pop_size=8),
        policy=MLP(hidden_sizes=(8,)),
        task=CartPoleSwingUp(max_steps=20),
        n_repeats=2,
        normalize_obs=True,
    )
    run = jax.jit(trainer.run, static_argnums=1)
    state = trainer.init(jax.random.key(0))
    out = []
    for _ in range(4):
        state, _ = run(state, 2)
        out.append(state)
    return trainer, out


def test_round_trip_is_exact_and_keeps_last_k_plus_best(tmp_path, states):
    trainer, saved = states
    store = CheckpointStore(tmp_path, keep=2)
    for i, state in enumerate(saved):
        store.save(state, {"test_mean": float(i)}, best=i == 1)
    assert store.steps() == [6, 8]
    assert store.steps("best") == [4]
    like = trainer.init(jax.random.key(9))
    latest, meta = store.restore(like)
    assert meta["generation"] == 8 and meta["test_mean"] == 3.0
    assert_same_state(latest, saved[-1])
    best, _ = store.restore(like, which="best")
    assert_same_state(best, saved[1])
    store.close()


def truncate_largest_file(folder):
    largest = max((p for p in folder.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    largest.write_bytes(largest.read_bytes()[: largest.stat().st_size // 2])


def flip_bytes_of_every_data_file(folder):
    for p in folder.rglob("*"):
        if p.is_file() and "/d/" in p.as_posix():
            data = bytearray(p.read_bytes())
            data[len(data) // 2] ^= 0xFF
            p.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [truncate_largest_file, flip_bytes_of_every_data_file])
def test_damaged_latest_falls_back_and_is_kept_aside(tmp_path, states, damage, capfd):
    trainer, saved = states
    store = CheckpointStore(tmp_path, keep=3)
    for state in saved[1:]:
        store.save(state, {})
    damage(tmp_path / "checkpoints" / "8")
    capfd.readouterr()
    with pytest.warns(UserWarning, match=r"checkpoints/8 is unreadable.*trying the previous one"):
        restored, meta = store.restore(trainer.init(jax.random.key(9)))
    time.sleep(0.5)  # reads orbax abandoned would report a closed event loop about now
    noise = capfd.readouterr()
    assert noise.err == "" and noise.out == "", "a good recovery prints only its warning"
    assert meta["generation"] == 6
    assert_same_state(restored, saved[2])
    assert store.steps() == [4, 6]
    (kept,) = (tmp_path / "corrupt").iterdir()  # moved aside, never deleted
    assert kept.name.startswith("checkpoints-8-")
    store.close()


def test_no_checkpoint_and_wrong_structure_are_clear_errors(tmp_path, states):
    trainer, saved = states
    store = CheckpointStore(tmp_path)
    with pytest.raises(CheckpointError, match="none saved"):
        store.restore(trainer.init(jax.random.key(0)))
    store.save(saved[0], {})
    other = Trainer(algorithm=PGPE(pop_size=8), policy=MLP(hidden_sizes=(4,)), task=trainer.task)
    with pytest.raises(CheckpointError, match="differently shaped"):
        store.restore(other.init(jax.random.key(0)))
    store.close()
