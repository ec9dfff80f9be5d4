"""SaDE against EvoX 1.4's ``SaDE`` (PyTorch, CPU): final precision on three BBOB functions at
d = 10 after 20 000 evaluations, median over 5 seeds (see ``tests/evox_reference.py``).

Both run ``NP = 50`` (the paper's) with ``LP = 50`` and the paper's other settings, from the
same initial distribution. The factor is one-sided, 2: evolax may be no more than twice as far
from the optimum as EvoX (it is ahead or level on all three). EvoX departs from the paper,
which evolax follows (checked draw by draw against a transcription of its pseudocode in
``test_sade.py``), in:

- binomial crossover compares ``torch.randn`` (normal, not uniform) draws with ``CR``: a
  coordinate comes from the mutant with probability ``Phi(CR)`` instead of ``CR``;
- rand-to-best/2 starts from a random member, ``x_r + F (x_best - x_r) + ...``, instead of
  ``x_i``;
- current-to-rand/1 is an "arithmetic recombination" with ``K = CR``:
  ``u = x_i + CR (x_r1 + F (x_r2 - x_r3) - x_i)`` (``K ~ U[0, 1]`` and ``F`` in the paper);
- the ``r`` are drawn with replacement (``randint``, with ``i`` replaced by ``NP - 1``): not
  distinct, member ``NP - 1`` drawn twice as often and able to pair with itself;
- strategies are drawn independently (``torch.multinomial``), not by stochastic universal
  sampling, and from a ``torch.Generator`` of its own that ``torch.manual_seed`` does not
  seed: every run sees the same strategy stream;
- a ``CR`` outside ``[0, 1]`` is redrawn once and kept even if still outside (the paper
  regenerates until inside);
- ``CRm_k`` is the median of the last ``LP`` successful ``CR`` of strategy ``k`` (a ring of
  ``LP`` values per strategy, not the successes of the last ``LP`` generations); the ring
  starts as NaN and ``torch.median`` propagates NaN, so until strategy ``k`` has ``LP``
  successes its ``CR`` is NaN and its trials take only ``j_rand`` from the mutant; an even
  count takes the lower middle value;
- ``CRm`` is learnt from generation ``LP + 1`` but ``p_k`` from generation ``LP`` (the paper:
  both after ``LP`` generations), and a strategy without trials in the period gives
  ``0 / 0`` (the authors' code: ``S_k = 0.01``);
- the initial population is ``randn * (ub - lb) + lb`` (overwritten here by the helper) with
  fitness ``+inf``: never evaluated, and every member of the first step counts as a success;
- trials are clamped into the box (evolax has no box); float32.

``F ~ N(0.5, 0.3)``, the success/failure memories over ``LP`` generations, eq. 14 with
``epsilon = 0.01`` and the ``<=`` selection are the paper's.

Measured (medians of 5, evolax vs EvoX): f8 1.17 vs 2.36, f15 25.6 vs 30.8, f20 0.603 vs 0.592.
"""

import pytest

from evolax.algorithms.de.sade import SaDE
from evox_reference import assert_not_worse, evolax_precisions, evox_precisions

pytestmark = pytest.mark.slow

POP, DIM, EVALUATIONS = 50, 10, 20_000
FUNCTIONS = (8, 15, 20)  # Rosenbrock, rotated Rastrigin, Schwefel x sin(x)


@pytest.mark.parametrize("function_id", FUNCTIONS)
def test_sade_not_worse_than_evox(function_id):
    from evox.algorithms import SaDE as EvoXSaDE

    ours = evolax_precisions(SaDE(pop_size=POP), function_id, DIM, EVALUATIONS)
    theirs = evox_precisions(
        lambda **bounds: EvoXSaDE(pop_size=POP, **bounds),
        function_id,
        DIM,
        EVALUATIONS,
        pop_size=POP,
    )
    assert_not_worse(ours, theirs, factor=2.0)
