"""``evolax configs``: list the presets."""

from __future__ import annotations

import argparse

from evolax.config import presets, resolve


def command(args: argparse.Namespace) -> int:
    """Print each preset's components and generations; the exit status."""
    del args
    for name in presets():
        config = resolve(name)
        parts = [f"{s} {config[s]['name']}" for s in ("algorithm", "policy", "task")]
        print(f"{name}: {', '.join(parts)}; {config['run']['generations']} generations")
    return 0
