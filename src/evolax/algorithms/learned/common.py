"""The parts the learned algorithms (:mod:`~evolax.algorithms.learned.les`,
:mod:`~evolax.algorithms.learned.lga`) share: their meta-trained weights, the members' fitness
features and the small network layers.

The network parameters are flat ``{name: array}`` dicts (``"recombination.key.kernel"``, ...),
stored as ``weights/<name>.npz`` beside this module (written by
``benchmarks/meta_train_learned.py``). The layers follow Lange et al. (2023a, 2023b) as
evosax 0.3.2 writes them (``evosax.learned_evolution``): a dense layer is ``x @ kernel +
bias``, a multi-head attention layer projects to ``[length, heads, head_dim]`` queries, keys
and values, scales the logits by ``sqrt(head_dim)`` and mixes the heads with a dense layer.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from evolax.algorithms.base import HIGHEST
from evolax.algorithms.shaping import finite_fitness
from evolax.validation import check_positive

WEIGHTS_DIR = Path(__file__).parent / "weights"
"""Where the shipped meta-trained weights live (``les.npz``, ``lga.npz``)."""

Weights = dict[str, Float[Array, "..."]]
"""A learned algorithm's network parameters: ``{name: array}``."""


def _read(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path) as data:
        return {name: np.array(data[name], np.float32) for name in data.files}


@functools.cache
def _shipped(path: str) -> dict[str, np.ndarray]:
    arrays = _read(path)
    for array in arrays.values():
        array.flags.writeable = False  # shared by every instance built with the defaults
    return arrays


def load_weights(name: str) -> dict[str, np.ndarray]:
    """The shipped meta-trained weights ``weights/<name>.npz`` as float32 arrays."""
    path = WEIGHTS_DIR / f"{name}.npz"
    if not path.is_file():
        raise FileNotFoundError(
            f"the meta-trained {name.upper()} weights {path} are missing from this evolax "
            f"installation; reinstall evolax, or pass params= (a dict of arrays or an .npz "
            f"path; benchmarks/meta_train_learned.py writes one)"
        )
    return dict(_shipped(str(path)))


def resolve_weights(
    algorithm: str, params: Mapping[str, Any] | str | Path | None, shapes: Mapping[str, tuple]
) -> dict[str, Any]:
    """``params`` as a checked ``{name: array}`` dict: ``None`` loads the shipped weights of
    ``algorithm``, a path loads that ``.npz``; raise a one-line ``ValueError`` unless the names
    and shapes are ``shapes``'."""
    if params is None:
        params = load_weights(algorithm)
    elif isinstance(params, str | Path):
        if not Path(params).is_file():
            raise ValueError(f"params: no weights file {str(params)!r}")
        params = _read(params)
    if not isinstance(params, Mapping):
        raise ValueError(
            f"params must be a dict of arrays, an .npz path or None, got {type(params).__name__}"
        )
    missing = sorted(set(shapes) - set(params))
    unknown = sorted(set(params) - set(shapes))
    if missing or unknown:
        raise ValueError(
            f"params must hold the {algorithm.upper()} network's {len(shapes)} arrays; "
            f"missing {missing}, unknown {unknown}"
        )
    for name, shape in shapes.items():
        if tuple(jnp.shape(params[name])) != tuple(shape):
            raise ValueError(
                f"params[{name!r}] must have shape {tuple(shape)}, got {jnp.shape(params[name])}"
            )
    return {name: params[name] for name in shapes}  # a fixed key order


def weights_hash(params: Mapping[str, Any]) -> int:
    """A hash of concrete weights' names and values, so that an algorithm holding them is
    hashable (``jax.jit(algorithm.tell)``, a trainer as a static argument)."""
    return hash(tuple((k, np.shape(v), np.asarray(v).tobytes()) for k, v in params.items()))


def in_dtype(params: Mapping[str, Any], dtype) -> Weights:
    """The parameters as arrays of the genome's ``dtype``."""
    return {name: jnp.asarray(value, dtype) for name, value in params.items()}


def fitness_features(
    fitness: Float[Array, " n"], best_fitness: Float[Array, ""]
) -> Float[Array, "n 3"]:
    """Each member's ``[improved, centred rank, z-score]``, in the minimisation convention the
    papers (and evosax) feed their networks: the best member has centred rank ``-0.5`` and the
    lowest z-score; ``improved`` is 1 where the fitness beats ``best_fitness`` (the best so
    far). Non-finite fitness (``-inf``) ranks worst and is z-scored as the worst finite one."""
    finite = finite_fitness(fitness)
    improved = (fitness > best_fitness).astype(finite.dtype)
    n = fitness.shape[0]
    order = jnp.argsort(-fitness, stable=True)  # best first, ties by position (as evosax)
    rank = jnp.zeros(n, finite.dtype).at[order].set(jnp.arange(n, dtype=finite.dtype))
    rank = rank / max(n - 1, 1) - 0.5
    centred = finite - jnp.mean(finite)
    z = -centred / (jnp.sqrt(jnp.mean(centred**2)) + 1e-10)
    return jnp.stack([improved, rank, z], axis=1)


def dense(params: Weights, name: str, x: Float[Array, "... n_in"]) -> Float[Array, "... n_out"]:
    """``x @ params[name.kernel] + params[name.bias]``."""
    out = jnp.dot(x, params[f"{name}.kernel"], precision=HIGHEST)
    return out + jnp.expand_dims(params[f"{name}.bias"], range(out.ndim - 1))


def attention(
    params: Weights,
    name: str,
    queries_from: Float[Array, "q n_in"],
    keys_from: Float[Array, "k n_in"],
) -> Float[Array, "q features"]:
    """Multi-head dot-product attention of ``queries_from`` over ``keys_from`` (self-attention
    when they are the same): ``name.query/key/value`` project to ``[length, heads, head_dim]``
    (kernels ``[n_in, heads, head_dim]``), each head's weights are ``softmax(q k^T /
    sqrt(head_dim))`` and ``name.out`` (kernel ``[heads, head_dim, features]``) mixes the heads."""

    def project(part, x):
        kernel, bias = params[f"{name}.{part}.kernel"], params[f"{name}.{part}.bias"]
        return jnp.einsum("li,ihd->lhd", x, kernel, precision=HIGHEST) + bias[None]

    q, k, v = project("query", queries_from), project("key", keys_from), project("value", keys_from)
    logits = jnp.einsum("qhd,khd->hqk", q, k, precision=HIGHEST) / jnp.sqrt(q.shape[-1])
    mixed = jnp.einsum("hqk,khd->qhd", jax.nn.softmax(logits, axis=-1), v, precision=HIGHEST)
    out_kernel, out_bias = params[f"{name}.out.kernel"], params[f"{name}.out.bias"]
    return jnp.einsum("qhd,hdf->qf", mixed, out_kernel, precision=HIGHEST) + out_bias[None]


def attention_shapes(name: str, n_in: int, heads: int, features: int) -> dict[str, tuple]:
    """The parameter shapes of :func:`attention` ``name``."""
    head_dim = features // heads
    shapes: dict[str, tuple] = {}
    for part in ("query", "key", "value"):
        shapes[f"{name}.{part}.kernel"] = (n_in, heads, head_dim)
        shapes[f"{name}.{part}.bias"] = (heads, head_dim)
    shapes[f"{name}.out.kernel"] = (heads, head_dim, features)
    shapes[f"{name}.out.bias"] = (features,)
    return shapes


def dense_shapes(name: str, n_in: int, n_out: int) -> dict[str, tuple]:
    """The parameter shapes of :func:`dense` ``name``."""
    return {f"{name}.kernel": (n_in, n_out), f"{name}.bias": (n_out,)}


def initial_weights(key: jax.Array, shapes: Mapping[str, tuple]) -> dict[str, np.ndarray]:
    """Random weights to start meta-training from: kernels ``N(0, 1 / fan_in)`` (LeCun normal,
    flax's default; ``fan_in`` counts the input axis only), biases 0."""
    weights = {}
    for k, (name, shape) in zip(jax.random.split(key, len(shapes)), shapes.items(), strict=True):
        if name.endswith(".kernel"):
            # [n_in, ...], or an attention's out kernel [heads, head_dim, features]
            fan_in = shape[0] * shape[1] if name.endswith(".out.kernel") else shape[0]
            weights[name] = np.asarray(jax.random.normal(k, shape) / np.sqrt(fan_in), np.float32)
        else:
            weights[name] = np.zeros(shape, np.float32)
    return weights


class Learned(eqx.Module):
    """The fields LES and LGA share: ``pop_size``, ``init_std`` and the network ``params``
    (checked against the subclass's ``SHAPES``; ``None`` loads its shipped ``NAME.npz``).
    Mixed in before the algorithm's base class; hashed by the weights' values, so that an
    algorithm holding them is a valid static argument."""

    NAME: ClassVar[str]
    SHAPES: ClassVar[dict[str, tuple]]

    pop_size: int = eqx.field(static=True)
    init_std: float
    params: dict[str, Any]

    def __init__(
        self,
        pop_size: int,
        init_std: float = 1.0,
        params: Mapping[str, Float[Array, "..."]] | str | Path | None = None,
    ):
        self.pop_size = pop_size
        self.init_std = init_std
        self.params = resolve_weights(self.NAME, params, self.SHAPES)

    def __hash__(self):  # equinox hashes fields; the weights are arrays, hashed by value
        return hash((type(self), self.pop_size, self.init_std, weights_hash(self.params)))

    def __check_init__(self):
        check_positive("init_std", self.init_std)
