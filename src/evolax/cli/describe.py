"""``evolax describe``: list the components, or one component's fields."""

from __future__ import annotations

import argparse
import inspect


def command(args: argparse.Namespace) -> int:
    """Print the components, or ``args.name``'s fields; the exit status."""
    from evolax import schema
    from evolax.config import REGISTRIES

    if args.name is None:
        for kind, registry in REGISTRIES.items():
            title = getattr(kind, "__name__", str(kind))
            print(f"{title}: {', '.join(registry)}")
        print("(any other by import path: package.module:Name; `evolax describe NAME`)")
        return 0
    everything = {k: v for registry in REGISTRIES.values() for k, v in registry.items()}
    target, preset = schema.find(args.name, everything, "describe")
    summary = (inspect.getdoc(target) or "").split("\n\n")[0]
    print(f"{args.name}: {target.__module__}:{target.__qualname__}\n  {' '.join(summary.split())}")
    for f in schema.fields(target):
        if f.name in preset:
            continue
        shown = schema.plain(f.default, REGISTRIES)
        default = f"default {f.default!r}" if shown is NotImplemented else f"default {shown!r}"
        if f.default is schema.REQUIRED:
            default = "required"
        elif f.factory or shown is NotImplemented:
            default = "default: see below"
        print(f"  {f.name}: {schema.type_name(f.annotation)} ({default})")
        if f.doc:
            print(f"      {f.doc}")
    return 0
