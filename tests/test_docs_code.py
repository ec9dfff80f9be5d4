"""Every code block of the docs runs: each page's ```python (and ```py) blocks, in order, in
one namespace per page, in a temporary working folder; every ``evolax`` command of its ```bash
blocks parses with the command's own parser.

The pages whose blocks a test of their own runs and checks (``DEDICATED``) are not run twice.
An HTML comment right above a block adjusts it for the test, visible in the page's source only:

    <!-- test: skip: REASON -->          not run (each such block is named in SKIPPED below)
    <!-- test: setup: CODE -->           one line run before the block (a fragment's context)
    <!-- test: replace: OLD => NEW -->   shrinks the block's sizes (OLD must occur)

A ```py block is another library's code (evosax's, beside its port): it runs with JAX's rank
promotion allowed, where the tests otherwise raise on it (tests/conftest.py).
"""

import re
from pathlib import Path

import jax
import pytest

from evolax import cli
from test_guides import evolax_commands

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(p for p in DOCS.glob("**/*.md") if p.parent.name != "results")]
# the pages whose code a test of their own runs, checking what the page claims
DEDICATED = {
    "README.md": "tests/test_readme.py",
    "docs/algorithms.md": "tests/test_readme.py",
    "docs/guides/quickstart.md": "tests/test_guides.py",
    "docs/guides/concepts.md": "tests/test_guides.py",
    "docs/guides/custom_task.md": "tests/test_guides.py",
    "docs/guides/custom_algorithm.md": "tests/test_guides.py",
    "docs/guides/own_loop.md": "tests/test_guides.py",
    "docs/guides/embedding.md": "tests/test_guides.py",
}
# the blocks not run, by page and the reason the page gives: few, each named
SKIPPED = {
    (
        "docs/host.md",
        "host workers stepping MuJoCo for minutes (tests/tasks/test_gymnasium.py runs them)",
    ),
    ("docs/scaling.md", "must run before JAX starts its backends, which the test process has done"),
    (
        "docs/environments.md",
        "xminigrid downloads the benchmark's rulesets (tests/tasks/test_xminigrid.py builds one "
        "in place)",
    ),
    (
        "docs/environments.md",
        "Brax builds its models for seconds (tests/tasks/test_brax_physics.py trains on these "
        "tasks)",
    ),
    ("docs/text_painting.md", "downloads CLIP's weights from the Hugging Face hub"),
    (
        "docs/text_painting.md",
        "downloads CLIP's weights; 2000 generations of ViT-B/32 are an accelerator's work",
    ),
}
FENCE = re.compile(r"^```(python|py|bash)\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"^<!-- test: (skip|setup|replace): (.*) -->$")


def blocks(path: Path, languages=("python", "py")):
    """``(line, source, markers)`` of each fenced block in ``languages``: its first line's
    number, its text, and the ``(kind, argument)`` of the test markers right above it (and
    ``("py", "")`` for a ```py block)."""
    text = path.read_text()
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) not in languages:
            continue
        line = text.count("\n", 0, match.start(2)) + 1
        above = text[: match.start()].splitlines()
        markers = []
        while above and (marker := MARKER.match(above[-1])):
            markers.insert(0, (marker.group(1), marker.group(2)))
            above.pop()
        if match.group(1) == "py":
            markers.append(("py", ""))
        found.append((line, match.group(2), markers))
    return found


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


# the pages whose code takes minutes on 2 cores (NEAT's and CLIP's compilation): nox -s slow
SLOW = {"docs/neat.md", "docs/text_painting.md"}
RUN = [
    pytest.param(p, marks=[pytest.mark.slow] if name(p) in SLOW else [], id=name(p))
    for p in PAGES
    if name(p) not in DEDICATED and blocks(p)
]


def test_every_page_with_code_is_run_and_the_skips_are_the_named_ones():
    skipped = set()
    for page in PAGES:
        for _, _, markers in blocks(page):
            for kind, reason in markers:
                if kind == "skip":
                    skipped.add((name(page), reason))
                    assert name(page) not in DEDICATED, "a dedicated test runs every block"
    assert skipped == SKIPPED
    for page, test in DEDICATED.items():
        assert page.rsplit("/", 1)[-1] in (ROOT / test).read_text(), f"{test} runs {page}"


def same_optimum(ns: dict) -> None:
    """from_evosax.md: evosax's loop and its port both reach the sphere's optimum."""
    assert float(ns["f"](ns["evosax_mean"])) < 1e-8
    assert float(ns["f"](ns["evolax_mean"])) < 1e-10  # as the page's comment says


# what a page's code must have computed, checked after it ran
CLAIMS = {"docs/from_evosax.md": same_optimum}


@pytest.mark.parametrize("page", RUN)
def test_the_page_code_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, source, markers in blocks(page):
        if any(kind == "skip" for kind, _ in markers):
            continue
        for kind, argument in markers:
            if kind == "replace":
                old, new = argument.split(" => ")
                assert old in source, f"{name(page)}:{line}: {old!r} is not in the block"
                source = source.replace(old, new)
            elif kind == "setup":
                exec(argument, namespace)
        code = compile("\n" * (line - 1) + source, str(page), "exec")  # the page's line numbers
        rank = "allow" if ("py", "") in markers else "raise"
        with jax.numpy_rank_promotion(rank):
            exec(code, namespace)
    CLAIMS.get(name(page), lambda ns: None)(namespace)
    capsys.readouterr()


@pytest.mark.parametrize("page", [p for p in PAGES if p.parent.name != "guides"], ids=name)
def test_evolax_commands_parse(page, capsys):
    """As tests/test_guides.py checks the guides' commands, on the other pages."""
    for args in evolax_commands(page):
        try:
            cli.parse_args(args)
        except SystemExit as exit:  # --help exits 0; bad arguments exit 2
            assert exit.code == 0, f"{name(page)}: `evolax {' '.join(args)}` does not parse"
    capsys.readouterr()
