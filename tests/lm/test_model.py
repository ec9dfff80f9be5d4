"""The language model against ``transformers``' Flax Llama (the same random weights), its KV
cache against recomputation, and its weights through ``safetensors`` in both of
``transformers``' layouts, read back by ``transformers`` itself."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from evolax.lm import LMConfig, empty_cache, forward, init_params, load_pretrained, save_pretrained
from evolax.lm.decode import generate
from evolax.lm.weights import from_state_dict, to_state_dict
from evolax.seeded import LowRank

transformers = pytest.importorskip("transformers")
flax_traverse = pytest.importorskip("flax.traverse_util")


def logits_of(model, tokens) -> np.ndarray:
    """transformers' logits for one sequence (its Flax code broadcasts implicitly, which the
    test suite's conftest forbids)."""
    with jax.numpy_rank_promotion("allow"):  # one program, not transformers' eager ops
        logits = jax.jit(lambda params, ids: model(ids, params=params).logits)
        return np.asarray(logits(model.params, tokens[None])[0])


TOKENS = jnp.array([3, 17, 5, 60, 2, 9, 11, 40, 0, 63])


def reference(tie: bool, kv_heads: int, seed: int = 0):
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=32,
        tie_word_embeddings=tie,
        rms_norm_eps=1e-5,
    )
    with jax.numpy_rank_promotion("allow"):
        return config, transformers.FlaxLlamaForCausalLM(config, seed=seed)


SLOW = pytest.mark.slow  # the other cases of a parametrised check: nox -s slow


@pytest.mark.parametrize(
    ("tie", "kv_heads"),
    # the default run compares with transformers in test_weights_round_trip_through_transformers
    [
        pytest.param(False, 2, marks=SLOW),
        pytest.param(True, 4, marks=SLOW),
        pytest.param(False, 1, marks=SLOW),
    ],
)
def test_logits_equal_transformers_flax_llama(tie, kv_heads):
    hf_config, model = reference(tie, kv_heads)
    if tie:  # transformers' Flax Llama ignores tie_word_embeddings: tie its head by hand
        embedding = model.params["model"]["embed_tokens"]["embedding"]
        model.params = {**model.params, "lm_head": {"kernel": embedding.T}}
    tensors = {".".join(k): v for k, v in flax_traverse.flatten_dict(model.params).items()}
    config = LMConfig.from_hf(hf_config.to_dict())
    params = from_state_dict(config, tensors)
    ref = logits_of(model, TOKENS)
    ours, _ = forward(config, params, TOKENS)
    np.testing.assert_allclose(np.asarray(ours), ref, atol=2e-6, rtol=1e-5)


CONFIG = LMConfig(
    vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, max_len=24
)
PARAMS = init_params(CONFIG, jax.random.key(1))


def test_the_kv_cache_gives_the_logits_of_the_whole_sequence():
    whole, _ = forward(CONFIG, PARAMS, TOKENS)
    logits, cache = forward(CONFIG, PARAMS, TOKENS[:6], empty_cache(CONFIG), 0)
    pieces = [logits]
    for t in range(6, TOKENS.shape[0]):
        logits, cache = forward(CONFIG, PARAMS, TOKENS[t : t + 1], cache, jnp.int32(t))
        pieces.append(logits)
    np.testing.assert_allclose(np.concatenate(pieces), whole, atol=1e-6)


@pytest.mark.parametrize("temperature", [0.0, pytest.param(1.5, marks=SLOW)])
def test_decoding_with_and_without_the_cache_gives_the_same_tokens(temperature):
    key = jax.random.key(7)
    cached = generate(CONFIG, PARAMS, TOKENS[:5], 12, key, temperature)
    recomputed = generate(CONFIG, PARAMS, TOKENS[:5], 12, key, temperature, cache=False)
    np.testing.assert_array_equal(cached, recomputed)
    assert cached.shape == (12,) and len(set(np.asarray(cached).tolist())) > 1


def test_left_padding_is_never_attended_to():
    prompt = TOKENS[:5]
    padded = jnp.concatenate([jnp.zeros(3, prompt.dtype), prompt])
    valid = jnp.arange(8) >= 3
    plain, _ = forward(CONFIG, PARAMS, prompt)
    logits, _ = forward(CONFIG, PARAMS, padded, valid=valid)
    np.testing.assert_allclose(logits[3:], plain, atol=1e-5)  # rotary positions are relative
    tokens = generate(CONFIG, PARAMS, padded, 6, jax.random.key(0), valid=valid)
    np.testing.assert_array_equal(tokens, generate(CONFIG, PARAMS, prompt, 6, jax.random.key(0)))


def test_a_low_rank_member_runs_inside_the_forward_pass():
    """Every matrix as a LowRank view (the embedding and a tied head included) gives the
    logits of the same weights formed."""
    tied = LMConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=4, d_ff=48, tie_embeddings=True)
    params = init_params(tied, jax.random.key(2))
    keys = iter(jax.random.split(jax.random.key(3), 64))

    def view(w):
        if w.ndim < 2:
            return w
        a = jax.random.normal(next(keys), (w.shape[0], 2))
        b = jax.random.normal(next(keys), (w.shape[1], 2))
        return LowRank(w=w, a=a, b=b, scale=jnp.asarray(0.05))

    member = jax.tree.map(view, params)
    formed = jax.tree.map(
        lambda v: v.dense() if isinstance(v, LowRank) else v,
        member,
        is_leaf=lambda v: isinstance(v, LowRank),
    )
    np.testing.assert_allclose(
        forward(tied, member, TOKENS)[0], forward(tied, formed, TOKENS)[0], atol=1e-5
    )


@pytest.mark.parametrize("tie", [False, pytest.param(True, marks=SLOW)])
def test_weights_round_trip_through_transformers(tmp_path, tie):
    """Ours written in PyTorch's layout load into transformers' model with the same logits;
    transformers' own save (Flax layout) loads into ours with the same logits."""
    config = LMConfig(
        vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, tie_embeddings=tie
    )
    params = init_params(config, jax.random.key(4))
    save_pretrained(tmp_path / "ours", config, params)
    with jax.numpy_rank_promotion("allow"):
        model = transformers.FlaxLlamaForCausalLM.from_pretrained(tmp_path / "ours")
    ref = logits_of(model, TOKENS)
    np.testing.assert_allclose(forward(config, params, TOKENS)[0], ref, atol=2e-6)
    model.save_pretrained(tmp_path / "theirs", safe_serialization=True)
    loaded_config, loaded = load_pretrained(tmp_path / "theirs", max_len=config.max_len)
    assert loaded_config == config
    np.testing.assert_allclose(forward(config, loaded, TOKENS)[0], ref, atol=2e-6)
    save_pretrained(tmp_path / "flax", config, loaded, layout="flax")
    again = load_pretrained(tmp_path / "flax")[1]
    assert jax.tree.all(jax.tree.map(lambda x, y: bool(jnp.all(x == y)), again, params))


def test_bfloat16_weights_and_activations(tmp_path):
    save_pretrained(tmp_path, CONFIG, PARAMS)
    config, params = load_pretrained(tmp_path, dtype="bfloat16")
    assert {x.dtype for x in jax.tree.leaves(params)} == {jnp.dtype(jnp.bfloat16)}
    logits, _ = forward(config, params, TOKENS)
    full, _ = forward(CONFIG, PARAMS, TOKENS)
    assert logits.dtype == jnp.float32
    np.testing.assert_allclose(logits, full, atol=0.05 * float(jnp.abs(full).max()))


def test_a_mismatched_checkpoint_fails_in_one_line():
    tensors = to_state_dict(CONFIG, PARAMS)
    wider = LMConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=64)
    with pytest.raises(
        ValueError,
        match=r"'model.layers.0.mlp.gate_proj.weight' has shape \(48, 32\), the configuration "
        r"needs \(64, 32\)",
    ):
        from_state_dict(wider, tensors)
    deeper = LMConfig(vocab_size=64, d_model=32, n_layers=3, n_heads=4, n_kv_heads=2, d_ff=48)
    with pytest.raises(ValueError, match="lacks 9 tensor"):
        from_state_dict(deeper, tensors)
    tied = LMConfig(
        vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=48, tie_embeddings=True
    )
    without_head = to_state_dict(tied, init_params(tied, jax.random.key(0)))
    del without_head["lm_head.weight"]  # as transformers saves a tied model
    assert jax.tree.structure(from_state_dict(tied, without_head)) == jax.tree.structure(
        init_params(tied, jax.random.key(0))
    )
    with pytest.raises(ValueError, match=r"'lm_head\.weight' \(a tied head\? set tie_word"):
        from_state_dict(CONFIG, without_head)


def test_bad_configurations_fail_in_one_line():
    with pytest.raises(ValueError, match="n_kv_heads must divide n_heads"):
        LMConfig(n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError, match="exceed max_len=24"):
        generate(CONFIG, PARAMS, TOKENS, 20, jax.random.key(0))
