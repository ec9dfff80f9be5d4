"""Seconds per generation on MNIST: evolax vs EvoJAX 0.2.17, side by side in one run.

Both train EvoJAX's MNIST benchmark configuration (PGPE pop 64, adam centre lr 0.006, std lr
0.089, init std 0.039, batches of 1024, the 11,274-parameter ConvNet) on the same data: the
IDX files in `$EVOLAX_DATA_DIR/mnist` (or `--data-dir`), read by evolax's loader. EvoJAX's
task reads MNIST through `torchvision.datasets.MNIST`; its worker gets a stand-in module that
serves those same arrays (so torch need not be installed). A generation is ask + evaluate +
tell; compilation is excluded (one warm-up generation each). evolax runs as a library user
composes it: `evolax.use_cpu_cores()`, then the preset's `Trainer` with default settings
placed with `evolax.place`, which times its evaluation layouts (devices, group size) once. Run with
`nox -s bench -- mnist`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import types
from importlib.metadata import version
from pathlib import Path

from results_table import RESULTS
from side_by_side import (
    baseline,
    evojax_timer,
    evolax_timer,
    report,
    serve,
    time_workers,
    xla_defaults,
)

POP, CENTER_LR, STD_LR, INIT_STD, BATCH = 64, 0.006, 0.089, 0.039, 1024


def evolax_runner(seed: int, data_dir: str | None):
    import jax

    from evolax.config import build_trainer, resolve

    config = resolve("mnist", [f"task.data.data_dir={data_dir}"] if data_dir else [])
    algorithm = config["algorithm"]
    assert (algorithm["pop_size"], config["task"]["batch_size"]) == (POP, BATCH)
    lr = algorithm["optimizer"]["learning_rate"]
    assert (lr, algorithm["std_lr"], algorithm["init_std"]) == (CENTER_LR, STD_LR, INIT_STD)
    trainer = build_trainer(config)
    return evolax_timer(trainer, trainer.init(jax.random.key(seed)))


def _torchvision_stand_in(data_dir: str | None) -> None:
    """A ``torchvision.datasets.MNIST`` serving evolax's arrays (EvoJAX reads ``.data`` and
    ``.targets`` through ``.numpy()``)."""
    from evolax.data import load_mnist

    data = load_mnist(data_dir)

    class Tensor:
        def __init__(self, array):
            self._array = array

        def numpy(self):
            return self._array

    class MNIST:
        def __init__(self, root, train=True, download=False):
            del root, download
            self.data = Tensor(data.train_images if train else data.test_images)
            self.targets = Tensor(data.train_labels if train else data.test_labels)

    module = types.ModuleType("torchvision")
    module.datasets = types.SimpleNamespace(MNIST=MNIST)
    sys.modules["torchvision"] = module


def evojax_runner(seed: int, data_dir: str | None):

    _torchvision_stand_in(data_dir)
    from evojax.algo import PGPE
    from evojax.policy.convnet import ConvNetPolicy
    from evojax.sim_mgr import SimManager
    from evojax.task.mnist import MNIST

    logger = logging.getLogger("evojax-bench")
    logger.setLevel(logging.WARNING)
    policy = ConvNetPolicy(logger=logger)
    solver = PGPE(
        pop_size=POP,
        param_size=policy.num_params,
        optimizer="adam",
        center_learning_rate=CENTER_LR,
        stdev_learning_rate=STD_LR,
        init_stdev=INIT_STD,
        seed=seed,
        logger=logger,
    )
    sim = SimManager(
        n_repeats=1,
        test_n_repeats=1,
        pop_size=POP,
        n_evaluations=1,
        policy_net=policy,
        train_vec_task=MNIST(batch_size=BATCH, test=False),
        valid_vec_task=MNIST(batch_size=BATCH, test=True),
        seed=seed,
        logger=logger,
    )
    return evojax_timer(sim, solver)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=2, help="generations per round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating timing rounds")
    parser.add_argument("--data-dir", help="folder with the MNIST IDX files")
    parser.add_argument(
        "--baseline", type=Path, help="another evolax checkout, timed as one more worker"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "mnist_speed.json")
    parser.add_argument("--worker", choices=["evolax", "evojax"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    data_args = ["--data-dir", args.data_dir] if args.data_dir else []
    if args.worker == "evolax":
        import evolax

        evolax.use_cpu_cores()
        return serve(evolax_runner(0, args.data_dir))
    if args.worker == "evojax":
        xla_defaults()  # EvoJAX as its users run it
        return serve(evojax_runner(0, args.data_dir))

    # evolax's worker has one CPU device per core and lays the evaluation out itself; EvoJAX's
    # runs on its default (one device).
    names = {"evolax": "evolax (library defaults)", "evojax": "evojax 0.2.17"}
    workers = {label: ["--worker", key, *data_args] for key, label in names.items()}
    labels = {  # the table's
        names["evolax"]: "evolax, library defaults",
        names["evojax"]: f"EvoJAX {version('evojax')} (its default, one device)",
    }
    times = time_workers(
        __file__, workers, args.generations, args.rounds, elsewhere=baseline(args, workers, labels)
    )
    config = {"pop_size": POP, "batch_size": BATCH, "parameters": 11274}
    report(args.out, "mnist_pgpe_convnet", config, times, args.generations, labels)


if __name__ == "__main__":
    main()
