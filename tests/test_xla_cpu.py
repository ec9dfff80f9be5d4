"""The XLA CPU vector width evolax asks for at import."""

import os
import subprocess
import sys

from evolax.sharding import cpu_cores
from evolax.xla_cpu import VECTOR_WIDTH_FLAG, has_avx512, prefer_wide_vectors

AVX512 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512bw\n"
AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
# a CPU name that mentions AVX-512 is not a flag
NAMED = "model name\t: CPU with avx512f support\nflags\t\t: fpu sse2 avx avx2 avx512bw\n"


def test_has_avx512_reads_the_flags_line():
    assert has_avx512(AVX512)
    assert not has_avx512(AVX2)
    assert not has_avx512(NAMED)


def test_wide_vectors_are_asked_for_on_avx512_only():
    environ = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    assert prefer_wide_vectors(environ, AVX512)
    assert environ["XLA_FLAGS"] == (
        f"--xla_force_host_platform_device_count=2 {VECTOR_WIDTH_FLAG}=512"
    )
    assert not prefer_wide_vectors(environ, AVX512)  # once
    empty: dict[str, str] = {}
    assert not prefer_wide_vectors(empty, AVX2) and empty == {}


def test_an_explicit_width_wins():
    environ = {"XLA_FLAGS": f"{VECTOR_WIDTH_FLAG}=256"}
    assert not prefer_wide_vectors(environ, AVX512)
    assert environ["XLA_FLAGS"] == f"{VECTOR_WIDTH_FLAG}=256"


def test_importing_evolax_sets_the_width_and_the_devices_before_jax_starts():
    # both only work if no backend has started: a device per core proves it
    code = "import os, evolax, jax\nprint(len(jax.devices()), os.environ.get('XLA_FLAGS', ''))\n"
    # a bare environment, but for where evolax may be installed (PYTHONPATH)
    env = {"PATH": "", "JAX_PLATFORMS": "cpu"} | {
        k: v for k, v in os.environ.items() if k == "PYTHONPATH"
    }
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.split(maxsplit=1)
    devices, flags = out[0], out[1] if len(out) > 1 else ""
    assert int(devices) == cpu_cores()
    assert (f"{VECTOR_WIDTH_FLAG}=512" in flags) == has_avx512()
