"""CLPSO against EvoX 1.4's ``CLPSO`` (PyTorch, CPU): final precision on three BBOB functions at
d = 10 after 20 000 evaluations, median over 5 seeds (see ``tests/evox_reference.py``).

Both run the paper's 10-D swarm of ``ps = 10`` from the same initial distribution; evolax with
its defaults (the paper's) and ``w`` falling over the run's 2 000 generations, EvoX with the
paper's ``c = 1.49445`` and its own ``w = 0.5``, ``P_c = 0.05`` (it has no schedules for
them). The factor is one-sided, 2: evolax may be no more than twice as far from the optimum as
EvoX. EvoX's version departs from the paper, which evolax follows (checked draw by draw
against a transcription of its pseudocode in ``test_clpso.py``):

- one learning decision per particle: all its dimensions learn from the same exemplar or all
  from its own personal best (the paper decides per dimension, and makes at least one
  dimension learn from another particle);
- one learning probability ``P_c`` for every particle, not eq. 3's 0.05 to 0.5;
- the exemplar is drawn anew every generation (no refreshing gap ``m = 7``), by a tournament
  between two particles drawn from the whole swarm, the learner included (the paper excludes
  it), on the personal bests' fitness before this generation's update;
- a constant inertia weight (the paper: 0.9 falling linearly to 0.4);
- random initial velocities in ``+-(ub - lb)``; the velocity is clipped to the position bounds
  ``[lb, ub]`` (the paper: ``+-0.2 (ub - lb)``), but the particle moves by the unclipped one,
  then is clipped into the box (the paper leaves it outside and does not evaluate it);
- float32.

The shared harness overwrites EvoX's ``pop`` with the common initial swarm, but EvoX's
``personal_best_location`` keeps its own uniform initial swarm; :func:`evox_clpso` sets it to
the new swarm in ``init_step``.

Measured (medians of 5, evolax vs EvoX): f8 2.1 vs 7.1, f15 19.1 vs 37.0, f20 0.36 vs 0.77.
"""

import pytest

from evolax.algorithms.pso.clpso import CLPSO
from evox_reference import assert_not_worse, evolax_precisions, evox_precisions

pytestmark = pytest.mark.slow

POP, DIM, EVALUATIONS = 10, 10, 20_000
FUNCTIONS = (8, 15, 20)  # Rosenbrock, rotated Rastrigin, Schwefel x sin(x)


def evox_clpso(**bounds):
    """EvoX's CLPSO whose personal bests start at the swarm it is given."""
    from evox.algorithms import CLPSO as EvoXCLPSO

    class Started(EvoXCLPSO):
        def init_step(self):
            self.personal_best_location = self.pop.clone()
            super().init_step()

    return Started(pop_size=POP, const_coefficient=1.49445, **bounds)


@pytest.mark.parametrize("function_id", FUNCTIONS)
def test_clpso_not_worse_than_evox(function_id):
    algorithm = CLPSO(pop_size=POP, generations=EVALUATIONS // POP)
    ours = evolax_precisions(algorithm, function_id, DIM, EVALUATIONS)
    theirs = evox_precisions(evox_clpso, function_id, DIM, EVALUATIONS, pop_size=POP)
    assert_not_worse(ours, theirs, factor=2.0)
