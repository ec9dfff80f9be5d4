#!/usr/bin/env bash
# One-command accelerator benchmark: evolax against EvoJAX and evosax on a GPU (or TPU) machine
# with no network. Writes benchmarks/results/accelerator/accelerator.json and .md (see
# docs/results.md, "On an accelerator", for how to read them). About 8 minutes in all.
#
# The machine needs JAX's CUDA build, equinox, optax, chex and orbax. evolax, EvoJAX, evosax and
# brax (and the few pure-Python packages they add) come from wheels in $WHEELS (default:
# benchmarks/wheels). Make them on a machine with network, from the repository root:
#
#   pip wheel --wheel-dir benchmarks/wheels . evojax==0.2.17 evosax==0.3.2 brax dotmap
#
# MNIST rows need the IDX files in $EVOLAX_DATA_DIR/mnist; without them those rows are skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-benchmarks/wheels}
# every benchmark writes here (benchmarks/results_table.py), not over the CPU tables the docs quote
export EVOLAX_BENCHMARK_RESULTS=benchmarks/results/accelerator
RESULTS=$EVOLAX_BENCHMARK_RESULTS
mkdir -p "$RESULTS"
if [ -d "$WHEELS" ]; then
    python -m pip install --quiet --no-index --find-links "$WHEELS" evolax evojax evosax brax \
        || echo "accelerator.sh: installing from $WHEELS failed; using what is installed" >&2
fi
python -c "import jax; print('devices:', jax.devices())"

run() {  # run NAME SECONDS COMMAND...: a failing or slow benchmark costs its row only
    local name=$1 limit=$2
    shift 2
    echo "== $name"
    if ! timeout "$limit" "$@"; then
        echo "accelerator.sh: $name failed or ran over ${limit}s" >&2
        echo "$name" >>"$RESULTS/accelerator_failed.txt"
    fi
}
rm -f "$RESULTS/accelerator_failed.txt"
run cartpole 90 python benchmarks/cartpole_speed.py --generations 10 --rounds 2
if [ -n "${EVOLAX_DATA_DIR:-}" ] && [ -d "$EVOLAX_DATA_DIR/mnist" ]; then
    run mnist 120 python benchmarks/mnist_speed.py --generations 5 --rounds 2
fi
run evosax 150 python benchmarks/evosax_speed.py --rounds 3 --quality-generations 50
run brax 90 python benchmarks/brax_throughput.py --pop-size 256 --n-repeats 16 --max-steps 1000
run seq2seq 45 python benchmarks/seq2seq_accuracy.py --minutes 0.5 --eval-interval 50
if python -c "import jax, sys; sys.exit(jax.device_count() < 2)"; then
    run scaling 60 python benchmarks/scaling.py --generations 20
fi
python benchmarks/accelerator_table.py
