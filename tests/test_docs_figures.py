"""The tables the docs quote are the benchmark scripts' latest tables, verbatim.

A quoted table sits between ``<!-- benchmarks/results/NAME.md -->`` and ``<!-- end -->`` in a
Markdown page; the script that writes ``benchmarks/results/NAME.md`` is named in the page's
text. Run it, then ``nox -s slow``: a table that changed must be quoted again. Results are
not committed (they are outputs), so a table not yet produced on this machine is skipped, by
name.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUOTE = re.compile(r"<!-- (benchmarks/results/[\w.]+\.md) -->\n(.*?)\n<!-- end -->", re.DOTALL)


def quotes():
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for match in QUOTE.finditer(page.read_text()):
            found.append((page.relative_to(ROOT), match.group(1), match.group(2)))
    return found


def test_the_docs_quote_benchmark_tables():
    quoted = {Path(source).name for _, source, _ in quotes()}
    tables = {
        "cartpole_seeds.md",
        "cartpole_per_algorithm.md",
        "image_approximation_seeds.md",
        "cartpole_speed.md",
        "mnist_speed.md",
        "default_layout.md",
        "overhead.md",
        "seq2seq.md",
        "brax_throughput.md",
        "cma_vs_pycma.md",
        "evosax_speed.md",
        "open_es_parts.md",
        "scaling.md",
        "waterworld_curve.md",
        "bbob.md",
        "mnist_curve.md",
        "learned_es.md",
        "waterworld_ma_curve.md",
        "host_throughput.md",
        "halfcheetah_ars.md",
        "playground_dmc.md",
        "neat_double_pole.md",
        "neat_double_pole_nv.md",
        "hyperneat_visual_discrimination.md",
        "fidelity_speed.md",
        "fidelity_bbob.md",
        "fidelity_cma32.md",
        "fidelity_restarts.md",
        "fidelity_mo.md",
    }
    assert tables <= quoted, f"not quoted: {sorted(tables - quoted)}"


@pytest.mark.slow
@pytest.mark.parametrize(("page", "source", "quoted"), quotes(), ids=lambda x: str(x)[:40])
def test_a_quoted_table_is_the_latest(page, source, quoted):
    table = ROOT / source
    if not table.exists():
        pytest.skip(f"{source} not produced on this machine yet (run its benchmark script)")
    assert quoted.strip() == table.read_text().strip(), f"{page} quotes an old {source}"
