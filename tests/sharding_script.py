"""Run by test_sharding.py in a subprocess with 4 fake CPU devices; prints JSON results."""

import json
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax
import numpy as np

from evolax import MLP, PGPE, CartPoleSwingUp, Trainer
from evolax.sharding import POP_AXIS, population_mesh


def trainer(mesh):
    return Trainer(
        algorithm=PGPE(pop_size=16),
        policy=MLP(hidden_sizes=(16,)),
        task=CartPoleSwingUp(max_steps=60),
        n_repeats=3,
        normalize_obs=True,
        mesh=mesh,
    )


out = {"n_devices": len(jax.devices()), "history": {}, "obs_count": {}}
for n in (1, 2, 4):
    t = trainer(population_mesh(jax.devices()[:n]))
    state, history = jax.jit(t.run, static_argnums=1)(t.init(jax.random.key(0)), 3)
    out["history"][n] = np.asarray(history["fitness_mean"]).tolist()
    out["obs_count"][n] = float(state.obs_stats.count)

t = trainer(population_mesh())
population, _ = t.algorithm.ask(jax.random.key(1), t.init(jax.random.key(0)).algo_state)
fitness, info = jax.jit(t._evaluate)(population, jax.random.key(2), None)
out["fitness_spec"] = list(fitness.sharding.spec)
out["shard_shapes"] = [list(s.data.shape) for s in info.returns.addressable_shards]
out["mesh_axis"] = POP_AXIS
try:
    Trainer(
        algorithm=PGPE(pop_size=18), policy=MLP(), task=CartPoleSwingUp(), mesh=population_mesh()
    )
except ValueError as error:
    out["error"] = str(error)
print(json.dumps(out))
