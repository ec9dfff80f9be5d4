"""Running observation statistics for observation normalisation."""

from __future__ import annotations

import chex
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float

CLIP = 5.0
MIN_VAR = 1e-12


@chex.dataclass(frozen=True)
class ObsStats:
    """Running mean and variance of observations (Chan et al.'s parallel algorithm).

    Attributes:
        count: number of observations seen, ``f32[]``.
        mean: ``f32[*obs_shape]``.
        m2: sum of squared deviations from the mean, ``f32[*obs_shape]``.
    """

    count: Float[Array, ""]
    mean: Float[Array, "..."]
    m2: Float[Array, "..."]

    @classmethod
    def zeros(cls, obs_shape: tuple[int, ...]) -> ObsStats:
        """Empty statistics (normalisation is the identity until the first update)."""
        return cls(count=jnp.zeros([]), mean=jnp.zeros(obs_shape), m2=jnp.zeros(obs_shape))

    def variance(self) -> Float[Array, "..."]:
        return jnp.where(self.count > 0, self.m2 / jnp.maximum(self.count, 1.0), 1.0)

    def normalize(self, obs: Float[Array, "..."]) -> Float[Array, "..."]:
        """``clip((obs - mean) / std, -5, 5)``."""
        std = jnp.sqrt(jnp.maximum(self.variance(), MIN_VAR))
        mean, std = (jnp.broadcast_to(a, obs.shape) for a in (self.mean, std))
        return jnp.clip((obs - mean) / std, -CLIP, CLIP)

    def pivot(self, first_obs: Float[Array, "..."]) -> Float[Array, "..."]:
        """The value to sum a new batch's deviations about: the mean, or ``first_obs`` if empty."""
        return jnp.where(self.count > 0, self.mean, first_obs)

    def merge(
        self,
        n: Float[Array, ""],
        shifted_sum: Float[Array, "..."],
        shifted_sq_sum: Float[Array, "..."],
        pivot: Float[Array, "..."],
    ) -> ObsStats:
        """Merge a batch of ``n`` observations given as sums of ``(obs - pivot)`` and its square.

        Sums taken about a pivot near the data (see :meth:`pivot`) keep float32 cancellation small.
        """
        safe_n = jnp.maximum(n, 1.0)
        batch_mean = pivot + shifted_sum / safe_n
        batch_m2 = shifted_sq_sum - shifted_sum * (shifted_sum / safe_n)
        delta = batch_mean - self.mean
        total = self.count + n
        safe_total = jnp.maximum(total, 1.0)
        mean = jnp.where(n > 0, self.mean + delta * (n / safe_total), self.mean)
        m2 = self.m2 + jnp.maximum(batch_m2, 0.0) + delta**2 * (self.count * n / safe_total)
        return ObsStats(count=total, mean=mean, m2=m2)


def shifted_sums(
    obs: Float[Array, "..."], mask: Bool[Array, "..."], pivot: Float[Array, "..."]
) -> tuple[Float[Array, ""], Float[Array, "..."], Float[Array, "..."]]:
    """``(n, sum(obs - pivot), sum((obs - pivot)^2))`` over the observations where ``mask``.

    ``obs`` has shape ``mask.shape + obs_shape`` and ``pivot`` has shape ``obs_shape``; the
    result feeds :meth:`ObsStats.merge`.
    """
    axes = tuple(range(mask.ndim))
    keep = jnp.broadcast_to(mask.reshape(mask.shape + (1,) * (obs.ndim - mask.ndim)), obs.shape)
    # `where`, not a product with the mask: an observation outside it may be inf or NaN (e.g.
    # a physics state after its episode ended), and 0 * NaN would poison the sums
    centred = jnp.where(keep, obs - jnp.broadcast_to(pivot, obs.shape), 0.0)
    count = jnp.sum(mask).astype(obs.dtype)
    return count, jnp.sum(centred, axis=axes), jnp.sum(centred * centred, axis=axes)
