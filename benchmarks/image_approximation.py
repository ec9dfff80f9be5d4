"""Concrete painting (Tian & Ha, 2021): evaluation speed and the loss curve over a time budget.

The paper's and EvoJAX's ``AbstractPainting01`` setting: 50 triangles on a 200 x 200 canvas
(the target is matplotlib's Grace Hopper photograph unless ``--target`` names a file), PGPE
with ClipUp, population 256, EvoJAX's PGPE defaults (centre lr 0.15, ClipUp max speed 0.15
and momentum 0.9, initial std 0.1, std lr 0.1, std max change 0.2).

``--speed`` times ``evolax.rollout.evaluate_on`` of a population (one generation's rendering
and loss) for several ``pop_chunk`` values. The training part runs ``Trainer.run`` in compiled
chunks of ``--chunk`` generations until ``--budget`` seconds have passed and prints, after each
chunk, the generation, the seconds since the start (compilation included), and the loss of
the search distribution's centre (what ``PGPE.best`` returns) and the population's mean loss.
CPU seconds (``time.process_time``, all threads) are printed beside wall seconds because a
shared machine's wall time depends on its load. Run niced, e.g.

    nice -n 19 python benchmarks/image_approximation.py --speed --budget 300 --out curve.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=300.0, help="training seconds")
    parser.add_argument("--chunk", type=int, default=10, help="generations per compiled run")
    parser.add_argument("--pop-size", type=int, default=256)
    parser.add_argument("--n-triangles", type=int, default=50)
    parser.add_argument("--size", type=int, default=200, help="canvas height and width")
    parser.add_argument("--squash", default="minmax", choices=["minmax", "clip"])
    parser.add_argument("--center-lr", type=float, default=0.15)
    parser.add_argument("--max-speed", type=float, default=0.15)
    parser.add_argument("--init-std", type=float, default=0.1)
    parser.add_argument("--std-lr", type=float, default=0.1)
    parser.add_argument("--pop-chunk", type=int, default=16, help="0: the whole population")
    parser.add_argument("--target", default=None, help="an image file (default: Grace Hopper)")
    parser.add_argument("--log-every", type=float, default=10.0, help="seconds between rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--speed", action="store_true", help="time evaluate per pop_chunk")
    parser.add_argument("--out", default=None, help="write the results here as JSON")
    parser.add_argument("--picture", default=None, help="save the final painting (PNG)")
    args = parser.parse_args(argv)

    import equinox as eqx
    import jax
    import numpy as np

    from evolax.algorithms import PGPE
    from evolax.optim import clipup
    from evolax.policies.direct import Direct
    from evolax.rollout import evaluate_on
    from evolax.tasks.image_approximation import ImageApproximation
    from evolax.trainer import Trainer

    task = ImageApproximation(
        target=args.target,
        n_triangles=args.n_triangles,
        size=(args.size, args.size),
        squash=args.squash,
    )
    policy = Direct()
    pop_chunk = args.pop_chunk or None
    results: dict = {"args": vars(args), "devices": [str(d) for d in jax.devices()]}

    if args.speed:
        speed = {}
        population = jax.random.uniform(jax.random.key(1), (args.pop_size, *task.action_shape))
        for chunk in (None, 1, 4, 16):
            if chunk is not None and args.pop_size % chunk:
                continue
            fitness = eqx.filter_jit(
                lambda task, pop, key, chunk=chunk: evaluate_on(
                    policy, task, pop, key, pop_chunk=chunk
                )
            )
            jax.block_until_ready(fitness(task, population, jax.random.key(0)))
            walls, cpus = [], []
            for i in range(3):
                wall, cpu = time.perf_counter(), time.process_time()
                jax.block_until_ready(fitness(task, population + 1e-3 * i, jax.random.key(0)))
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
            speed[str(chunk)] = {"wall_s": min(walls), "cpu_s": min(cpus)}
            print(
                f"evaluate pop {args.pop_size}, pop_chunk={chunk}: {min(walls):.3f} s wall, "
                f"{min(cpus):.3f} s CPU",
                flush=True,
            )
        results["evaluate"] = speed

    algorithm = PGPE(
        pop_size=args.pop_size,
        optimizer=clipup(args.center_lr, momentum=0.9, max_speed=args.max_speed),
        init_std=args.init_std,
        std_lr=args.std_lr,
        std_max_change=0.2,
    )
    trainer = Trainer(algorithm, policy, task, n_repeats=1, pop_chunk=pop_chunk)
    run = eqx.filter_jit(lambda trainer, state: trainer.run(state, args.chunk))
    centre_loss = eqx.filter_jit(
        lambda task, params: -task.step(task.reset(jax.random.key(0)), params, None)[1]
    )

    start_wall, start_cpu = time.perf_counter(), time.process_time()
    state = trainer.init(jax.random.key(args.seed))
    curve = [
        {
            "generation": 0,
            "wall_s": 0.0,
            "cpu_s": 0.0,
            "loss": float(centre_loss(task, algorithm.best(state.algo_state))),
            "pop_mean_loss": None,
        }
    ]
    print(f"{'gen':>6} {'wall s':>8} {'cpu s':>8} {'loss':>8} {'pop mean':>9}", flush=True)
    chunk_times = []
    last_log = -float("inf")
    while time.perf_counter() - start_wall < args.budget:
        before_wall, before_cpu = time.perf_counter(), time.process_time()
        state, history = run(trainer, state)
        jax.block_until_ready(state)
        chunk_times.append((time.perf_counter() - before_wall, time.process_time() - before_cpu))
        done = time.perf_counter() - start_wall >= args.budget
        if not done and time.perf_counter() - last_log < args.log_every:
            continue
        last_log = time.perf_counter()
        loss = float(centre_loss(task, algorithm.best(state.algo_state)))
        row = {
            "generation": int(state.generation),
            "wall_s": time.perf_counter() - start_wall,
            "cpu_s": time.process_time() - start_cpu,
            "loss": loss,
            "pop_mean_loss": -float(np.asarray(history["fitness_mean"])[-1]),
        }
        curve.append(row)
        print(
            f"{row['generation']:6d} {row['wall_s']:8.1f} {row['cpu_s']:8.1f} "
            f"{row['loss']:8.4f} {row['pop_mean_loss']:9.4f}",
            flush=True,
        )
    steady = chunk_times[1:] or chunk_times  # the first chunk includes compilation
    per_gen = {
        "wall_s": float(np.median([w for w, _ in steady])) / args.chunk,
        "cpu_s": float(np.median([c for _, c in steady])) / args.chunk,
    }
    print(
        f"per generation (ask + evaluate + tell): {per_gen['wall_s']:.3f} s wall, "
        f"{per_gen['cpu_s']:.3f} s CPU",
        flush=True,
    )
    results["curve"] = curve
    results["per_generation"] = per_gen
    if args.picture:
        from PIL import Image

        final = task.step(task.reset(None), algorithm.best(state.algo_state), None)[0]
        Path(args.picture).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(task.render(final)).save(args.picture)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
