"""int8 weights with per-channel scales: the quantisation against numpy, the int8 model's
logits against the float model of the dequantised weights (a low-rank member's included), and
the weights through ``safetensors`` and back, bit for bit."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.lm import LMConfig, forward, init_params, load_pretrained, save_pretrained
from evolax.lm.decode import generate
from evolax.lm.quant import Int8Matrix, quantize
from evolax.lm.weights import from_state_dict, to_state_dict
from evolax.policies import LanguageModel
from evolax.seeded import LowRank

safetensors_numpy = pytest.importorskip("safetensors.numpy")

SHAPE = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, max_len=24)
FLOAT = LMConfig(**SHAPE)
INT8 = LMConfig(**SHAPE, weight_dtype="int8")
TOKENS = jnp.array([3, 17, 5, 60, 2, 9, 11, 40])


def reference_quantize(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric absmax per channel along ``axis`` in float32: ``scale = max|w| / 127`` over
    the other axis (as ``max|w| * float32(1 / 127)``, the product XLA computes for the
    division), ``q = clip(rint(w / scale), -127, 127)`` (rint: half to even)."""
    w = np.asarray(w, np.float32)
    scale = np.max(np.abs(w), axis=1 - axis) * np.float32(1 / 127)
    safe = np.where(scale > 0, scale, np.float32(1))
    safe = safe[None, :] if axis == 1 else safe[:, None]
    return np.clip(np.rint(w / safe), -127, 127).astype(np.int8), scale


def dequantized(q: np.ndarray, scale: np.ndarray, axis: int) -> np.ndarray:
    return q.astype(np.float32) * (scale[None, :] if axis == 1 else scale[:, None])


def test_quantization_matches_numpy_per_channel_absmax_half_to_even():
    w = np.array(jax.random.normal(jax.random.key(0), (6, 5)), np.float32)
    w[:, 1] = [127.0, 2.5, -0.5, 1.5, -126.5, 3.5]  # scale 1: exact halves round to even
    w[:, 3] = 0.0  # a channel of zeros: scale 0, q 0
    for axis in (1, 0):
        m = quantize(jnp.asarray(w), axis)
        q, scale = reference_quantize(w, axis)
        np.testing.assert_array_equal(np.asarray(m.q), q)
        np.testing.assert_array_equal(np.asarray(m.scale), scale)
        assert m.q.dtype == jnp.int8 and m.scale.dtype == jnp.float32
    assert quantize(jnp.asarray(w)).q[:, 1].tolist() == [127, 2, 0, 2, -126, 4]
    # used as its float matrix: x @ m, x @ m.T (a tied head), m[rows] (an embedding lookup)
    x = jax.random.normal(jax.random.key(1), (2, 6))
    for axis in (1, 0):
        m, formed = quantize(jnp.asarray(w), axis), dequantized(*reference_quantize(w, axis), axis)
        x5, ref5 = x[:, :5], np.asarray(x[:, :5], np.float64) @ formed.T
        np.testing.assert_allclose(x5 @ m.T, ref5, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(x @ m, np.asarray(x, np.float64) @ formed, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(m[jnp.array([4, 0, 4])], formed[[4, 0, 4]])
    assert not np.any(np.asarray(quantize(jnp.asarray(w)).q[:, 3]))
    np.testing.assert_allclose(  # within half a step of each channel
        np.asarray(quantize(jnp.asarray(w)).dense()), w, atol=float(np.abs(w).max()) / 254
    )


def float_twin(params) -> dict:
    """The float parameters of int8 ``params``, dequantised in numpy."""
    return jax.tree.map(
        lambda x: (
            jnp.asarray(dequantized(np.asarray(x.q), np.asarray(x.scale), x.axis))
            if isinstance(x, Int8Matrix)
            else x
        ),
        params,
        is_leaf=lambda x: isinstance(x, Int8Matrix),
    )


@pytest.mark.parametrize("tie", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_int8_logits_equal_the_float_model_of_the_dequantized_weights(tie):
    shape = {**SHAPE, "tie_embeddings": tie}
    int8, plain = LMConfig(**shape, weight_dtype="int8"), LMConfig(**shape)
    params = init_params(int8, jax.random.key(1))
    assert isinstance(params["embed"], Int8Matrix) and params["embed"].axis == 0
    assert params["layers"][0]["attn_norm"].dtype == jnp.float32
    logits, _ = forward(int8, params, TOKENS)
    reference, _ = forward(plain, float_twin(params), TOKENS)
    np.testing.assert_allclose(logits, reference, rtol=1e-5, atol=1e-6)


def test_a_low_rank_member_perturbs_the_int8_weights_in_float():
    """A LowRank view over an int8 matrix (as an ES member of an int8 model, the embedding
    included) gives the logits of the float model whose matrices are the dequantised weights
    plus ``s a b^T``."""
    is_matrix = lambda x: isinstance(x, Int8Matrix)  # noqa: E731

    @jax.jit
    def logits(params, key):
        leaves, treedef = jax.tree.flatten(params, is_leaf=is_matrix)
        keys = iter(jax.random.split(key, 2 * len(leaves)))
        members, formed = [], []
        for w in leaves:
            if not is_matrix(w):
                members.append(w)
                formed.append(w)
                continue
            a = jax.random.normal(next(keys), (w.shape[0], 2))
            b = jax.random.normal(next(keys), (w.shape[1], 2))
            members.append(LowRank(w=w, a=a, b=b, scale=jnp.asarray(0.01)))
            scale = w.scale[None, :] if w.axis == 1 else w.scale[:, None]
            formed.append(w.q.astype(jnp.float32) * scale + 0.01 * a @ b.T)
        member, reference = (
            jax.tree.unflatten(treedef, members),
            jax.tree.unflatten(treedef, formed),
        )
        return forward(INT8, member, TOKENS)[0], forward(FLOAT, reference, TOKENS)[0]

    ours, reference = logits(init_params(INT8, jax.random.key(2)), jax.random.key(3))
    np.testing.assert_allclose(ours, reference, atol=2e-5)


@pytest.mark.parametrize("layout", ["pytorch", pytest.param("flax", marks=pytest.mark.slow)])
def test_int8_weights_round_trip_through_safetensors_exactly(tmp_path, layout):
    params = init_params(INT8, jax.random.key(4))
    save_pretrained(tmp_path, INT8, params, layout=layout)
    tensors = safetensors_numpy.load_file(str(tmp_path / "model.safetensors"))
    name = "model.layers.1.mlp.down_proj." + ("weight" if layout == "pytorch" else "kernel")
    assert tensors[name].dtype == np.int8 and tensors[name + ".scale"].dtype == np.float32
    assert tensors[name + ".scale"].shape == (SHAPE["d_model"],)  # one per output channel
    hf = json.loads((tmp_path / "config.json").read_text())
    assert hf["quantization_config"]["quant_method"] == "evolax_int8"
    config, loaded = load_pretrained(tmp_path)
    assert config == INT8
    same = jax.tree.map(lambda x, y: x.dtype == y.dtype and bool(jnp.all(x == y)), loaded, params)
    assert jax.tree.all(same)
    assert jax.tree.structure(loaded) == jax.tree.structure(params)


def test_a_float_checkpoint_loads_quantized_per_output_channel(tmp_path):
    """Each PyTorch ``[out, in]`` weight is quantised per row (its output channel), the
    embedding per token, as numpy does it from the file; the int8 model's file dequantises
    into a float configuration."""
    save_pretrained(tmp_path / "float", FLOAT, init_params(FLOAT, jax.random.key(5)))
    tensors = safetensors_numpy.load_file(str(tmp_path / "float" / "model.safetensors"))
    config, params = load_pretrained(tmp_path / "float", weight_dtype="int8")
    assert config == INT8
    for ours, name in [
        (params["layers"][0]["wq"], "model.layers.0.self_attn.q_proj.weight"),
        (params["head"], "lm_head.weight"),
        (params["embed"], "model.embed_tokens.weight"),
    ]:
        q, scale = reference_quantize(tensors[name], axis=0)  # per row of [out, in]
        stored = np.asarray(ours.q) if ours.axis == 0 else np.asarray(ours.q).T
        np.testing.assert_array_equal(stored, q)
        np.testing.assert_array_equal(np.asarray(ours.scale), scale)
    save_pretrained(tmp_path / "int8", INT8, params)
    plain_config, plain = load_pretrained(tmp_path / "int8", weight_dtype=None)
    assert plain_config == FLOAT
    np.testing.assert_array_equal(plain["layers"][0]["wq"], float_twin(params)["layers"][0]["wq"])


def test_the_policy_evolves_float_master_weights_and_decodes_with_int8(tmp_path):
    """The genome is the dequantised weights; decoding it equals decoding the int8 model."""
    params = init_params(INT8, jax.random.key(6))
    save_pretrained(tmp_path, INT8, params)
    policy = LanguageModel.from_pretrained(tmp_path, completion_len=3)
    assert policy.model == INT8
    genome = policy.init(jax.random.key(0), (2, 5), (2, 3))
    assert {x.dtype for x in jax.tree.leaves(genome)} == {jnp.dtype(jnp.float32)}
    np.testing.assert_array_equal(genome["layers"][0]["wo"], float_twin(params)["layers"][0]["wo"])
    prompts = jnp.stack([TOKENS[:5], TOKENS[3:]])
    tokens, _ = policy.apply(genome, prompts, policy.reset(jax.random.key(0)), jax.random.key(1))
    keys = jax.random.split(jax.random.key(1), 2)
    for prompt, key, got in zip(prompts, keys, tokens, strict=True):
        np.testing.assert_array_equal(got, generate(INT8, params, prompt, 3, key))


def test_bad_int8_options_fail_in_one_line():
    with pytest.raises(ValueError, match=r"weight_dtype must be None .* or 'int8', got 'int4'"):
        LMConfig(weight_dtype="int4")
    hf = {**FLOAT.to_hf(), "quantization_config": {"quant_method": "gptq"}}
    with pytest.raises(ValueError, match=r"config\.json: quantization 'gptq' is not supported"):
        LMConfig.from_hf(hf)
    tensors = to_state_dict(INT8, init_params(INT8, jax.random.key(7)))
    del tensors["model.layers.0.self_attn.q_proj.weight.scale"]
    with pytest.raises(ValueError, match=r"lacks 1 tensor.*q_proj\.weight\.scale' \(an int8"):
        from_state_dict(INT8, tensors)
