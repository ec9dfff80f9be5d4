"""A NEAT genome out of JAX: a plain dict, Python source, sympy expressions."""

from __future__ import annotations

from typing import Any

import numpy as np

from evolax.neat.genome import NONE, Genome

# the activations as Python expressions of `z` (the same formulas as evolax.neat.network's)
PYTHON_ACTIVATIONS = {
    "sigmoid": "1.0 / (1.0 + math.exp(-min(60.0, max(-60.0, 5.0 * z))))",
    "tanh": "math.tanh(min(60.0, max(-60.0, 2.5 * z)))",
    "relu": "max(z, 0.0)",
    "identity": "z",
    "sin": "math.sin(min(60.0, max(-60.0, 5.0 * z)))",
    "gauss": "math.exp(-5.0 * min(3.4, max(-3.4, z)) ** 2)",
    "abs": "abs(z)",
    "clamped": "min(1.0, max(-1.0, z))",
    "square": "z ** 2",
    "exp": "math.exp(min(60.0, max(-60.0, z)))",
    "softplus": "0.2 * math.log1p(math.exp(min(60.0, max(-60.0, 5.0 * z))))",
}
PYTHON_AGGREGATIONS = {
    "sum": "sum(terms)",
    "product": "math.prod(terms) if terms else 0.0",
    "max": "max(terms) if terms else 0.0",
    "min": "min(terms) if terms else 0.0",
    "maxabs": "max(terms, key=abs) if terms else 0.0",
    "mean": "sum(terms) / len(terms) if terms else 0.0",
}


def to_dict(
    genome: Genome, activation_options: tuple[str, ...], aggregation_options: tuple[str, ...]
) -> dict[str, Any]:
    """One genome (no population axis) as plain Python: ``inputs`` and ``outputs`` (node ids),
    ``nodes`` (each non-input node's ``id``, ``bias``, ``response``, ``activation``,
    ``aggregation`` by name) and ``connections`` (``in``, ``out``, ``weight``, ``enabled``,
    ``innovation``), JSON-ready."""
    g = {k: np.asarray(v) for k, v in genome.items()}  # type: ignore[attr-defined]
    if g["node_id"].ndim != 1:
        raise ValueError(
            f"genome must be one genome (node_id of shape (max_nodes,)), got node_id of shape "
            f"{g['node_id'].shape}"
        )
    outputs = [int(i) for i in g["output_ids"]]
    n_inputs = outputs[0]
    nodes = [
        {
            "id": int(g["node_id"][s]),
            "bias": float(g["bias"][s]),
            "response": float(g["response"][s]),
            "activation": activation_options[int(g["activation"][s])],
            "aggregation": aggregation_options[int(g["aggregation"][s])],
        }
        for s in range(len(g["node_id"]))
        if g["node_id"][s] != NONE and g["node_id"][s] >= n_inputs
    ]
    connections = [
        {
            "in": int(g["conn_in"][c]),
            "out": int(g["conn_out"][c]),
            "weight": float(g["weight"][c]),
            "enabled": bool(g["enabled"][c]),
            "innovation": int(g["innovation"][c]),
        }
        for c in range(len(g["innovation"]))
        if g["innovation"][c] != NONE
    ]
    return {
        "inputs": list(range(n_inputs)),
        "outputs": outputs,
        "nodes": nodes,
        "connections": connections,
    }


def evaluation_order(network: dict[str, Any]) -> list[int]:
    """The non-input nodes the outputs depend on, in an order where each comes after its
    inputs (enabled connections of a feed-forward genome)."""
    links = [(c["in"], c["out"]) for c in network["connections"] if c["enabled"]]
    inputs = set(network["inputs"])
    needed, frontier = set(network["outputs"]), set(network["outputs"])
    while frontier:
        frontier = {a for a, b in links if b in frontier and a not in needed and a not in inputs}
        needed |= frontier
    order: list[int] = []
    done = set(inputs)
    while len(order) < len(needed):
        ready = sorted(
            n
            for n in needed - done
            if all(a in done or a not in needed | inputs for a, b in links if b == n)
        )
        if not ready:
            raise ValueError("the genome's enabled connections form a cycle: not feed-forward")
        order += ready
        done |= set(ready)
    return order


def to_python(network: dict[str, Any], name: str = "network") -> str:
    """Python source of ``def name(inputs) -> list[float]``, the feed-forward network of
    :func:`to_dict`'s ``network`` (only ``math``; the outputs in output order)."""
    nodes = {n["id"]: n for n in network["nodes"]}
    lines = [f"def {name}(inputs):", "    import math", "", "    v = {}"]
    lines += [f"    v[{i}] = inputs[{k}]" for k, i in enumerate(network["inputs"])]
    needed = set(network["inputs"])
    for n in evaluation_order(network):
        needed.add(n)
        terms = [
            f"{c['weight']!r} * v[{c['in']}]"
            for c in network["connections"]
            if c["enabled"] and c["out"] == n and c["in"] in needed
        ]
        node = nodes[n]
        lines.append(f"    terms = [{', '.join(terms)}]")
        aggregate = PYTHON_AGGREGATIONS[node["aggregation"]]
        lines.append(f"    z = {node['bias']!r} + {node['response']!r} * ({aggregate})")
        lines.append(f"    v[{n}] = {PYTHON_ACTIVATIONS[node['activation']]}")
    lines.append(f"    return [v[i] for i in {network['outputs']!r}]")
    return "\n".join(lines) + "\n"


def to_sympy(network: dict[str, Any]) -> list[Any]:
    """The outputs of :func:`to_dict`'s feed-forward ``network`` as sympy expressions of the
    symbols ``x0, x1, ...`` (sympy must be installed; ``sum`` aggregation, and the
    activations ``sigmoid``, ``tanh``, ``relu``, ``identity``, ``sin``, ``gauss``, ``abs``,
    ``square``, ``exp``; without the clipping at +-60 the Python source has)."""
    try:
        import sympy
    except ImportError:
        raise ImportError("to_sympy needs sympy: pip install sympy") from None
    activations = {
        "sigmoid": lambda z: 1 / (1 + sympy.exp(-5 * z)),
        "tanh": lambda z: sympy.tanh(sympy.Rational(5, 2) * z),
        "relu": lambda z: sympy.Max(z, 0),
        "identity": lambda z: z,
        "sin": lambda z: sympy.sin(5 * z),
        "gauss": lambda z: sympy.exp(-5 * z**2),
        "abs": sympy.Abs,
        "square": lambda z: z**2,
        "exp": sympy.exp,
    }
    nodes = {n["id"]: n for n in network["nodes"]}
    values: dict[int, Any] = {i: sympy.Symbol(f"x{k}") for k, i in enumerate(network["inputs"])}
    for n in evaluation_order(network):
        node = nodes[n]
        if node["aggregation"] != "sum" or node["activation"] not in activations:
            raise ValueError(
                f"to_sympy handles sum aggregation and the activations {sorted(activations)}; "
                f"node {n} has {node['aggregation']} and {node['activation']}"
            )
        total = sum(
            (
                sympy.Float(c["weight"]) * values[c["in"]]
                for c in network["connections"]
                if c["enabled"] and c["out"] == n and c["in"] in values
            ),
            sympy.Integer(0),
        )
        z = sympy.Float(node["bias"]) + sympy.Float(node["response"]) * total
        values[n] = activations[node["activation"]](z)
    return [values.get(i, sympy.Integer(0)) for i in network["outputs"]]
