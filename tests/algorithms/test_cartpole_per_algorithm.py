"""Every registered algorithm trains cart-pole swing-up (easy) to a test score >= 900 within
the budget written below, or its test says why it cannot (slow: `nox -s slow`).

Each runs through the CLI's registry (`evolax train --algo NAME ...` builds the same trainer)
with a population of 64 and 4 episodes per individual (EvoJAX's configuration uses 16). It is
tested every 50 generations on 100 held-out episodes, and training stops at the first test
>= 900. Full-covariance methods (CMA-ES, xNES) get a small MLP, because their covariance is
``D x D`` and MLP [64, 64] has D = 4,545.
"""

import jax
import numpy as np
import pytest

from evolax.algorithms import REGISTRY
from evolax.config import build_trainer, resolve

TARGET, CHUNK = 900.0, 50

# name: (configuration overrides, generation budget); in the comments, the first test >= 900
# (seed 42, measured again at 0.2.0)
STD_01, STD_05, MLP_16 = (
    "algorithm.init_std=0.1",
    "algorithm.init_std=0.5",
    "policy.hidden_sizes=[16]",
)
ADAM_003 = "algorithm.optimizer={name: adam, learning_rate: 0.03}"
# an episode is a whole unroll, and ranks are unbiased within one
WHOLE_EPISODES = [
    "algorithm.truncation_length=1",
    "algorithm.total_length=1",
    "algorithm.fitness_shaping=centered_rank",
]
SETTINGS = {
    "pgpe": ([], 1000),  # EvoJAX's published configuration; 908.8 at 400
    "open_es": (
        [ADAM_003, STD_01],
        1000,
    ),  # 907.4 at 550
    # ARS-t: with all 32 directions (V1, and V2 with normalize_obs) it stalls near 690
    "low_rank_es": ([ADAM_003, STD_01], 1000),
    "ars": (
        [
            "algorithm.top_directions=8",
            "algorithm.optimizer={name: sgd, learning_rate: 0.02}",
            "algorithm.init_std=0.05",
        ],
        1000,
    ),  # 911.8 at 600
    "snes": ([STD_01], 1000),  # 906.5 at 550
    "xnes": (["policy.hidden_sizes=[8]", STD_05], 1000),  # 912.5 at 250
    "cma_es": ([MLP_16, STD_05], 1000),  # 906.4 at 300
    "sep_cma_es": ([STD_01], 1000),  # 916.5 at 550
    "lm_ma_es": ([STD_01], 1000),  # 910.8 at 600
    "cr_fm_nes": ([STD_01], 1000),  # 917.6 at 500
    "simple_ga": (["algorithm.mutation_std=0.05", "algorithm.init_std=0.05"], 1000),  # 913.7 at 650
    "de": ([MLP_16, STD_05], 1000),  # 903.9 at 600
    "pso": ([MLP_16, STD_05], 1000),
    "map_elites": (
        ["algorithm.mutation_std=0.05", "algorithm.init_std=0.05", "algorithm.grid_shape=[8, 8]"],
        1000,
    ),
    "simple_es": ([STD_01], 1000),  # 917.7 at 800
    "ma_es": ([MLP_16, STD_01], 1000),  # 914.4 at 600
    "rm_es": ([STD_01], 1000),
    "random_search": ([STD_01], 1000),
    "hill_climbing": (["algorithm.init_std=0.05"], 1000),
    "simulated_annealing": (["algorithm.init_std=0.05"], 1000),
    "gradientless_descent": (["algorithm.init_std=0.5", "algorithm.min_radius=0.005"], 1000),
    "mr15_ga": (["algorithm.init_std=0.05"], 1000),
    "samr_ga": (["algorithm.init_std=0.05", "algorithm.mutation_std_high=1.0"], 1000),
    "gesmr_ga": (["algorithm.init_std=0.05", "algorithm.mutation_std_high=1.0"], 1000),
    "esmc": ([ADAM_003, STD_01], 1000),
    "asebo": ([ADAM_003, STD_01], 1000),  # 910.3 at 650
    "iamalgam_full": ([MLP_16, STD_05], 1000),  # 903.7 at 200
    "iamalgam_univariate": ([STD_01], 1000),
    "sv_cma_es": ([MLP_16, STD_05], 1000),  # 900.5 at 400
    "sv_open_es": ([ADAM_003, STD_01], 1000),  # 910.4 at 600
    "diffusion_evolution": (["algorithm.init_std=0.1", "algorithm.n_generations=1000"], 1000),
    "jade": ([MLP_16, STD_05], 1000),
    "shade": ([MLP_16, STD_05], 1000),
    # one unroll per episode makes PES and NRES the same estimator: 904.9 at 350 for both
    "persistent_es": ([ADAM_003, STD_01, *WHOLE_EPISODES], 1000),
    "noise_reuse_es": ([ADAM_003, STD_01, *WHOLE_EPISODES], 1000),
    "clpso": ([MLP_16, STD_05], 1000),
    "cso": ([MLP_16, STD_05], 1000),  # 64 of its 128 particles move: 900.2 at 450
    "sl_pso": ([MLP_16, STD_05], 1000),  # 908.7 at 200
    "les": ([MLP_16, STD_05], 1000),  # 912.8 at 200
    "lga": (["algorithm.init_std=0.03"], 1000),
    "code": ([MLP_16, STD_05, "algorithm.pop_size=66"], 1000),  # 3 trials for 22 members
    "sade": ([MLP_16, STD_05], 1000),
    "cvt_map_elites": (
        ["algorithm.mutation_std=0.05", "algorithm.init_std=0.05", "algorithm.n_cells=64"],
        1000,
    ),
    "cma_mae": ([MLP_16, STD_05, "algorithm.grid_shape=[8, 8]", "algorithm.n_emitters=4"], 1000),
    "neat": (
        [
            "algorithm.pop_size=150",
            "policy.name=neat",
            "policy.max_nodes=16",
            "policy.max_conns=64",
            "policy.activation_options=[tanh]",
        ],
        1000,
    ),
}
"""Per algorithm: the overrides of the cartpole_easy preset (after ``algorithm.name``, pop 64
and 4 repeats) and the generation budget."""

# Measured shortfalls (seed 42, these settings; the variants in parentheses at 0.1.0; the
# algorithms added at 0.2.0 measured once, with the settings above).
CANNOT = {
    "esmc": "best test 713.5 at generation 650 (OpenES, with the same optimizer and std, "
    "passes 900 at 550)",
    "rm_es": "levels off at the balancing plateau: best test 598.5 at generation 400",
    "random_search": "samples never move from x0's box: best test 378.4",
    "hill_climbing": "an elitist current point kept on one noisy evaluation: best test 617.7 "
    "at generation 500",
    "simulated_annealing": "best test 626.7 at generation 650 (the current point is kept "
    "on one noisy evaluation)",
    "gradientless_descent": "an elitist current point kept on one noisy evaluation locks in "
    "early: best test 11.3",
    "mr15_ga": "plus-selection keeps members on one noisy evaluation: best test 644.8 at "
    "generation 650",
    "samr_ga": "best test 640.4 at generation 500 (stds log-spaced up to 1)",
    "gesmr_ga": "best test 586.0 at generation 350 (stds log-spaced up to 1)",
    "pso": "the swarm stalls: best test 832 at generation 750 (constriction, global best; 698 "
    "with a ring, 440 with inertia 0.6 and a velocity clamp of 0.1)",
    "jade": "best test 771.9 at generation 900 (DE with the same MLP and std passes at 600)",
    "shade": "best test 748.7 at generation 950 (DE with the same MLP and std passes at 600)",
    "iamalgam_univariate": "best test 811.0 at generation 700 (the full-covariance variant, "
    "with MLP [16], passes at 200)",
    "diffusion_evolution": "best test 434.8 at generation 600 (init_std 0.1, a 1000-step schedule)",
    "clpso": "levels off at the balancing plateau: best test 695.6 at generation 700",
    "code": "levels off at the balancing plateau: best test 694.6 at generation 650",
    "sade": "levels off at the balancing plateau: best test 694.5 at generation 800",
    "lga": "parents keep their first, noisy evaluation (plus-selection): best test 758.6 at "
    "generation 50, then no progress (626.4 with init_std 0.1, 573.9 with MLP [16] and 0.5)",
    "cvt_map_elites": "as MAP-Elites, selection is spread over the cells and elites are kept on "
    "one noisy evaluation: best test 700.8 at generation 750 (64 cells)",
    "cma_mae": "elites are kept on one noisy evaluation, and the emitters chase improvements "
    "over the cells' thresholds rather than the return: best test 867.1 (863.8 at generation "
    "1000; MLP [16], 8 x 8 grid, 4 emitters)",
    "neat": "best test 830.1 at generation 500 (population 150, neat-python's XOR settings "
    "otherwise, tanh nodes; with normalized observations 847.8 by 950, and with them: "
    "population 1,000 762.3 by 200 (unnormalized), population 300 with sin/gauss/relu/abs "
    "nodes 649.7 by 300, 16 episodes 654.5 by 300, weight steps of 0.1 668.9 by 1,000, one "
    "structural mutation at most 788.1 by 1,500, fewer deletions 668.1 by 1,050)",
    "map_elites": "selection is spread over the archive's cells and elites are kept on one "
    "noisy evaluation: best elite's test 712 (grid 8x8; 707 with 32x32, 682 with MLP [16])",
}


# not trained on cart-pole here, with the reason; each is trained by its own module's tests
ELSEWHERE = {
    "mt_map_elites": "evaluates each member on its own task of a task set (MultiTaskArm)",
    "mome": "keeps a Pareto front per cell: a multi-objective task (tests/algorithms/test_mome.py)",
    "dns": "the arm's descriptors and QDax's rules (tests/algorithms/test_dns.py)",
}


def test_every_registered_algorithm_has_a_setting():
    assert set(SETTINGS) | set(ELSEWHERE) == set(REGISTRY) and not set(SETTINGS) & set(ELSEWHERE)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=CANNOT[name], strict=True))
        if name in CANNOT
        else name
        for name in sorted(SETTINGS)
    ],
)
def test_trains_cartpole_easy_to_900(name):
    overrides, budget = SETTINGS[name]
    base = [f"algorithm.name={name}", "algorithm.pop_size=64", "trainer.n_repeats=4"]
    config = resolve("cartpole_easy", base + overrides)
    trainer = build_trainer(config)
    run = jax.jit(trainer.run, static_argnums=1)
    test = jax.jit(trainer.test, static_argnums=2)
    state = trainer.init(jax.random.key(config["run"]["seed"]))
    scores = []
    for generation in range(CHUNK, budget + 1, CHUNK):
        state, _ = run(state, CHUNK)
        scores.append(float(np.mean(test(state, jax.random.key(10_000 + generation), 100))))
        print(f"{name}: generation {generation}, test {scores[-1]:.1f}", flush=True)
        if scores[-1] >= TARGET:
            return
    pytest.fail(f"{name} reached {max(scores):.1f} < {TARGET} in {budget} generations")
