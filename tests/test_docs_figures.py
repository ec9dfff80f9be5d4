"""The figures the docs show are the benchmark scripts' tables, included, never copied.

Each script in ``benchmarks/`` writes its table, with a caption naming the machine, the date and
the command, to ``docs/results/NAME.md`` (``benchmarks/results_table.py``); the pages include
it with ``--8<-- "docs/results/NAME.md"`` (``pymdownx.snippets``, whose ``check_paths`` fails
the site's build on a missing file), so a rerun of the script replaces the figures everywhere.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "docs" / "results"
INCLUDE = re.compile(r'^--8<-- "docs/results/([\w.]+\.md)"$', re.M)
DATE = r"\d{4}-\d\d-\d\d"
CAPTION = re.compile(  # the machine, the date(s), the command (its script: group 2)
    rf"^_Measured on (.+), {DATE}(?: to {DATE})?\. "
    r"Reproduce: `[^`]*?benchmarks/(\w+\.(?:py|sh))[^`]*`.*_$"
)


def includes() -> dict[str, list[str]]:
    """Each included table's name and the pages that include it."""
    found: dict[str, list[str]] = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        text = page.read_text()
        assert "<!-- benchmarks/results/" not in text, f"{page.name}: a copied table"
        for name in INCLUDE.findall(text):
            found.setdefault(name, []).append(page.name)
    return found


def test_every_table_is_included_on_one_page():
    found = includes()
    assert set(found) == {p.name for p in TABLES.glob("*.md")}, "no table left out or missing"
    assert all(len(pages) == 1 for pages in found.values()), "each figure once"


def test_each_table_names_its_machine_date_and_command():
    for table in sorted(TABLES.glob("*.md")):
        text = table.read_text()
        match = CAPTION.match(text.rstrip().splitlines()[-1])
        assert match, f"{table.name}: its last line names the machine, the date and the command"
        assert (ROOT / "benchmarks" / match.group(2)).is_file(), table.name
        assert "\n|---" in text, f"{table.name} holds a table"


def test_a_script_writes_the_format_the_pages_include(tmp_path):
    """A cheap script at tiny sizes writes its table with the caption the tables carry, into
    the folder ``EVOLAX_BENCHMARK_RESULTS`` names (never over the docs' tables)."""
    pytest.importorskip("pymoo")  # the script times pymoo's sorts beside evolax's
    before = {p: p.read_text() for p in TABLES.glob("*.md")}
    args = ["--pops", "50", "--objectives", "2", "--kinds", "uniform", "--rounds", "1"]
    subprocess.run(
        [sys.executable, "benchmarks/pareto_sort_speed.py", *args, "--evox-max-points", "0"],
        check=True,
        capture_output=True,
        cwd=ROOT,
        env={"EVOLAX_BENCHMARK_RESULTS": str(tmp_path), "PYTHONPATH": str(ROOT / "src"),
             "JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
    lines = (tmp_path / "pareto_sort_speed.md").read_text().splitlines()
    header = (TABLES / "pareto_sort_speed.md").read_text().splitlines()[0]
    assert lines[0] == header and lines[2].startswith("| 50 | 100 | 2 | uniform |")
    assert CAPTION.match(lines[-1]) and "--pops 50" in lines[-1]
    assert {p: p.read_text() for p in TABLES.glob("*.md")} == before


def test_the_readme_quotes_the_tables():
    """Every figure in the README's results table is in a table of docs/results, and the count
    of algorithms at least 1.5x evosax's speed is the table's."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Results\n")[1].split("\n## ")[0]
    tables = "".join(p.read_text() for p in TABLES.glob("*.md"))
    for number in re.findall(r"(?<![\w.])\d+\.\d+(?![\w.%])", section):
        assert number in tables, f"the README's {number} is in no table of docs/results"
    speedups = re.findall(r"\| ([\d.]+)x \|", (TABLES / "evosax_speed.md").read_text())
    fast = sum(float(s) >= 1.5 for s in speedups)
    assert f"{fast} of {len(speedups)} algorithms at least 1.5x faster" in section
