"""CoDE against EvoX 1.4's ``CoDE`` (PyTorch, CPU): final precision on three BBOB functions at
d = 10 after 20 000 evaluations, median over 5 seeds (see ``tests/evox_reference.py``).

Both run ``NP = 30`` members (the paper's; evolax's ``pop_size = 90``, the three trials per
member evaluated each generation, as EvoX's step does) with the paper's pool, from the same
initial distribution. The factor is one-sided, 5: evolax may be no more than five times as far
from the optimum as EvoX. EvoX's variant is greedier than the paper's, which evolax follows
(checked draw by draw against a transcription of its pseudocode in ``test_composite_de.py``),
and converges faster at this budget on some functions (evolax is up to 3x behind, on f3;
at 50 000 evaluations evolax reaches 1e-11 on f3 and 2e-3 on f10, where EvoX stalls at 1.0
and 38); a broken update falls behind by orders of magnitude. EvoX departs from the paper in:

- binomial crossover compares ``torch.randn`` (normal, not uniform) draws with ``CR``: a
  coordinate comes from the mutant with probability ``Phi(CR)`` (0.54, 0.82, 0.58 for the
  pool's 0.1, 0.9, 0.2) instead of ``CR``;
- current-to-rand/1 is an "arithmetic recombination" with ``K = CR``:
  ``u = x_i + CR (x_r1 + F (x_r2 - x_r3) - x_i)``, so ``K`` is the setting's ``CR`` instead of
  ``U[0, 1]`` and the difference is weighted by ``CR F`` instead of ``F``;
- the ``r`` are drawn with replacement (``randint``, with ``i`` replaced by ``NP - 1``), so
  they are not distinct, member ``NP - 1`` is drawn twice as often and can pair with itself;
- the initial population is ``randn * (ub - lb) + lb`` (overwritten here by the helper) with
  fitness ``+inf``: it is never evaluated, and the first step's trials all replace it;
- trials are clamped into the box (the paper reflects them; evolax has no box);
- float32.

The per-strategy random setting, the best of three (the first on ties) and the ``<=``
selection are the paper's.

Measured (medians of 5, evolax vs EvoX): f3 3.06 vs 1.01, f10 79.5 vs 158, f20 1.27 vs 1.04.
"""

import pytest

from evolax.algorithms.de.composite_de import CoDE
from evox_reference import assert_not_worse, evolax_precisions, evox_precisions

pytestmark = pytest.mark.slow

MEMBERS, DIM, EVALUATIONS = 30, 10, 20_000
FUNCTIONS = (3, 10, 20)  # separable Rastrigin, rotated ellipsoid, Schwefel x sin(x)


@pytest.mark.parametrize("function_id", FUNCTIONS)
def test_code_not_worse_than_evox(function_id):
    from evox.algorithms import CoDE as EvoXCoDE

    ours = evolax_precisions(CoDE(pop_size=3 * MEMBERS), function_id, DIM, EVALUATIONS)
    theirs = evox_precisions(
        lambda **bounds: EvoXCoDE(pop_size=MEMBERS, **bounds),
        function_id,
        DIM,
        EVALUATIONS,
        pop_size=MEMBERS,
    )
    assert_not_worse(ours, theirs, factor=5.0)
