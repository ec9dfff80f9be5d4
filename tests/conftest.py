import os
import tempfile

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")
# layout choices (evolax.layout) and downloads go to a cache of this test run, not the user's;
# trainers take their layouts unmeasured (tests/test_layout.py measures), as before it existed
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="evolax-test-cache-"))
os.environ.setdefault("EVOLAX_MEASURE_LAYOUT", "0")


@pytest.fixture
def key():
    return jax.random.key(0)
