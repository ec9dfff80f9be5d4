"""DiffusionEvolution: a generation against a numpy transcription of the authors' code, the
schedule's ends, the two-peak example of the authors' README, and bad hyper-parameters."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.algorithms.baselines.diffusion_evolution import DiffusionEvolution

POP, DIM, T = 16, 5, 8


def authors_generation(x, fitness, alpha, alpha_next, noise, draws, latent=None):
    """``BayesianGenerator(x, g, (alpha, alpha_next))(noise)`` of the authors' code
    (``diffevo/generator.py``, uniform density; ``LatentBayesianGenerator`` with ``latent``)
    in float64, with their RL experiments' ``g = exp((f - max f) / T)``, ``T = 5``, and
    ``draws`` for ``torch.randn_like``. Their ``1e-9`` guards (``prob = (g + 1e-9) (p +
    1e-9) / (1 / N + 1e-9)``) are left out, as evolax leaves them: they give every member a
    weight of at least ``1e-9 g_j``, which moves a poor member (``g_i p_ii`` itself near
    ``1e-9``) towards the fit ones late in the schedule, where the paper's estimate does not."""
    x, draws = np.asarray(x, np.float64), np.asarray(draws, np.float64)
    z = x if latent is None else np.asarray(latent, np.float64)
    g = np.exp((np.asarray(fitness, np.float64) - np.max(fitness)) / 5.0)
    origins = []
    for z_t in z:  # BayesianEstimator._estimate
        dist = np.linalg.norm(z_t[None] - np.sqrt(alpha) * z, axis=-1)
        prob = g * np.exp(-(dist**2) / (2 * (1 - alpha)))
        origins.append(np.sum(prob[:, None] * x, axis=0) / np.sum(prob))
    x0 = np.stack(origins)
    sigma = np.sqrt((1 - alpha_next) / (1 - alpha) * (1 - alpha / alpha_next)) * noise
    eps = (x - np.sqrt(alpha) * x0) / np.sqrt(1 - alpha)
    return np.sqrt(alpha_next) * x0 + np.sqrt(1 - alpha_next - sigma**2) * eps + sigma * draws


def quadratic(x):
    return -jnp.sum((x - 0.5) ** 2 * jnp.arange(1.0, DIM + 1.0)[None], axis=-1)


@pytest.mark.parametrize("latent_dim", [None, 2])
def test_generation_matches_the_authors_code(latent_dim):
    noise = 0.5
    algo = DiffusionEvolution(
        POP, n_generations=T, noise=noise, temperature=5.0, latent_dim=latent_dim
    )
    ask, tell = jax.jit(algo.ask), jax.jit(algo.tell)
    state = algo.init(jax.random.key(0), jnp.zeros(DIM))
    x, state = ask(jax.random.key(1), state)
    np.testing.assert_array_equal(x, state.population)  # the first ask: the start
    state, _ = tell(jax.random.key(1), state, x, quadratic(x))
    alphas = np.cos(np.linspace(0.0, np.pi, T))[::-1] / 2 + 0.5  # DDIMSchedulerCosine, reversed
    for step in (1, 4, T - 1):  # the first, a middle and the last denoising step
        key = jax.random.key(step)
        x, _ = ask(key, state.replace(step=jnp.asarray(step, jnp.int32)))
        latent = None if latent_dim is None else state.population @ state.projection
        alpha, alpha_next = alphas[step - 1], alphas[step]
        expected = authors_generation(
            state.population, state.fitness, alpha, alpha_next, noise,
            algo.draws(key, state.origin), latent,
        )  # fmt: skip
        np.testing.assert_allclose(x, expected, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
    # spent: the population stays
    x, _ = ask(jax.random.key(9), state.replace(step=jnp.asarray(T, jnp.int32)))
    np.testing.assert_array_equal(x, state.population)


def two_peaks(x):
    """The log of the README's ``two_peak_density(x, std=0.25)`` (peaks at ``+-(1, 1)``): with
    the default temperature 1 the weights are the authors' identity mapping of the density."""
    return jnp.logaddexp(
        -jnp.sum((x - 1.0) ** 2, axis=-1) / (2 * 0.25**2),
        -jnp.sum((x + 1.0) ** 2, axis=-1) / (2 * 0.25**2),
    )


@functools.cache
@jax.jit
def two_peak_run():
    """The README's example: 50 generations of 256 members, ``noise = 0.1``, from ``2
    N(0, I)``."""
    algo = DiffusionEvolution(256, n_generations=50, noise=0.1, init_std=2.0)

    def generation(state, key):
        x, state = algo.ask(key, state)
        state, _ = algo.tell(key, state, x, two_peaks(x))
        return state, None

    key = jax.random.key(0)
    state, _ = jax.lax.scan(generation, algo.init(key, jnp.zeros(2)), jax.random.split(key, 50))
    return state


def test_finds_both_peaks():
    """The final population samples the density: both peaks keep a quarter of it or more
    (selection and reproductive isolation), and it lies within the peaks' width (a sample of
    the density lies within 0.54 of a peak with probability 0.9)."""
    state = two_peak_run()
    distances = [jnp.linalg.norm(state.population - peak, axis=1) for peak in (1.0, -1.0)]
    for distance in distances:
        assert float(jnp.mean(distance < 0.75)) > 0.25
    assert float(jnp.quantile(jnp.minimum(*distances), 0.9)) < 0.54
    assert float(state.best_fitness) > -0.02


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(n_generations=1), "n_generations must be an integer >= 2"),
        (dict(schedule="ddpm"), "schedule must be one of"),
        (dict(noise=1.5), r"noise must be in \[0.0, 1.0\]"),
        (dict(temperature=0.0), "temperature must be a finite positive number"),
        (dict(init_std=-2.0), "init_std must be a finite positive number"),
        (dict(latent_dim=0), "latent_dim must be a positive integer"),
    ],
)
def test_bad_hyper_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DiffusionEvolution(8, **kwargs)


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_shrinks_the_authors_schedule():
    """evolax's cosine schedule is the authors' (``DDIMSchedulerCosine`` in
    github.com/Zhangyanbo/diffusion-evolution, ``diffevo/``: ``alpha`` from 0 to 1, noisiest
    first); evosax 0.3.2's default is shrunk to ``[1e-3, 1 - 1e-3]``: its last step does not
    land on the estimated origins. (Given the authors' schedule, the generations agree: the
    reference table's ``DiffusionEvolution`` rows.)"""
    evosax_de = pytest.importorskip("evosax.algorithms.population_based.diffusion_evolution")
    from reference_table import authors_cosine

    pop, generations = 12, 7
    ours = DiffusionEvolution(pop, n_generations=generations).alphas()
    np.testing.assert_allclose(ours, authors_cosine(generations)[::-1], atol=1e-7)
    assert float(ours[0]) == 0.0 and float(ours[-1]) == 1.0
    theirs = evosax_de.cosine_schedule(generations)
    np.testing.assert_allclose([theirs[-1], theirs[0]], [1e-3 * (1 - 1e-3) / (1 + 1e-3), 1 - 1e-3],
                               rtol=1e-4)  # fmt: skip
    linear = DiffusionEvolution(pop, n_generations=generations, schedule="linear").alphas()
    np.testing.assert_allclose(linear, np.linspace(1 - 1e-4, 1e-8, generations)[::-1], rtol=1e-6)


@pytest.mark.slow  # a reference check against evosax (nox -s slow)
def test_evosax_estimate_underflows_where_the_papers_does_not():
    """evosax 0.3.2's origin estimate divides by the weights' sum clipped at ``1e-8``: late in
    the schedule (``alpha = 0.999``: kernels of std 0.03) a member far from the fit ones and
    much less fit has no weight above float32's range, and evosax's estimate of its origin
    collapses to the origin 0; evolax's, computed in log space, is the paper's weighted mean
    ``sum_j g_j N(z_i; sqrt(alpha) z_j, 1 - alpha) z_j / sum_j (..)`` with ``g = exp(f / T)``
    (the member itself), as a float64 ``logsumexp`` computes it."""
    evosax_de = pytest.importorskip("evosax.algorithms.population_based.diffusion_evolution")
    from reference_table import allow, companion
    from scipy.special import logsumexp

    denoise = companion(DiffusionEvolution, "denoise")
    energy = companion(DiffusionEvolution, "energy")
    z = jnp.array([[3.0, 0.0], [3.05, 0.1], [-3.0, 0.0]])
    fitness = jnp.array([0.0, -1.0, -150.0])
    alpha, temperature = 0.999, 1.0
    with allow():
        theirs = evosax_de.estimate_x_0(
            z, z, evosax_de.fitness_mapping_energy(-fitness, temperature), jnp.asarray(alpha)
        )
    np.testing.assert_array_equal(theirs[2], [0.0, 0.0])
    _, ours = denoise(z, z, energy(fitness, temperature), jnp.asarray(alpha),
                      jnp.asarray(1.0), 0.0, jnp.zeros_like(z))  # fmt: skip
    z64 = np.asarray(z, np.float64)
    squared = np.sum((z64[:, None] - np.sqrt(alpha) * z64[None]) ** 2, axis=2)
    log_w = np.asarray(fitness, np.float64)[None] / temperature - squared / (2 * (1 - alpha))
    expected = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True)) @ z64
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[2], z[2], atol=1e-3)
    np.testing.assert_allclose(theirs[:2], expected[:2], rtol=1e-5, atol=1e-5)  # elsewhere: same
