"""Text-guided painting and the CLIP scorer on a tiny randomly initialised CLIP built here (no
weights are downloaded): the scorer against transformers' own path (its image processor,
``get_image_features``, ``get_text_features``, cosine similarity in numpy) and Pillow's
resampling, ``jit``/``vmap``, loading with ``from_pretrained`` from a local directory, the
task's reward against the scorer of ImageApproximation's painting, the random crops against
Pillow, training with PGPE, and argument errors."""

import json
import math
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

transformers = pytest.importorskip(
    "transformers", reason="CLIPScorer needs transformers 4.x: pip install 'evolax[clip]'"
)
pytest.importorskip("flax", reason="transformers' FlaxCLIPModel needs flax")
if int(transformers.__version__.split(".")[0]) >= 5:
    pytest.skip("transformers 5 has no Flax models (FlaxCLIPModel)", allow_module_level=True)

from evolax.algorithms import PGPE  # noqa: E402
from evolax.optim import clipup  # noqa: E402
from evolax.policies.direct import Direct  # noqa: E402
from evolax.tasks.clip import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD, CLIPScorer  # noqa: E402
from evolax.tasks.image_approximation import ImageApproximation  # noqa: E402
from evolax.tasks.text_painting import TextGuidedPainting, TextGuidedPaintingState  # noqa: E402
from evolax.trainer import Trainer  # noqa: E402

SIZE = 32  # the tiny model's image_size
PROMPTS = ("a red heart", "blue sky")


def random_params(shapes, seed):
    """Random weights of the tiny CLIP at scales that make its embedding vary with the image
    (transformers' initialisation, std 0.02, leaves it almost constant): normal kernels with
    std 1 / sqrt(fan_in), embeddings std 1, biases std 0.1, layer-norm scales 1 plus std 0.1.
    Drawn in numpy: faster here than transformers' own initialisation."""
    rng = np.random.default_rng(seed)

    def draw(path, leaf):
        name = path[-1].key
        noise = rng.standard_normal(leaf.shape).astype(np.float32)
        if name == "kernel":
            return jnp.asarray(noise / math.sqrt(math.prod(leaf.shape[:-1])))
        if name in ("embedding", "class_embedding"):
            return jnp.asarray(noise)
        if name == "scale":
            return jnp.asarray(1 + 0.1 * noise)
        return jnp.asarray(0.1 * noise)  # biases, logit_scale

    return jax.tree_util.tree_map_with_path(draw, shapes)


def write_tokenizer(directory):
    """A CLIP byte-level BPE tokenizer with no merges (one token per character; ids 0-511
    the bytes, 512 start, 513 end of text), saved with ``save_pretrained``."""
    from transformers.models.clip.tokenization_clip import bytes_to_unicode

    chars = list(bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    vocab |= {c + "</w>": 256 + i for i, c in enumerate(chars)}
    vocab |= {"<|startoftext|>": 512, "<|endoftext|>": 513}
    (directory / "vocab.json").write_text(json.dumps(vocab))
    (directory / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = transformers.CLIPTokenizer(directory / "vocab.json", directory / "merges.txt")
    tokenizer.save_pretrained(directory)
    return tokenizer


class TinyCLIP:
    """A tiny CLIP (vision: 32 x 32 images, 8 x 8 patches, width 32, 2 layers; text: 514
    tokens, width 32, 2 layers; 16-dimensional embeddings) with random weights, its tokenizer
    and image processor, saved in ``directory`` as ``from_pretrained`` reads them, and
    transformers' own feature functions (jitted, in batches of ``BATCH``)."""

    BATCH = 8

    def __init__(self, directory):
        self.directory = directory
        self.tokenizer = write_tokenizer(directory)
        config = transformers.CLIPConfig(
            text_config=dict(
                vocab_size=514,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
                max_position_embeddings=16,
                bos_token_id=512,
                eos_token_id=513,
                pad_token_id=513,
            ),
            vision_config=dict(
                image_size=SIZE,
                patch_size=8,
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=4,
            ),
            projection_dim=16,
        )
        self.model = transformers.FlaxCLIPModel(config, _do_init=False)
        shapes = jax.eval_shape(
            lambda key: self.model.init_weights(key, self.model.input_shape),
            jax.random.PRNGKey(0),
        )
        self.params = random_params(shapes, seed=0)
        self.model.save_pretrained(directory, params=self.params)
        self.processor = transformers.CLIPImageProcessor(
            size={"shortest_edge": SIZE}, crop_size={"height": SIZE, "width": SIZE}
        )
        self.processor.save_pretrained(directory)
        self._image = jax.jit(lambda p, x: self.model.get_image_features(x, params=p))
        self._text = jax.jit(lambda p, ids: self.model.get_text_features(ids, params=p))

    def ids(self, prompt):
        """Token ids padded to the context length, as ``CLIPScorer.from_pretrained`` pads."""
        tokens = self.tokenizer([prompt], padding="max_length", max_length=16)
        return np.asarray(tokens["input_ids"])

    def text_features(self, prompt=PROMPTS[0]):
        """``get_text_features`` of the prompt, ``f64[16]``."""
        return np.asarray(self._text(self.params, self.ids(prompt)), np.float64)[0]

    def image_features(self, pixels):
        """``get_image_features`` of normalised ``f32[n, 3, 32, 32]`` pixels, ``f64[n, 16]``."""
        pixels = np.asarray(pixels, np.float32)
        n = len(pixels)
        padded = np.zeros((-(-n // self.BATCH) * self.BATCH, *pixels.shape[1:]), np.float32)
        padded[:n] = pixels
        batches = padded.reshape(-1, self.BATCH, *pixels.shape[1:])
        features = [np.asarray(self._image(self.params, b), np.float64) for b in batches]
        return np.concatenate(features)[:n]

    def scores(self, images, prompt=PROMPTS[0]):
        """transformers' CLIP scores of images in ``[0, 1]``: each channel resized as CLIP's
        processor does (shorter side to 32, Pillow bicubic in float mode, centre crop),
        normalised with OpenAI's constants, ``get_image_features``, cosine in numpy."""
        pixels = np.stack([pil_preprocess(image) for image in images]).transpose(0, 3, 1, 2)
        text = self.text_features(prompt)
        return np.array([cosine(f, text) for f in self.image_features(pixels)])


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return TinyCLIP(tmp_path_factory.mktemp("tiny_clip"))


@pytest.fixture(scope="module")
def scorer(clip):
    return CLIPScorer.from_flax_model(clip.model, clip.ids(PROMPTS[0]), params=clip.params)


def cosine(a, b):
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


def pil_preprocess(image):
    image = np.asarray(image, np.float32)
    height, width = image.shape[:2]
    if (height, width) != (SIZE, SIZE):
        short, long = min(height, width), max(height, width)
        new = (SIZE, int(SIZE * long / short))
        new_height, new_width = new if height <= width else new[::-1]
        image = np.stack(
            [
                np.asarray(
                    Image.fromarray(image[..., c], mode="F").resize(
                        (new_width, new_height), Image.Resampling.BICUBIC
                    )
                )
                for c in range(3)
            ],
            axis=-1,
        )
        top, left = (new_height - SIZE) // 2, (new_width - SIZE) // 2
        image = image[top : top + SIZE, left : left + SIZE]
    return (image - np.array(OPENAI_CLIP_MEAN)) / np.array(OPENAI_CLIP_STD)


def smooth_images(n, height, width, seed=0):
    """``n`` smooth colourful ``uint8`` images (sums of random plane waves)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    freq = rng.uniform(-8, 8, size=(n, 2, 3))
    phase = rng.uniform(0, 2 * np.pi, size=(n, 3))
    waves = freq[:, None, None, 0] * x[None, :, :, None] + freq[:, None, None, 1] * y[..., None]
    rgb = 0.5 + 0.5 * np.sin(waves + phase[:, None, None, :])
    return np.rint(rgb * 255).astype(np.uint8)


def test_scorer_matches_transformers_under_jit_and_vmap(clip, scorer):
    # the model's size, and a larger landscape image the scorer shrinks and crops
    batches = [smooth_images(3, 32, 32, seed=1), smooth_images(3, 40, 48, seed=2)]
    floats = [jnp.asarray(images / 255.0, jnp.float32) for images in batches]
    traces = []

    @eqx.filter_jit
    def scores(scorer, batches):
        traces.append(1)
        return [jax.vmap(scorer)(images) for images in batches]

    other = CLIPScorer.from_flax_model(clip.model, clip.ids(PROMPTS[1]), params=clip.params)
    got, got_other = scores(scorer, floats), scores(other, floats)
    assert len(traces) == 1  # another prompt reuses the compiled program
    text = clip.text_features()
    for images, images_float, values, values_other in zip(
        batches, floats, got, got_other, strict=True
    ):
        assert values.shape == (3,) and values.dtype == jnp.float32
        # transformers' own path: its image processor (resizing uint8 images in Pillow)
        pixels = clip.processor(images=list(images), return_tensors="np")["pixel_values"]
        expected = [cosine(f, text) for f in clip.image_features(pixels)]
        # resized images differ by the processor's rounding to uint8 (at most 1/255 a pixel)
        atol = 1e-5 if images.shape[1:3] == (SIZE, SIZE) else 3e-3
        np.testing.assert_allclose(values, expected, atol=atol)
        assert np.ptp(expected) > 0.01  # the images score differently: the check has power
        # the same in float: Pillow's bicubic on float pixels, as the scorer resizes
        np.testing.assert_allclose(values, clip.scores(images_float), atol=1e-5)
        np.testing.assert_allclose(values_other, clip.scores(images_float, PROMPTS[1]), atol=1e-5)
    assert jax.eval_shape(scorer, floats[0][0]).shape == ()


@pytest.mark.parametrize("shape", [(32, 32), (40, 48), (56, 36), (24, 20), (20, 33)])
def test_preprocess_matches_pillow(scorer, shape):
    """Shorter side to 32 (Pillow's bicubic on float pixels), centre crop, normalisation."""
    image = smooth_images(1, *shape, seed=sum(shape))[0] / 255.0
    got = eqx.filter_jit(lambda scorer, image: scorer.preprocess(image))(scorer, image)
    assert got.shape == (SIZE, SIZE, 3) and got.dtype == jnp.float32
    np.testing.assert_allclose(got, pil_preprocess(image), atol=1e-4)


def test_from_pretrained_reads_a_local_directory(clip, tmp_path):
    # the normalisation constants come from the directory's image processor
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    for name in ("config.json", "flax_model.msgpack"):
        (tmp_path / name).write_bytes((clip.directory / name).read_bytes())
    clip.tokenizer.save_pretrained(tmp_path)
    transformers.CLIPImageProcessor(
        size={"shortest_edge": SIZE},
        crop_size={"height": SIZE, "width": SIZE},
        image_mean=mean,
        image_std=std,
    ).save_pretrained(tmp_path)
    loaded = CLIPScorer.from_pretrained(str(tmp_path), PROMPTS[1])
    assert loaded.image_size == SIZE
    np.testing.assert_allclose(loaded.image_mean, mean)
    np.testing.assert_allclose(loaded.image_std, std)
    text = clip.text_features(PROMPTS[1])
    np.testing.assert_allclose(loaded.text_embedding, text / np.linalg.norm(text), atol=1e-6)
    image = jnp.asarray(smooth_images(1, 32, 32, seed=3)[0] / 255.0, jnp.float32)
    pixels = ((np.asarray(image) - mean) / np.array(std)).transpose(2, 0, 1)[None]
    expected = cosine(clip.image_features(pixels)[0], text)
    np.testing.assert_allclose(float(eqx.filter_jit(loaded)(image)), expected, atol=1e-5)


# One task configuration for the reward and training tests, so that they share the compiled
# program of `paint_and_score` (compiling the CLIP model is most of this file's time).
N_TRIANGLES, CANVAS, ALPHA_SCALE, BACKGROUND = 8, (24, 32), 0.8, (0.1, 0.2, 0.3)
N_GENOMES = 32


def painting_task(scorer):
    return TextGuidedPainting(
        scorer,
        n_triangles=N_TRIANGLES,
        size=CANVAS,
        alpha_scale=ALPHA_SCALE,
        background=BACKGROUND,
    )


@eqx.filter_jit
def paint_and_score(task, genomes):
    """``task.step`` from the empty canvas for each of ``N_GENOMES`` genomes."""
    assert genomes.shape[0] == N_GENOMES
    return jax.vmap(lambda genome: task.step(task.reset(None), genome, None))(genomes)


def test_reward_is_the_score_of_the_painting(clip, scorer):
    task = painting_task(scorer)
    assert task.max_steps == 1 and task.obs_shape == (1,)
    assert task.action_shape == (N_TRIANGLES, 10)
    state = task.reset(jax.random.key(0))
    assert isinstance(state, TextGuidedPaintingState) and bool(jnp.isnan(state.score))
    np.testing.assert_allclose(state.canvas, np.broadcast_to(BACKGROUND, (*CANVAS, 3)))
    # numpy draws: an eager jax.random call compiles a program of its own
    genomes = jnp.asarray(np.random.default_rng(1).normal(size=(N_GENOMES, N_TRIANGLES, 10)))
    states, rewards, done = paint_and_score(task, genomes)
    # the painting of the same options, tested against numpy in test_image_approximation.py
    painter = ImageApproximation(
        np.zeros((*CANVAS, 3), np.float32),
        n_triangles=N_TRIANGLES,
        alpha_scale=ALPHA_SCALE,
        background=BACKGROUND,
    )
    some = genomes[:4]
    paintings = np.asarray(eqx.filter_jit(lambda p, g: jax.vmap(p.paint)(g))(painter, some))
    expected = clip.scores(paintings)
    np.testing.assert_allclose(rewards[:4], expected, atol=1e-5)
    np.testing.assert_allclose(states.canvas[:4], paintings, atol=1e-6)
    np.testing.assert_array_equal(states.score, rewards)
    assert bool(jnp.all(done)) and rewards.shape == (N_GENOMES,) and rewards.dtype == jnp.float32
    assert np.ptp(expected) > 0.01


def pil_crop(image, box, height, width):
    """Pillow's bilinear resampling of ``box`` = (top, left, height, width) of a float image
    to ``height x width``, channel by channel."""
    top, left, h, w = (float(v) for v in box)
    return np.stack(
        [
            np.asarray(
                Image.fromarray(image[..., c], mode="F").resize(
                    (width, height), Image.Resampling.BILINEAR, box=(left, top, left + w, top + h)
                )
            )
            for c in range(3)
        ],
        axis=-1,
    )


def test_random_crops_and_their_mean_score():
    """The crops against Pillow's resampling of the boxes; the reward against the mean score
    of Pillow's crops under a (cheap, linear) scorer."""
    height, width, n_crops = 24, 40, 3
    weights = np.random.default_rng(2).normal(size=(height, width, 3)).astype(np.float32)

    def scorer(image):
        return jnp.sum(image * weights)

    task = TextGuidedPainting(scorer, n_triangles=5, size=(height, width), n_crops=n_crops)
    whole = TextGuidedPainting(  # crops of the whole canvas
        scorer,
        n_triangles=5,
        size=(height, width),
        n_crops=2,
        crop_scale=(1.0, 1.0),
        crop_ratio=(width / height, width / height),
    )
    genome = jnp.asarray(np.random.default_rng(3).uniform(size=(5, 10)), jnp.float32)

    @eqx.filter_jit
    def run(task, whole, genome, key):
        keys = jax.random.split(key, 3)
        painting = task.paint(genome)
        boxes = jax.vmap(task.crop_boxes)(keys)
        crops = jax.vmap(task.crops, in_axes=(None, 0))(painting, keys)
        rewards = jax.vmap(lambda key: task.step(task.reset(None), genome, key)[1])(keys)
        return painting, boxes, crops, rewards, whole.crop_boxes(key)

    outputs = run(task, whole, genome, jax.random.key(4))
    painting, all_boxes, all_crops, rewards, whole_boxes = (np.asarray(x) for x in outputs)
    for boxes, crops, reward in zip(all_boxes.astype(np.float64), all_crops, rewards, strict=True):
        top, left, h, w = boxes.T
        assert boxes.shape == (n_crops, 4)
        assert np.all(top >= 0) and np.all(left >= 0)
        assert np.all(top + h <= height + 1e-4) and np.all(left + w <= width + 1e-4)
        assert np.all(w / h >= 0.75 - 1e-5) and np.all(w / h <= 4 / 3 + 1e-5)
        assert np.all(h * w <= 0.9 * height * width * (1 + 1e-5))
        expected = np.stack([pil_crop(painting, box, height, width) for box in boxes])
        np.testing.assert_allclose(crops, expected, atol=1e-4)
        expected_reward = np.mean(np.sum(expected * weights, axis=(1, 2, 3)))
        np.testing.assert_allclose(reward, expected_reward, rtol=1e-4)
    assert not np.allclose(all_boxes[0], all_boxes[1])
    # areas drawn in [0.7, 0.9] of the canvas, shrunk only when the box did not fit
    areas = all_boxes[..., 2] * all_boxes[..., 3] / (height * width)
    assert np.all(areas > 0.3) and np.any(areas >= 0.7 - 1e-5)
    np.testing.assert_allclose(whole_boxes, [[0, 0, height, width]] * 2, atol=1e-4)
    with pytest.raises(ValueError, match="pass a PRNG key"):
        task.step(task.reset(None), genome, None)


def test_training_with_pgpe_raises_the_score(scorer):
    """PGPE with ClipUp (EvoJAX's abstract-painting settings, pop 32), 8 triangles on a 24 x 32
    canvas, 200 generations (compiling them takes longer than running them): the centre's
    score rises well above that of the initial triangles and of the best of 30 random
    paintings (measured: 0.05 -> 0.28, the best random painting 0.10; PGPE seeds 0-4 end at
    0.24-0.29)."""
    task = painting_task(scorer)
    algorithm = PGPE(pop_size=32, optimizer=clipup(0.15, max_speed=0.15), init_std=0.1)
    trainer = Trainer(algorithm, Direct(), task)

    @eqx.filter_jit
    def train(trainer, key):
        state = trainer.init(key)
        initial = algorithm.best(state.algo_state)
        state, history = trainer.run(state, 200)
        return initial, algorithm.best(state.algo_state), history

    initial, final, history = train(trainer, jax.random.key(0))
    random = np.random.default_rng(9).uniform(size=(N_GENOMES - 2, N_TRIANGLES, 10))
    _, scores, _ = paint_and_score(task, jnp.concatenate([initial[None], final[None], random]))
    before, after, best_random = float(scores[0]), float(scores[1]), float(jnp.max(scores[2:]))
    assert after > before + 0.1, (before, after)
    assert after > best_random + 0.05, (after, best_random)
    assert float(history["fitness_mean"][-1]) > float(history["fitness_mean"][0]) + 0.05


@pytest.mark.slow
def test_training_on_random_crops_raises_the_score_of_the_whole_painting(scorer):
    """The paper's augmentation: trained on the mean score of 4 random crops (EvoJAX's crop
    ranges), the centre's score on the whole canvas rises too (measured: 0.06 -> 0.30 in 300
    generations of pop 64 with 16 triangles on 32 x 32)."""
    task = TextGuidedPainting(scorer, n_triangles=16, size=(32, 32), n_crops=4)
    whole = TextGuidedPainting(scorer, n_triangles=16, size=(32, 32))
    algorithm = PGPE(
        pop_size=64,
        optimizer=clipup(0.15, momentum=0.9, max_speed=0.15),
        init_std=0.1,
        std_lr=0.1,
        std_max_change=0.2,
    )
    trainer = Trainer(algorithm, Direct(), task, test_task=whole)

    @eqx.filter_jit
    def train(trainer, key):
        state = trainer.init(key)
        before = trainer.test(state, key, n_episodes=1)
        state, history = trainer.run(state, 300)
        return before, trainer.test(state, key, n_episodes=1), history

    before, after, history = train(trainer, jax.random.key(0))
    assert float(after[0]) > float(before[0]) + 0.1, (before, after)
    assert float(history["fitness_mean"][-1]) > float(history["fitness_mean"][0]) + 0.05


def test_render_shows_the_painting_and_its_score(scorer):
    task = TextGuidedPainting(scorer, n_triangles=4, size=(24, 40))
    canvas = np.random.default_rng(5).uniform(size=(24, 40, 3)).astype(np.float32)
    picture = task.render(TextGuidedPaintingState(obs=jnp.zeros(1), canvas=canvas, score=0.25))
    assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
    scale, gap = -(-128 // 40), 8
    shown = picture[gap : gap + 24 * scale : scale, gap : gap + 40 * scale : scale]
    np.testing.assert_array_equal(shown, np.rint(np.asarray(canvas) * 255))
    # the caption: "score 0.2500", "not scored" before the first step
    caption = slice(gap + 24 * scale, None)
    empty = task.render(task.reset(None))
    assert not np.array_equal(picture[caption], empty[caption])
    with pytest.raises(ValueError, match="render draws one state"):
        task.render(task.reset(None).replace(canvas=jnp.zeros((2, 24, 40, 3))))


def test_rejects_bad_arguments(clip, scorer, monkeypatch):
    model, params = clip.model, clip.params
    with pytest.raises(TypeError, match="scorer must be callable"):
        TextGuidedPainting("a red heart")
    with pytest.raises(ValueError, match=r"scorer must map an image f32\[8, 8, 3\] to a scalar"):
        TextGuidedPainting(lambda image: image.mean(axis=-1), size=(8, 8))
    with pytest.raises(ValueError, match="must be one RGB image"):
        TextGuidedPainting(lambda image: scorer(image[0]), size=(32, 32))
    for n in (0, 2.5, True):
        with pytest.raises(ValueError, match="n_triangles must be a positive integer"):
            TextGuidedPainting(scorer, n_triangles=n)
    with pytest.raises(ValueError, match="needs n_triangles >= 2"):
        TextGuidedPainting(scorer, n_triangles=1)
    TextGuidedPainting(scorer, n_triangles=1, squash="clip", size=(8, 8))
    for size in ((0, 4), (4,), 4):
        with pytest.raises(ValueError, match="size"):
            TextGuidedPainting(scorer, size=size)
    with pytest.raises(ValueError, match=r"alpha_scale must be in \(0, 1\]"):
        TextGuidedPainting(scorer, alpha_scale=1.5)
    with pytest.raises(ValueError, match="background must be an RGB colour"):
        TextGuidedPainting(scorer, background=(1.0, 1.0))
    with pytest.raises(ValueError, match="squash must be one of"):
        TextGuidedPainting(scorer, squash="sigmoid")
    for n_crops in (-1, 1.5, True):
        with pytest.raises(ValueError, match="n_crops must be a non-negative integer"):
            TextGuidedPainting(scorer, n_crops=n_crops)
    for crop_scale in ((0.0, 0.5), (0.9, 0.7), (0.5, 1.2), "ab", (0.5,)):
        with pytest.raises(ValueError, match="crop_scale must be a \\(low, high\\) pair"):
            TextGuidedPainting(scorer, crop_scale=crop_scale)
    for crop_ratio in ((0.0, 1.0), (2.0, 1.0), (1.0, math.inf)):
        with pytest.raises(ValueError, match="crop_ratio must be a \\(low, high\\) pair"):
            TextGuidedPainting(scorer, crop_ratio=crop_ratio)
    task = TextGuidedPainting(scorer, n_triangles=4, size=(8, 8))
    with pytest.raises(ValueError, match=r"action_shape \(4, 10\)"):
        task.step(task.reset(None), jnp.zeros((4, 9)), None)
    # the scorer
    ids = clip.ids(PROMPTS[0])[0]
    with pytest.raises(TypeError, match=r"must be a transformers\.FlaxCLIPModel"):
        CLIPScorer.from_flax_model(object(), ids)
    with pytest.raises(ValueError, match="input_ids must hold one tokenised prompt"):
        CLIPScorer.from_flax_model(model, [ids, ids], params=params)
    with pytest.raises(ValueError, match="input_ids must be integer token ids"):
        CLIPScorer.from_flax_model(model, np.asarray(ids, np.float32), params=params)
    with pytest.raises(ValueError, match="attention_mask must have the shape of input_ids"):
        CLIPScorer.from_flax_model(model, ids, attention_mask=[1, 1], params=params)
    with pytest.raises(ValueError, match="image_std must be three positive finite numbers"):
        CLIPScorer.from_flax_model(model, ids, image_std=(0.2, 0.0, 0.2), params=params)
    with pytest.raises(ValueError, match="image_mean must be three finite numbers"):
        CLIPScorer.from_flax_model(model, ids, image_mean=(0.5, 0.5), params=params)
    with pytest.raises(ValueError, match="params must be the FlaxCLIPModel's parameters"):
        CLIPScorer.from_flax_model(model, ids, params={"text_model": {}})
    with pytest.raises(ValueError, match=r"image must be one RGB image .* got \(4, 32, 32, 3\)"):
        scorer(jnp.zeros((4, 32, 32, 3)))
    with pytest.raises(ValueError, match="prompt must be a non-empty string"):
        CLIPScorer.from_pretrained("openai/clip-vit-base-patch32", "  ")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'evolax\[clip\]'"):
        CLIPScorer.from_flax_model(model, ids, params=params)
