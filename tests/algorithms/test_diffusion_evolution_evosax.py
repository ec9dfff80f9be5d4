"""DiffusionEvolution against evosax 0.3.2's ``DiffusionEvolution``, generation by generation,
and against the paper's formula where evosax departs from it.

Both start from the same evaluated population; at each generation both ``ask`` from the same
state with the same key, and evosax's population must equal evolax's once evosax's noise
``jax.random.normal(key)`` is replaced by evolax's (:meth:`DiffusionEvolution.draws`); then
both are told evolax's population (evosax the negated fitness). All ``n_generations - 1``
denoising steps are compared, to float32 accuracy.

Mappings: evosax's ``num_generations`` is ``n_generations``, ``std_m`` is ``noise``,
``scale_factor`` is ``init_std``, ``num_latent_dims`` is ``latent_dim``, and its
``fitness_mapping_energy(loss, temperature)`` of the loss ``-f`` is evolax's
``exp((f - max f) / temperature)`` (evosax adds 5 to the exponent: the weights are
normalised). evosax diffuses about the origin, evolax about ``x0``: evosax is told ``x -
x0``. Where evosax departs from the authors' code (github.com/Zhangyanbo/diffusion-evolution,
``diffevo/``; we could not read the paper's method section beyond its abstract, and rely on
that code for its algorithm 1):

- its cosine schedule is shrunk to ``[1e-3, 1 - 1e-3]`` (the authors' ``DDIMSchedulerCosine``
  runs from ``alpha = 0`` to ``1``, so the last step lands on the estimated origins): evosax
  is given the authors' schedule here, and :func:`test_schedule_is_the_authors` shows the
  difference;
- its latent projection ``N(0, 1 / D)`` has columns of norm about 1, the authors'
  ``RandomProjection(normalize=True)`` of norm 1: evosax is given evolax's projection;
- its origin estimate divides by the weights' sum clipped at ``1e-8``: where every weight
  underflows (a narrow kernel and a member far from the fit ones) it returns the origin ``0``,
  where the paper's weighted mean (evolax computes it in log space) stays among the members
  (:func:`test_estimate_where_evosax_underflows`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy.special import logsumexp

from evolax.algorithms.baselines.diffusion_evolution import DiffusionEvolution, denoise, energy
from helpers import X0, quadratic

evosax = pytest.importorskip("evosax.algorithms")
from evosax.algorithms.population_based import diffusion_evolution as evosax_de  # noqa: E402

POP, T = 12, 7


def authors_cosine(num_step):
    """``DDIMSchedulerCosine``'s ``alpha``, clean first: ``(cos(linspace(0, pi, T)) + 1) / 2``."""
    return (jnp.cos(jnp.linspace(0.0, jnp.pi, num_step)) + 1.0) / 2.0


@pytest.mark.slow  # reference check against evosax (nox -s slow)
@pytest.mark.parametrize("latent_dim", [None, 3])
def test_generations_match_evosax(latent_dim):
    x0 = ravel_pytree(X0)[0]
    noise, temperature, init_std = 0.6, 2.0, 0.7
    ours = DiffusionEvolution(
        POP,
        n_generations=T,
        noise=noise,
        temperature=temperature,
        init_std=init_std,
        latent_dim=latent_dim,
    )
    with jax.numpy_rank_promotion("allow"):  # evosax broadcasts implicitly
        theirs = evosax.DiffusionEvolution(
            POP,
            x0,
            num_generations=T,
            fitness_mapping=lambda loss: evosax_de.fitness_mapping_energy(loss, temperature),
            alpha_schedule=authors_cosine,
            num_latent_dims=latent_dim,
        )
        params = theirs.default_params.replace(std_m=noise, scale_factor=init_std)
    np.testing.assert_allclose(params.alphas, ours.alphas(), atol=1e-7)

    key = jax.random.key(0)
    ask, tell = jax.jit(ours.ask), jax.jit(ours.tell)
    state = ours.init(key, x0)
    x, state = ask(key, state)  # the first population: x0 + init_std N(0, I)
    state, _ = tell(key, state, x, quadratic(x))
    with jax.numpy_rank_promotion("allow"):
        their_state = theirs.init(key, x - x0, -quadratic(x), params)
    if latent_dim is not None:
        norms = np.linalg.norm(their_state.latent_projection, axis=0)
        assert np.max(np.abs(norms - 1.0)) > 1e-2  # evosax's columns are not unit vectors
        np.testing.assert_allclose(np.linalg.norm(state.projection, axis=0), 1.0, rtol=1e-6)
        their_state = their_state.replace(latent_projection=state.projection)

    for generation in range(T - 1):
        ask_key, tell_key = jax.random.split(jax.random.fold_in(key, generation))
        x, asked = ask(ask_key, state)
        with jax.numpy_rank_promotion("allow"):
            their_x, _ = theirs.ask(ask_key, their_state, params)
        alpha, alpha_next = params.alphas[generation], params.alphas[generation + 1]
        std = init_std * evosax_de.ddim_std(noise, alpha, alpha_next)
        their_noise = jax.random.normal(ask_key, x.shape)
        expected = x0[None] + their_x + std * (ours.draws(ask_key, x0) - their_noise)
        err = f"generation {generation}"
        np.testing.assert_allclose(x, expected, rtol=2e-5, atol=2e-5, err_msg=err)
        assert float(jnp.max(jnp.abs(x - state.population))) > 1e-2, err  # it moved
        fitness = quadratic(x)
        state, metrics = tell(tell_key, asked, x, fitness)
        with jax.numpy_rank_promotion("allow"):
            their_state, _ = theirs.tell(tell_key, x - x0, -fitness, their_state, params)
        np.testing.assert_allclose(metrics["alpha"], alpha_next, atol=1e-7)

    # the schedule is spent: evolax stays where the last step (alpha = 1, no noise) put it
    again, _ = ask(jax.random.key(9), state)
    np.testing.assert_array_equal(again, state.population)


@pytest.mark.slow
def test_schedule_is_the_authors():
    """evolax's cosine schedule is the authors' (``alpha`` from 0 to 1, noisiest first),
    evosax's default is shrunk to ``[1e-3, 1 - 1e-3]``: its last step does not land on the
    estimated origins."""
    ours = DiffusionEvolution(POP, n_generations=T).alphas()
    np.testing.assert_allclose(ours, authors_cosine(T)[::-1], atol=1e-7)
    assert float(ours[0]) == 0.0 and float(ours[-1]) == 1.0
    theirs = evosax_de.cosine_schedule(T)
    np.testing.assert_allclose([theirs[-1], theirs[0]], [1e-3 * (1 - 1e-3) / (1 + 1e-3), 1 - 1e-3],
                               rtol=1e-4)  # fmt: skip
    linear = DiffusionEvolution(POP, n_generations=T, schedule="linear").alphas()
    np.testing.assert_allclose(linear, np.linspace(1 - 1e-4, 1e-8, T)[::-1], rtol=1e-6)


def paper_estimate(z, fitness, alpha, temperature):
    """The paper's origin estimate in float64: ``sum_j g_j N(z_i; sqrt(alpha) z_j, 1 - alpha)
    z_j / sum_j (..)`` with ``g = exp(f / T)``, its logarithms summed by ``logsumexp``."""
    z = np.asarray(z, np.float64)
    squared = np.sum((z[:, None] - np.sqrt(alpha) * z[None]) ** 2, axis=2)
    log_w = np.asarray(fitness, np.float64)[None] / temperature - squared / (2 * (1 - alpha))
    weights = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    return weights @ z


@pytest.mark.slow
def test_estimate_where_evosax_underflows():
    """Late in the schedule (``alpha = 0.999``: kernels of std 0.03) a member far from the
    fit ones and much less fit has no weight above float32's range: evosax's estimate of its
    origin collapses to the origin 0, evolax's is the paper's (the member itself)."""
    z = jnp.array([[3.0, 0.0], [3.05, 0.1], [-3.0, 0.0]])
    fitness = jnp.array([0.0, -1.0, -150.0])
    alpha, temperature = 0.999, 1.0
    with jax.numpy_rank_promotion("allow"):
        theirs = evosax_de.estimate_x_0(
            z, z, evosax_de.fitness_mapping_energy(-fitness, temperature), jnp.asarray(alpha)
        )
    np.testing.assert_array_equal(theirs[2], [0.0, 0.0])
    _, ours = denoise(z, z, energy(fitness, temperature), jnp.asarray(alpha),
                      jnp.asarray(1.0), 0.0, jnp.zeros_like(z))  # fmt: skip
    expected = paper_estimate(z, fitness, alpha, temperature)
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2], z[2], atol=1e-3)
    np.testing.assert_allclose(theirs[:2], expected[:2], rtol=1e-5, atol=1e-5)  # elsewhere: same
