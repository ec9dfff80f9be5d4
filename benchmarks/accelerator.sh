#!/usr/bin/env bash
# One-command accelerator benchmark: evolax against EvoJAX and evosax on a GPU (or TPU) machine
# with no network. Writes benchmarks/results/accelerator/accelerator.json and .md (see
# docs/results.md, "On an accelerator", for how to read them). About 12 minutes in all: over a
# 10-minute call, run it as two with ONLY (below).
#
# The machine needs JAX's CUDA build, equinox, optax, chex, orbax and flax. evolax, EvoJAX,
# evosax and brax, and the packages they add, come from wheels in $WHEELS (default:
# benchmarks/wheels), installed without their dependencies into a folder of their own
# ($SITE) that goes first on PYTHONPATH. Make them on a machine with network, from the
# repository root, for the accelerator machine's Python (here 3.12) and platform:
#
#   pip wheel --no-deps --wheel-dir benchmarks/wheels .
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any \
#       --dest benchmarks/wheels docstring-parser evojax==0.2.17 evosax==0.3.2 dotmap cma \
#       brax==0.14.2 mujoco==4.0.1 mujoco-core==4.0.1 mujoco-studio==4.0.1 mujoco-mjx==3.17.0 \
#       glfw pyopengl ml_collections trimesh tensorboardX jaxopt
#
# MNIST rows need the IDX files in $EVOLAX_DATA_DIR/mnist; without them those rows are skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
WHEELS=${WHEELS:-benchmarks/wheels}
SITE=${SITE:-/tmp/evolax-accelerator-site}
# every benchmark writes here (benchmarks/results_table.py), not over the CPU tables the docs quote
export EVOLAX_BENCHMARK_RESULTS=benchmarks/results/accelerator
# the side-by-side workers hold the device at once: each takes memory as it needs it
export XLA_PYTHON_CLIENT_PREALLOCATE=false
RESULTS=$EVOLAX_BENCHMARK_RESULTS
mkdir -p "$RESULTS"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    python3 -m pip install --quiet --no-index --no-deps --no-compile --upgrade --target "$SITE" \
        "$WHEELS"/*.whl && export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH} \
        || echo "accelerator.sh: installing from $WHEELS failed; using what is installed" >&2
fi
python3 -c "import evolax" || { echo "accelerator.sh: evolax does not import" >&2; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
python3 -c "import jax; print('jax', jax.__version__, 'devices:', jax.devices())"

run() {  # run NAME SECONDS COMMAND...: a failing or slow benchmark costs its row only
    local name=$1 limit=$2
    shift 2
    if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then return; fi
    echo "== $name"
    if ! timeout -k 30 "$limit" "$@"; then
        if [ "$name" = hyperscale_mnist ] && [ -f "$RESULTS/hyperscale_mnist.md" ]; then return; fi
        echo "accelerator.sh: $name failed or ran over ${limit}s" >&2
        echo "$name" >>"$RESULTS/accelerator_failed.txt"
        pkill -f -- "benchmarks/.* --worker" || true  # side-by-side workers left behind
    fi
}
rm -f "$RESULTS/accelerator_failed.txt"
# limits: 21 minutes in all if every benchmark runs to its limit (about 13 as measured, before
# the kernel counts were added: they compile, a minute or two); ONLY
# (names separated by spaces) runs those rows alone, to split it over shorter calls
run cartpole 85 python3 benchmarks/cartpole_speed.py --generations 10 --rounds 2
# the same cart-pole in each episode loop (evolax.EpisodeLoop), forced, against the while loop
run episode_loops 90 python3 benchmarks/episode_loops.py --generations 10 --rounds 2
if [ -n "${EVOLAX_DATA_DIR:-}" ] && [ -d "$EVOLAX_DATA_DIR/mnist" ]; then
    run mnist 90 python3 benchmarks/mnist_speed.py --generations 5 --rounds 2
fi
# the accelerator's share of the CPU table: the largest cases of each family (each case's row
# is written as soon as it is measured)
run evosax 150 python3 benchmarks/evosax_speed.py --rounds 3 --generations 20 \
    --quality-generations 50 \
    --cases open_es,pgpe,snes,sep_cma_es,cma_es,simple_ga,de,pso,simple_ga_small,de_small,pso_small
run brax 130 python3 benchmarks/brax_throughput.py --pop-size 256 --n-repeats 16 --max-steps 1000 \
    --rounds 2
# the paper's network and population (the seq2seq preset's), for 30 s with compiling
run seq2seq 75 python3 benchmarks/seq2seq_accuracy.py --pop-size 1024 --hidden-size 256 \
    --center-lr 0.01 --std-lr 0.03 --init-std 0.05 --eval-interval 20 --minutes 0.5
# LowRankES against batch inference at 109M and 604M parameters, pop 4,096 (the hyperscale
# issue), and its MNIST test-accuracy curve at pop 1,024 for 3 minutes (timeout's SIGTERM ends
# that run after a chunk, with a last test: its row counts as run when its table was written)
run hyperscale 60 python3 benchmarks/hyperscale.py
run hyperscale 110 python3 benchmarks/hyperscale.py --features 4096 --hidden 16384 16384 16384 \
    --batch 16 --generations 2
# LowRankES on an evolax.lm decoder against one batched forward pass over the same tokens, and
# its memory against D + pop r sum(m + n): 99.5M parameters (the CPU table's model) at rank 1
# and 4, and 1.01B (d_model 2,048, 20 blocks) at rank 1, pop 4,096, 32 tokens per member
# (about 10 minutes more at their limits: ONLY=lm_throughput runs them alone)
run lm_throughput 240 python3 benchmarks/lm_throughput.py --pop 4096 --tokens 32 --rank 1 4
run lm_throughput 360 python3 benchmarks/lm_throughput.py --pop 4096 --tokens 32 --rank 1 \
    --d-model 2048 --layers 20 --heads 16 --d-ff 5504
if [ -n "${EVOLAX_DATA_DIR:-}" ] && [ -d "$EVOLAX_DATA_DIR/mnist" ]; then
    rm -f "$RESULTS/hyperscale_mnist.md"
    run hyperscale_mnist 180 python3 benchmarks/hyperscale_mnist.py --generations 100000 \
        --interval 100
fi
# kernels per generation and per cart-pole step in the GPU's compiled programs (compiling only)
run kernels 120 python3 benchmarks/kernel_counts.py
if python3 -c "import jax, sys; sys.exit(jax.device_count() < 2)"; then
    run scaling 60 python3 benchmarks/scaling.py --generations 20
fi
# the fused rollout (a Pallas kernel compiled with Triton) against the XLA episode loop: GPU only
if python3 -c "import jax, sys; sys.exit(jax.default_backend() != 'gpu')"; then
    run fused 90 python3 benchmarks/fused_rollout.py --rounds 5
fi
python3 benchmarks/accelerator_table.py
