"""COCO-style benchmarking: algorithms on the 24 BBOB functions, scored by COCO's measures.

Hansen, Auger, Ros, Mersmann, Tušar & Brockhoff (2021), "COCO: a platform for comparing
continuous optimizers in a black-box setting", Optimization Methods and Software.

- :func:`bbob_runs`: every run of one algorithm (functions x instances x seeds) as one
  compiled, vmapped program, recording the best precision ``f - f_opt`` after each generation.
- :mod:`evolax.coco.measures`: the evaluations to reach each target, the expected running
  time (ERT) and the empirical cumulative distribution (ECDF) of targets reached.
- :func:`write_report`: the tables (JSON and Markdown) and the ECDF plot of several algorithms.
"""

from evolax.coco.measures import TARGETS, ecdf, expected_running_time, hitting_evaluations
from evolax.coco.report import report_tables, write_report
from evolax.coco.run import BBOBRuns, bbob_runs

__all__ = [
    "TARGETS",
    "BBOBRuns",
    "bbob_runs",
    "ecdf",
    "expected_running_time",
    "hitting_evaluations",
    "report_tables",
    "write_report",
]
