"""EvoJAX's published cart-pole scores with its published configuration (slow: `nox -s slow`).

EvoJAX's benchmark table: 935 (easy) and 631 (hard) within 1000 generations of PGPE with
pop 64, 16 repeats, MLP [64, 64], adam centre lr 0.05, std lr 0.1, init std 0.1.
"""

import optax
import pytest

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer
from evolax.runner import train


@pytest.mark.slow
@pytest.mark.parametrize(("hard", "target"), [(False, 900.0), (True, 600.0)])
def test_cartpole_reaches_published_score(hard, target):
    trainer = Trainer(
        algorithm=PGPE(pop_size=64, optimizer=optax.adam(0.05), init_std=0.1, std_lr=0.1),
        policy=MLP(hidden_sizes=(64, 64)),
        task=CartPoleSwingUp(hard=hard),
        n_repeats=16,
    )
    result = train(trainer, 1000, seed=0, log_interval=50, test_interval=100, progress=False)
    assert result.summary["best_test_mean"] >= target, result.summary
