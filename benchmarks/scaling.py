"""Generations per second against device count: the population split over 1, 2, 4, ... devices.

Trains the cart-pole preset (or `--pop-size`) with `Trainer(mesh=...)` over the first n devices
for n = 1, 2, 4, ... up to all of them, and reports generations/s and the speed-up over one
device. On a multi-GPU machine it shows the scaling; on CPU it requests `--cpu-devices`
host devices (default: one per core) and shows what splitting costs or gains there. Writes
`benchmarks/results/scaling.json` and `docs/results/scaling.md` (the table docs/scaling.md
includes).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from evolax.sharding import population_mesh, request_cpu_devices
from results_table import RESULTS, write_results


def table(rows: list[dict]) -> str:
    lines = ["| devices | generations / s | speed-up |", "|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['devices']} | {row['generations_per_s']:.2f} | {row['speedup']:.2f}x |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=20, help="timed generations")
    parser.add_argument("--pop-size", type=int, default=None, help="default: the preset's 64")
    parser.add_argument("--cpu-devices", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=RESULTS / "scaling.json")
    args = parser.parse_args()
    request_cpu_devices(args.cpu_devices)

    import jax

    from evolax.config import build_trainer, resolve
    from evolax.runner import initial_state

    sized = [f"algorithm.pop_size={args.pop_size}"] if args.pop_size else []
    config = resolve("cartpole_easy", sized)
    counts, n = [], 1
    while n <= len(jax.devices()):
        counts.append(n)
        n *= 2
    rows = []
    for n in counts:
        trainer = build_trainer(config, population_mesh(jax.devices()[:n]))
        state = initial_state(trainer, 0)
        run = jax.jit(trainer.run, static_argnums=1).lower(state, args.generations).compile()
        jax.block_until_ready(run(state))  # warm up
        start = time.perf_counter()
        jax.block_until_ready(run(state))
        seconds = time.perf_counter() - start
        rows.append({"devices": n, "generations_per_s": args.generations / seconds})
    for row in rows:
        row["speedup"] = row["generations_per_s"] / rows[0]["generations_per_s"]
    write_results(
        args.out,
        "scaling",
        rows,
        table,
        config={
            "task": config["task"]["name"],
            "pop_size": config["algorithm"]["pop_size"],
            "n_repeats": config["trainer"]["n_repeats"],
            "hidden_sizes": config["policy"]["hidden_sizes"],
        },
        backend=jax.default_backend(),
        device_kind=jax.devices()[0].device_kind,
    )
    print(f"{jax.default_backend()} ({jax.devices()[0].device_kind}), {os.cpu_count()} cores")
    print(table(rows))


if __name__ == "__main__":
    main()
