"""Score an image by its CLIP similarity to a text prompt, in JAX.

CLIP (Radford et al., 2021, "Learning Transferable Visual Models From Natural Language
Supervision", arXiv:2103.00020) embeds images and texts in one space; the cosine similarity of
a painting's embedding and a prompt's is the fitness with which Tian & Ha (2021, "Modern
Evolution Strategies for Creativity", arXiv:2109.08857) evolve abstract paintings (see
:class:`~evolax.tasks.text_painting.TextGuidedPainting`).

:class:`CLIPScorer` runs the Flax CLIP models of Hugging Face ``transformers``
(``FlaxCLIPModel``; the 4.x releases are the last with Flax models):
``pip install 'evolax[clip]'``. The package is imported only when a scorer is built.
"""

from __future__ import annotations

import functools
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, PyTree

from evolax.compiled import ByIdentity
from evolax.validation import check_positive_int

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
"""The per-channel (RGB) mean CLIP's preprocessing subtracts from pixels in ``[0, 1]``."""

OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
"""The per-channel (RGB) standard deviation CLIP's preprocessing divides by."""

VISION_PARAMS = ("vision_model", "visual_projection", "logit_scale")
"""The top-level entries of a ``FlaxCLIPModel``'s parameters a scorer keeps (the image tower,
its projection, and the scalar the model's ``setup`` asks for); the text tower is dropped once
the prompt is embedded."""

INSTALL_HINT = "pip install 'evolax[clip]'"


def _transformers() -> Any:
    """The ``transformers`` package, or an ``ImportError`` saying how to install it."""
    try:
        import transformers
    except ImportError as error:
        raise ImportError(
            "CLIPScorer needs Hugging Face transformers 4.x and flax (transformers 5 has no "
            f"Flax models): {INSTALL_HINT}"
        ) from error
    if int(transformers.__version__.split(".")[0]) >= 5:
        raise ImportError(
            f"CLIPScorer needs transformers 4.x (FlaxCLIPModel), found {transformers.__version__}"
            f"; transformers 5 dropped the Flax models: {INSTALL_HINT}"
        )
    return transformers


def _image_features(module: Any, pixel_values: Array) -> Array:
    """``FlaxCLIPModel.get_image_features`` of NHWC pixels: the image tower's pooled output
    through the visual projection (run with ``module.apply(..., method=_image_features)``)."""
    pooled = module.vision_model(pixel_values=pixel_values, deterministic=True)[1]
    return module.visual_projection(pooled)


def _text_method(module: Any, input_ids: Array, mask: Array, positions: Array) -> Array:
    """``FlaxCLIPModel.get_text_features``: the text tower's pooled output (at the end-of-text
    token) through the text projection (run with ``module.apply(..., method=_text_method)``)."""
    outputs = module.text_model(
        input_ids=input_ids, attention_mask=mask, position_ids=positions, deterministic=True
    )
    return module.text_projection(outputs[1])


@functools.partial(jax.jit, static_argnums=0)
def _text_features(model: ByIdentity, params: PyTree, input_ids: Array, mask: Array) -> Array:
    """The prompt's (unnormalised) embedding, ``f32[1, dim]``, compiled once per model (the
    static reference holds the Flax module, its configuration, not its weights)."""
    positions = jnp.broadcast_to(jnp.arange(input_ids.shape[-1]), input_ids.shape)
    return model.obj.apply({"params": params}, input_ids, mask, positions, method=_text_method)


def _check_rgb(name: str, value: object, positive: bool) -> tuple[float, float, float]:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.full(1, np.nan)
    if array.shape != (3,) or not np.all(np.isfinite(array)) or (positive and np.any(array <= 0)):
        kind = "positive finite" if positive else "finite"
        raise ValueError(
            f"{name} must be three {kind} numbers (one per RGB channel), got {value!r}"
        )
    return (float(array[0]), float(array[1]), float(array[2]))


class CLIPScorer(eqx.Module):
    """The cosine similarity between CLIP's embeddings of an image and of a text prompt.

    ``scorer(image)`` takes one RGB image ``f32[height, width, 3]`` in ``[0, 1]`` of any size
    and returns ``f32[]`` in ``[-1, 1]`` (higher: closer to the prompt). It preprocesses the
    image as CLIP's image processor does, in JAX: resizes it (bicubic, antialiased when
    shrinking) so that its shorter side is the model's ``image_size``, crops the centre
    square, normalises each channel with ``image_mean`` and ``image_std``; then it embeds the
    image with the model's vision tower and projection and compares the embedding with the
    prompt's (computed once, at construction). It is a pure function of its fields:
    ``jit``, ``vmap`` (over images) and ``grad`` work, and the model's weights are array
    leaves, so pass the scorer (or the task holding it) to ``eqx.filter_jit`` as an argument
    rather than closing over it, or the weights become constants of the compiled program.
    Scorers built from one model share compiled programs whatever their prompts.

    Build one with :meth:`from_pretrained` (weights from the Hugging Face hub or a local
    directory) or :meth:`from_flax_model` (a ``transformers.FlaxCLIPModel`` you built).

    Attributes:
        params: the ``FlaxCLIPModel`` parameters of the image tower (:data:`VISION_PARAMS`).
        text_embedding: the prompt's embedding divided by its norm, ``f32[dim]``.
        module: the model's Flax module (static).
        image_size: the side of the square images the model reads (224 for ViT-B/32).
        image_mean: per-channel mean of the normalisation (OpenAI's by default).
        image_std: per-channel standard deviation of the normalisation.
    """

    params: PyTree
    text_embedding: Float[Array, " dim"]
    module: ByIdentity = eqx.field(static=True)
    image_size: int = eqx.field(static=True)
    image_mean: tuple[float, float, float] = eqx.field(static=True, default=OPENAI_CLIP_MEAN)
    image_std: tuple[float, float, float] = eqx.field(static=True, default=OPENAI_CLIP_STD)

    def __check_init__(self):
        check_positive_int("image_size", self.image_size)
        if jnp.ndim(self.text_embedding) != 1:
            raise ValueError(
                "text_embedding must have shape (dim,), got "
                f"{tuple(jnp.shape(self.text_embedding))}"
            )
        _check_rgb("image_mean", self.image_mean, positive=False)
        _check_rgb("image_std", self.image_std, positive=True)

    @classmethod
    def from_flax_model(
        cls,
        model: Any,
        input_ids: ArrayLike,
        *,
        attention_mask: ArrayLike | None = None,
        params: PyTree | None = None,
        image_mean: tuple[float, float, float] = OPENAI_CLIP_MEAN,
        image_std: tuple[float, float, float] = OPENAI_CLIP_STD,
    ) -> CLIPScorer:
        """A scorer from a ``transformers.FlaxCLIPModel`` and a tokenised prompt.

        Args:
            model: a ``transformers.FlaxCLIPModel`` (its ``dtype`` sets the compute dtype).
            input_ids: the prompt's token ids, ``int[seq]`` or ``int[1, seq]``, as the
                model's tokenizer makes them (start and end tokens included).
            attention_mask: ``int[seq]`` or ``int[1, seq]``; ``None``: every token counts.
            params: the model's parameters; ``None``: ``model.params``.
            image_mean: per-channel mean the model's image processor normalises with.
            image_std: per-channel standard deviation it normalises with.

        Raises:
            TypeError: ``model`` is not a ``FlaxCLIPModel``.
            ValueError: ``input_ids`` or ``attention_mask`` of another shape, or a prompt
                whose embedding is zero or not finite.
        """
        transformers = _transformers()
        if not isinstance(model, transformers.FlaxCLIPModel):
            raise TypeError(f"model must be a transformers.FlaxCLIPModel, got {type(model)}")
        image_mean = _check_rgb("image_mean", image_mean, positive=False)
        image_std = _check_rgb("image_std", image_std, positive=True)
        params = model.params if params is None else params
        if params is None or not all(name in params for name in VISION_PARAMS):
            raise ValueError(
                f"params must be the FlaxCLIPModel's parameters with entries {VISION_PARAMS} "
                "(build the model with _do_init=True or pass params)"
            )
        ids = np.asarray(input_ids)
        if ids.ndim == 1:
            ids = ids[None]
        if ids.ndim != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
            raise ValueError(
                "input_ids must hold one tokenised prompt, shape (seq,) or (1, seq), got "
                f"{np.shape(input_ids)}"
            )
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"input_ids must be integer token ids, got dtype {ids.dtype}")
        mask = np.ones_like(ids)
        if attention_mask is not None:
            mask = np.asarray(attention_mask).reshape(1, -1)
            if mask.shape != ids.shape:
                raise ValueError(
                    f"attention_mask must have the shape of input_ids {ids.shape[1:]}, got "
                    f"{np.shape(attention_mask)}"
                )
        features = _text_features(ByIdentity(model.module), params, ids, mask)
        embedding = np.asarray(features, np.float64)[0]
        norm = np.linalg.norm(embedding)
        if not np.isfinite(norm) or norm == 0:
            raise ValueError(f"the prompt's embedding must be finite and non-zero, norm {norm}")
        return cls(
            params={name: params[name] for name in VISION_PARAMS},
            text_embedding=jnp.asarray(embedding / norm, jnp.float32),
            module=ByIdentity(model.module),
            image_size=int(model.config.vision_config.image_size),
            image_mean=image_mean,
            image_std=image_std,
        )

    @classmethod
    def from_pretrained(
        cls, name_or_path: str, prompt: str, *, dtype: Any = jnp.float32, **kwargs: Any
    ) -> CLIPScorer:
        """A scorer from a pretrained CLIP: model, tokenizer and image processor.

        Loads ``transformers.FlaxCLIPModel``, ``AutoTokenizer`` and ``CLIPImageProcessor``
        from ``name_or_path``: a Hugging Face hub id such as
        ``"openai/clip-vit-base-patch32"`` (downloaded once into the Hugging Face cache,
        ``~/.cache/huggingface``; ``HF_HUB_OFFLINE=1`` then reads only the cache) or a local
        directory written by ``save_pretrained``. The prompt is tokenised (truncated to the
        text model's context) and embedded once; the normalisation constants come from the
        image processor.

        Args:
            name_or_path: hub id or directory.
            prompt: the text the paintings should match, e.g. ``"a red heart"``.
            dtype: the compute dtype of the model (``jnp.bfloat16`` halves the time on GPUs
                and TPUs; the weights stay ``float32``).
            **kwargs: passed to ``FlaxCLIPModel.from_pretrained`` (``revision``,
                ``cache_dir``, ``from_pt=True`` for checkpoints with PyTorch weights only,
                which needs ``torch``, ...).
        """
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"prompt must be a non-empty string, got {prompt!r}")
        transformers = _transformers()
        # _do_init=False: no random initialisation to overwrite, (model, params) come back
        model, params = transformers.FlaxCLIPModel.from_pretrained(
            name_or_path, dtype=dtype, _do_init=False, **kwargs
        )
        tokenizer = transformers.AutoTokenizer.from_pretrained(name_or_path)
        processor = transformers.CLIPImageProcessor.from_pretrained(name_or_path)
        # padded to the context length (77 for OpenAI's models): the attention mask and the
        # pooling at the end-of-text token ignore the padding, and every prompt then has the
        # same shape (one compilation of the text tower)
        tokens = tokenizer(
            [prompt],
            padding="max_length",
            truncation=True,
            max_length=model.config.text_config.max_position_embeddings,
            return_tensors="np",
        )
        return cls.from_flax_model(
            model,
            tokens["input_ids"],
            attention_mask=tokens["attention_mask"],
            params=params,
            image_mean=tuple(processor.image_mean),
            image_std=tuple(processor.image_std),
        )

    def preprocess(self, image: Float[Array, "h w 3"]) -> Float[Array, "size size 3"]:
        """CLIP's preprocessing of one image in ``[0, 1]``: the shorter side resized to
        ``image_size`` (bicubic; the longer to ``int(image_size * long / short)``), the centre
        ``image_size`` square, normalised per channel, ``f32[image_size, image_size, 3]``."""
        if jnp.ndim(image) != 3 or jnp.shape(image)[2] != 3:
            raise ValueError(
                "image must be one RGB image of shape (height, width, 3), got "
                f"{tuple(jnp.shape(image))}; vmap the scorer over a batch"
            )
        image = jnp.asarray(image, jnp.float32)
        height, width = image.shape[:2]
        size = self.image_size
        if (height, width) != (size, size):
            short, long = min(height, width), max(height, width)
            new_long = int(size * long / short)
            new_height, new_width = (size, new_long) if height <= width else (new_long, size)
            if (new_height, new_width) != (height, width):
                image = jax.image.resize(image, (new_height, new_width, 3), "bicubic")
            top, left = (new_height - size) // 2, (new_width - size) // 2
            image = image[top : top + size, left : left + size]
        mean = jnp.asarray(self.image_mean, jnp.float32)
        std = jnp.asarray(self.image_std, jnp.float32)
        return (image - mean[None, None, :]) / std[None, None, :]

    def image_embedding(self, image: Float[Array, "h w 3"]) -> Float[Array, " dim"]:
        """CLIP's (unnormalised) embedding of one image in ``[0, 1]``, ``f32[dim]``."""
        pixels = self.preprocess(image)
        features = self.module.obj.apply(
            {"params": self.params}, pixels[None], method=_image_features
        )
        return features[0].astype(jnp.float32)

    def __call__(self, image: Float[Array, "h w 3"]) -> Float[Array, ""]:
        """The cosine similarity of the image's embedding and the prompt's, ``f32[]``."""
        embedding = self.image_embedding(image)
        norm = jnp.maximum(jnp.linalg.norm(embedding), 1e-12)
        return jnp.dot(embedding / norm, self.text_embedding)
