"""Collect the results of `benchmarks/accelerator.sh` into one table.

Reads the JSON each benchmark wrote in ``benchmarks/results/accelerator/`` and writes
``accelerator.json`` (the rows and the device) and ``accelerator.md`` (a Markdown table, with its
caption). Each row is a ratio measured side by side in one run, or a rate on the named device; a
benchmark that did not run is listed as missing.
"""

from __future__ import annotations

import json

from results_table import RESULTS, write_table


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def rows() -> list[dict]:
    """One row per measured figure: what, evolax's number, the other's, their ratio."""
    out: list[dict] = []
    for name, label in (("cartpole_speed", "cart-pole"), ("mnist_speed", "MNIST")):
        result = load(name)
        if result is None:
            out.append({"benchmark": label, "missing": True})
            continue
        per_gen = result["seconds_per_generation"]
        evolax = min(t for worker, t in per_gen.items() if worker.startswith("evolax"))
        evojax = min(t for worker, t in per_gen.items() if worker.startswith("evojax"))
        out.append(
            {"benchmark": f"{label}, s/generation", "evolax": evolax, "other": evojax,
             "against": "EvoJAX 0.2.17", "speedup": evojax / evolax}
        )  # fmt: skip
    loops = load("episode_loops")
    for row in (loops or {}).get("rows", []):
        while_s = row["seconds_per_generation"] / row["ratio_to_while"]
        out.append(
            {"benchmark": f"cart-pole, episode loop: {row['loop']}, s/generation",
             "evolax": row["seconds_per_generation"], "other": while_s,
             "against": "the while loop", "speedup": 1 / row["ratio_to_while"]}
        )  # fmt: skip
    if loops is None:
        out.append({"benchmark": "cart-pole in each episode loop", "missing": True})
    evosax = load("evosax_speed")
    for row in (evosax or {}).get("rows", []):
        t = row["seconds_per_generation"]
        out.append(
            {"benchmark": f"{row['case']} d={row['dim']:,} pop={row['pop_size']}, s/generation",
             "evolax": t["evolax"], "other": t["evosax"], "against": "evosax 0.3.2",
             "speedup": row["speedup"]}
        )  # fmt: skip
    if evosax is None:
        out.append({"benchmark": "ES against evosax", "missing": True})
    brax = load("brax_throughput")
    if brax is None:
        out.append({"benchmark": "Brax ant", "missing": True})
    else:
        rates = brax["env_steps_per_second"]
        evolax = rates.get("evolax evaluate")
        other = next((r for name, r in rates.items() if name.startswith("evojax")), None)
        out.append(
            {"benchmark": "Brax ant, env steps/s", "evolax": evolax, "other": other,
             "against": "EvoJAX BraxTask", "speedup": other and evolax / other}
        )  # fmt: skip
    seq2seq = load("seq2seq")
    if seq2seq is None or not seq2seq["rows"]:
        out.append({"benchmark": "seq2seq", "missing": True})
    else:
        # after the first test (its chunk holds the compilation), where there are two or more
        first, last = seq2seq["rows"][0], seq2seq["rows"][-1]
        if last is first:
            first = {"generation": 0, "train_s": 0.0}
        config = seq2seq["config"]
        out.append(
            {"benchmark": f"seq2seq pop {config['pop_size']}, hidden {config['hidden_size']}, "
             "generations/s",
             "evolax": (last["generation"] - first["generation"])
             / (last["train_s"] - first["train_s"])}
        )  # fmt: skip
    hyperscale = load("hyperscale")
    for row in (hyperscale or {}).get("rows", []):
        out.append(
            {"benchmark": f"LowRankES {row['parameters'] / 1e6:.0f}M params, pop "
             f"{row['pop_size']:,}, {row['batch']} inputs each: s/generation (other: batch "
             "inference)", "evolax": row["generation_s"], "other": row["batch_inference_s"],
             "against": "batch inference", "speedup": row["throughput_ratio"]}
        )  # fmt: skip
    if hyperscale is None:
        out.append({"benchmark": "LowRankES against batch inference", "missing": True})
    lm = load("lm_throughput")
    for row in (lm or {}).get("rows", []):
        out.append(
            {"benchmark": f"LowRankES language model {row['parameters'] / 1e6:.0f}M params, "
             f"pop {row['pop_size']:,}, rank {row['rank']}, {row['tokens']} tokens each: "
             "s/generation (other: batch inference)", "evolax": row["generation_s"],
             "other": row["batch_inference_s"], "against": "batch inference",
             "speedup": row["throughput_ratio"]}
        )  # fmt: skip
    if lm is None:
        out.append({"benchmark": "LowRankES language model against batch inference",
                    "missing": True})  # fmt: skip
    fused = load("fused_rollout")
    for row in (fused or {}).get("rows", []):
        if row["interpret"]:
            continue  # interpret mode: a check of the results, not a time
        out.append(
            {"benchmark": f"fused rollout, {row['task']} pop {row['pop_size']} x "
             f"{row['n_repeats']} repeats, {row['max_steps']} steps: s/batch (returns within "
             f"{row['max_rel_diff']:.0e}, lengths {'equal' if row['lengths_equal'] else 'DIFFER'})",
             "evolax": row["fused_s"], "other": row["xla_s"], "against": "XLA loop (run_episodes)",
             "speedup": row["speedup"]}
        )  # fmt: skip
    if fused is None:
        out.append({"benchmark": "fused rollout (GPU only)", "missing": True})
    kernels = load("kernel_counts")
    for row in (kernels or {}).get("rows", []):
        unit = "step" if row["case"] == "cartpole" else "generation"
        out.append(
            {"benchmark": f"{row['case']}, kernels per {unit} (speed-up column: reference's "
             "kernels / evolax's)", "evolax": row["evolax"], "other": row["other"],
             "against": row["reference"], "speedup": row["other"] / row["evolax"]}
        )  # fmt: skip
    if kernels is None:
        out.append({"benchmark": "kernels per generation", "missing": True})
    scaling = load("scaling")
    for row in (scaling or {}).get("rows", []):
        out.append(
            {"benchmark": f"cart-pole on {row['devices']} device(s), generations/s",
             "evolax": row["generations_per_s"]}
        )  # fmt: skip
    return out


def main() -> None:
    import jax

    table = rows()
    device = {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()]}
    (RESULTS / "accelerator.json").write_text(
        json.dumps({"device": device, "rows": table}, indent=2)
    )
    lines = [
        f"Device: {device['backend']}, {len(device['devices'])} x {jax.devices()[0].device_kind}",
        "",
        "| benchmark | evolax | other | against | evolax's speed-up |",
        "|---|---|---|---|---|",
    ]
    for row in table:
        if row.get("missing"):
            lines.append(f"| {row['benchmark']} | (did not run) | | | |")
            continue
        other, speedup = row.get("other"), row.get("speedup")
        lines.append(
            f"| {row['benchmark']} | {row['evolax']:.4g} | "
            f"{'' if other is None else f'{other:.4g}'} | {row.get('against', '')} | "
            f"{'' if speedup is None else f'{speedup:.2f}x'} |"
        )
    write_table(RESULTS / "accelerator.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
