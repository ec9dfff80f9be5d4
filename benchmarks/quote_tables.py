"""Copy the benchmark tables into the pages that quote them.

A quote is ``<!-- benchmarks/results/NAME.md -->``, the table, ``<!-- end -->`` in README.md
or a page under docs/ (`tests/test_docs_figures.py` checks that each equals the latest
table). Each quote whose table exists is replaced by it; the pages are named as they change.

    python benchmarks/quote_tables.py            # every quoted table
    python benchmarks/quote_tables.py bbob       # only benchmarks/results/bbob.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUOTE = re.compile(r"(<!-- (benchmarks/results/([\w.]+)\.md) -->\n)(.*?)(<!-- end -->)", re.DOTALL)


def main(names: list[str]) -> None:
    def latest(match: re.Match) -> str:
        table = ROOT / match.group(2)
        if (names and match.group(3) not in names) or not table.exists():
            return match.group(0)
        return match.group(1) + table.read_text().strip() + "\n" + match.group(5)

    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        quoted = QUOTE.sub(latest, text)
        if quoted != text:
            page.write_text(quoted)
            print(f"updated {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
