import os
import tempfile

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")
# float32 matrix products in full float32 everywhere: on a GPU, JAX's default lets them run in
# TF32 (about 1e-3 relative), which the comparisons with numpy and the reference libraries,
# and ill-conditioned objectives, cannot absorb (seen on an H200); the CPU computes the same
jax.config.update("jax_default_matmul_precision", "highest")
# layout choices (evolax.placement) and downloads go to a cache of this test run, not the user's;
# trainers take their layouts unmeasured (tests/test_layout.py measures), as before it existed
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="evolax-test-cache-"))
os.environ.setdefault("EVOLAX_MEASURE_LAYOUT", "0")
# programs that take over a second to compile are compiled once per test run: the `evolax`
# subprocesses of the CLI tests, and the workers, share one compilation cache
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"evolax-test-jit-{RUN_ID}")
)
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
# every program, however quick to compile: tests build the same small trainers again and again
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
# the tests' own process keeps JAX's one CPU device (importing evolax would ask for one per
# core: tests/test_sharding.py checks that); the commands they start get the library's default
os.environ["EVOLAX_CPU_DEVICES"] = "1"
import evolax  # noqa: E402, F401

del os.environ["EVOLAX_CPU_DEVICES"]


def pytest_configure(config):
    """The default suite mostly compiles: there LLVM's cheapest pipeline compiles XLA:CPU
    programs about 40% faster (its run was 7.2 instead of 9.6 minutes on 2 cores), and XLA's
    older elemental fusion code generator (``--xla_cpu_use_fusion_emitters=false``) compiles
    them about twice as fast again (a trainer's first generation: 2.5 s of CPU instead of 5.5),
    with the same semantics. The slow suite trains for long and keeps the default code. Set
    before JAX starts its backend (at collection); a test's subprocess that sets its own flags
    loses it, and only runs slower."""
    if config.option.markexpr == "not slow":
        fast = ["--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false"]
        os.environ["XLA_FLAGS"] = " ".join([*fast, os.environ.get("XLA_FLAGS", "")]).strip()


@pytest.fixture
def key():
    return jax.random.key(0)
