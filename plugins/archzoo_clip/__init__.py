"""archzoo plugin: CLIP, the image and text dual encoder, as transformers 5.23 builds it (model type ``clip``).

CLIP (Radford et al. 2021) embeds an image and a caption into one space. Its **text tower** adds a learned
position (``max_position_embeddings``, 77 in every released model) to each token embedding, runs pre-LN layers
(LayerNorm, self-attention under a causal mask, add; LayerNorm, an MLP, add: ``quick_gelu`` in OpenAI's models,
GELU in LAION's) and a final LayerNorm,
and pools the hidden state of the end-of-text token. Its **vision tower** cuts the image into
``⌊image_size / patch_size⌋²`` patches with a bias-free convolution, puts a learned class embedding before them, adds
learned positions (one per patch and one for the class token), normalises (``pre_layrnorm``), runs the same pre-LN
layers over those tokens and normalises the class token (``post_layernorm``). ``CLIPModel`` projects both pooled
vectors to ``projection_dim`` (``text_projection`` and ``visual_projection``, no bias), normalises them and scores
them with one product, scaled by ``logit_scale``, a single learned parameter. ``CLIPTextModel`` and
``CLIPVisionModel`` are the towers alone, ``...WithProjection`` a tower with its projection, and
``CLIPForImageClassification`` the vision tower with a linear classifier on the mean of its patch tokens.

**What N means.** One forward pass reads one image at the configuration's ``image_size`` and N caption tokens. N
is the caption's length: at most the text tower's learned positions (``max_positions``, 77), and a longer N is
refused, as transformers refuses it. The image always gives ``⌊image_size / patch_size⌋² + 1`` tokens, so the FLOPs
are a function of N through the text tower only; the vision-only classes read no caption, and their FLOPs do not
depend on N at all.

Every parameter and forward FLOP equals what transformers builds and ``FlopCounterMode`` counts (eager attention),
for every class. The causal mask of the text tower changes no product: eager attention computes the full
``N x N`` scores. CLIP does not generate: its text tower keeps no key/value cache, so there is no prefill and no
decode step. OpenCLIP's published model profile (parameters, and image and text GFLOPs at 77 tokens) equals these
figures to its two decimals for every model it lists here. A training step's loss is taken from the class's main output (``logits_per_image`` for CLIPModel, the
logits of the classifier, else the last hidden state, where the projections of the ``...WithProjection`` classes
and the pooled vectors are off the loss path).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Self

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import MAX_SIZE, check_activation
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    learned_tensor,
    linear,
    off_loss_path,
    patch_embedding,
    repeat,
    with_modules,
)
from archzoo.formula import Poly, const
from archzoo.hf_config import DROPOUT, INITIALISATION, NORM_EPSILON, TOKEN_ID, HFTable, hf_reader
from archzoo.plugin_parts import LABELS, NumLabels, architectures_hook, hf_readers_hook, num_labels_field
from archzoo.symbols import declare_symbol, symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

#: archzoo's head -> transformers' class
CLASSES = {
    "model": "CLIPModel",
    "text": "CLIPTextModel",
    "text_projection": "CLIPTextModelWithProjection",
    "vision": "CLIPVisionModel",
    "vision_projection": "CLIPVisionModelWithProjection",
    "image_classification": "CLIPForImageClassification",
}
#: the heads that run the text tower (and so read N caption tokens) and those that run the vision tower
TEXT_HEADS = ("model", "text", "text_projection")
VISION_HEADS = ("model", "vision", "vision_projection", "image_classification")

# The symbols of the vision tower (the text tower's are the shared L, V, P, d, h, d_h and d_ff) and of the heads.
VISION_LAYERS = declare_symbol("L_v", latex="L_{v}", meaning="vision tower layers (vision_n_layers)", order=3)
VISION_WIDTH = declare_symbol("d_v", latex="d_{v}", meaning="vision tower width (vision_d_model)", order=24)
VISION_HEADS_SYMBOL = declare_symbol("h_v", latex="h_{v}", meaning="vision attention heads (vision_n_heads)", order=25)
VISION_FF = declare_symbol(
    "d_ff_v", latex="d_{\\mathrm{ff},v}", meaning="vision feed-forward width (vision_d_ff)", order=26
)
CHANNELS = declare_symbol("C", latex="C", meaning="image channels (channels)", order=30)
PATCH = declare_symbol("p", latex="p", meaning="patch side in pixels (patch_size)", order=31)
PATCHES = declare_symbol("n_p", latex="n_{p}", meaning="patches per image, ⌊image_size / patch_size⌋²", order=32)
PROJECTION = declare_symbol("D", latex="D", meaning="width of the shared embedding space (projection_dim)", order=27)


class ClipConfig(ArchConfig):
    """A CLIP dual encoder or one of its towers; defaults are CLIP ViT-B/32 (Radford et al. 2021), which are also
    transformers' CLIPConfig defaults (openai/clip-vit-base-patch32)."""

    head: Literal[tuple(CLASSES)] = Field(  # type: ignore[valid-type]
        "model",
        description="model (CLIPModel: both towers, both projections, logit_scale), text (CLIPTextModel), "
        "text_projection (CLIPTextModelWithProjection), vision (CLIPVisionModel), vision_projection "
        "(CLIPVisionModelWithProjection), image_classification (CLIPForImageClassification)",
    )
    vocab_size: PositiveInt = Field(
        49408, description="text tower: rows of the token embedding (text_config.vocab_size)"
    )
    max_positions: PositiveInt = Field(
        77,
        description="text tower: learned positions (text_config.max_position_embeddings), the longest caption N",
    )
    d_model: PositiveInt = Field(512, description="text tower width (text_config.hidden_size)")
    n_layers: PositiveInt = Field(12, description="text tower layers (text_config.num_hidden_layers)")
    n_heads: PositiveInt = Field(
        8, description="text tower attention heads (text_config.num_attention_heads); must divide d_model"
    )
    d_ff: PositiveInt = Field(2048, description="text tower MLP width (text_config.intermediate_size)")
    activation: str = Field("quick_gelu", description="text tower MLP activation (text_config.hidden_act)")
    image_size: PositiveInt = Field(224, description="vision tower: input side in pixels (vision_config.image_size)")
    patch_size: PositiveInt = Field(
        32,
        description="vision tower: patch side in pixels (vision_config.patch_size); ⌊image_size / patch_size⌋² patches",
    )
    channels: PositiveInt = Field(3, description="vision tower: input channels (vision_config.num_channels)")
    vision_d_model: PositiveInt = Field(768, description="vision tower width (vision_config.hidden_size)")
    vision_n_layers: PositiveInt = Field(12, description="vision tower layers (vision_config.num_hidden_layers)")
    vision_n_heads: PositiveInt = Field(
        12, description="vision tower attention heads (vision_config.num_attention_heads); must divide vision_d_model"
    )
    vision_d_ff: PositiveInt = Field(3072, description="vision tower MLP width (vision_config.intermediate_size)")
    vision_activation: str = Field("quick_gelu", description="vision tower MLP activation (vision_config.hidden_act)")
    projection_dim: PositiveInt = Field(
        512,
        description="width of the shared embedding space, the projections' output (CLIPModel: the top-level "
        "projection_dim; CLIPTextModelWithProjection and CLIPVisionModelWithProjection: text_config.projection_dim "
        "and vision_config.projection_dim, each class loaded from its sub-configuration alone)",
    )
    num_labels: NumLabels = num_labels_field(
        "CLIPForImageClassification's classes (the top-level num_labels, else the length of id2label; the "
        "sub-configurations' are not read); 0: no classifier (an identity)"
    )

    @model_validator(mode="after")
    def _check(self) -> Self:
        # CLIPTextConfig and CLIPVisionConfig refuse heads that do not divide the width, in every class
        for width, heads, width_key, key in (
            (self.d_model, self.n_heads, "d_model", "n_heads"),
            (self.vision_d_model, self.vision_n_heads, "vision_d_model", "vision_n_heads"),
        ):
            if width % heads:  # both keys named: a --set of either may be the one to change
                raise ValueError(
                    f"{key}: the width {width} ({width_key}) is not divisible by {heads} heads ({key}); transformers' "
                    f"CLIP configuration refuses it; choose a {width_key} that {heads} heads divide, or a divisor "
                    "of the width"
                )
        check_activation(self.activation)
        check_activation(self.vision_activation, key="vision_activation")
        if self.head in VISION_HEADS and self.patch_size > self.image_size:
            raise ValueError(
                f"patch_size: {self.patch_size} pixels is larger than the {self.image_size}-pixel image, so the "
                "vision tower has no patch and transformers' patch convolution fails on the image; choose a patch "
                "no larger than image_size"
            )
        return self

    @property
    def n_patches(self) -> int:
        """Patches per image: the convolution's output, ``⌊image_size / patch_size⌋`` a side (transformers floors)."""
        return (self.image_size // self.patch_size) ** 2


def _text_tower(cfg: ClipConfig) -> Block:
    d = symbol("d", cfg.d_model)
    h = symbol("h", cfg.n_heads)
    layer = composite(
        "layer",
        "encoder_layer",
        [
            layer_norm("attention_norm", d),
            attention(
                "attention",
                d,
                d,
                heads=h,
                d_head=symbol("d_h", cfg.d_model // cfg.n_heads),
                description="causal multi-head self-attention: a causal mask on the full N x N products, which "
                "eager attention computes; no key/value cache is kept",
            ),
            layer_norm("mlp_norm", d),
            feed_forward("mlp", d, symbol("d_ff", cfg.d_ff), activation=cfg.activation),
        ],
        f"pre-LN layer over the N caption tokens: LayerNorm, causal attention, add; LayerNorm, {cfg.activation} MLP, "
        "add",
    )
    embeddings = composite(
        "embeddings",
        "embeddings",
        [
            embedding("token", symbol("V", cfg.vocab_size), d, role="token", description="token embeddings"),
            embedding("position", symbol("P", cfg.max_positions), d, role="position", description="learned positions"),
        ],
        "token embeddings plus learned positions",
    )
    return composite(
        "text_model",
        "encoder",
        [
            embeddings,
            repeat(layer, symbol("L", cfg.n_layers), name="layers"),
            layer_norm("final_norm", d, description=f"LayerNorm({cfg.d_model}) on every token (final_layer_norm)"),
        ],
        "text tower over the N caption tokens, pooled at the end-of-text token",
    )


def _vision_tower(cfg: ClipConfig) -> Block:
    d = VISION_WIDTH(cfg.vision_d_model)
    n_p = PATCHES(cfg.n_patches, definition=f"⌊{cfg.image_size} / {cfg.patch_size}⌋²")
    tokens: Poly = n_p + 1  # the patches and the class token: the image's length, whatever N is
    layer = composite(
        "layer",
        "encoder_layer",
        [
            layer_norm("attention_norm", d),
            attention(
                "attention",
                d,
                d,
                tokens_q=tokens,
                tokens_kv=tokens,
                heads=VISION_HEADS_SYMBOL(cfg.vision_n_heads),
                description="bidirectional multi-head self-attention over the image's tokens",
            ),
            layer_norm("mlp_norm", d),
            feed_forward("mlp", d, VISION_FF(cfg.vision_d_ff), activation=cfg.vision_activation, tokens=tokens),
        ],
        f"pre-LN layer over the n_p + 1 image tokens: LayerNorm, attention, add; LayerNorm, {cfg.vision_activation} "
        "MLP, add",
    )
    embeddings = composite(
        "embeddings",
        "embeddings",
        [
            patch_embedding(
                "patch_embedding",
                CHANNELS(cfg.channels),
                PATCH(cfg.patch_size),
                d,
                n_p,
                bias=False,
                description=f"Conv2d({cfg.channels}, {cfg.vision_d_model}, kernel={cfg.patch_size}, "
                f"stride={cfg.patch_size}, bias=False)",
            ),
            learned_tensor("class_embedding", d, leading=False, description="learned class embedding"),
            embedding(
                "position",
                tokens,
                d,
                role="position",
                description="learned positions, the patches' and the class token's",
            ),
        ],
        "patches, the class embedding and learned positions",
    )
    return composite(
        "vision_model",
        "encoder",
        [
            embeddings,
            layer_norm("pre_norm", d, description=f"LayerNorm({cfg.vision_d_model}) before the layers (pre_layrnorm)"),
            repeat(layer, VISION_LAYERS(cfg.vision_n_layers), name="layers"),
            layer_norm(
                "post_norm", d, description=f"LayerNorm({cfg.vision_d_model}) on the class token (post_layernorm)"
            ),
        ],
        "vision tower over the image's patches and class token, pooled at the class token",
    )


def _similarity(projection: Poly) -> Block:
    """The image-text score: the normalised text and image embeddings, (1 x D) times (D x 1). Normalising and the
    logit scale are element-wise (no FLOPs); the product's backward computes both inputs' gradients."""
    flops = 2 * projection
    return Block(
        name="similarity",
        kind="similarity",
        flops=flops,
        backward_flops=2 * flops,
        description="cosine similarity of the normalised embeddings, scaled by exp(logit_scale): one product",
    )


def build(cfg: ClipConfig) -> Block:
    D = PROJECTION(cfg.projection_dim)
    one = const(1)
    children: list[Block] = []
    if cfg.head in TEXT_HEADS:
        children.append(_text_tower(cfg))
        if cfg.head in ("model", "text_projection"):
            projection = linear(
                "text_projection",
                symbol("d", cfg.d_model),
                D,
                bias=False,
                tokens=one,
                description="Linear(d, D, bias=False) on the pooled end-of-text token",
            )
            # CLIPTextModelWithProjection's loss is its last hidden state: the projection is not on its path
            children.append(projection if cfg.head == "model" else off_loss_path(projection))
    if cfg.head in VISION_HEADS:
        children.append(_vision_tower(cfg))
        d_v = VISION_WIDTH(cfg.vision_d_model)
        if cfg.head in ("model", "vision_projection"):
            projection = linear(
                "visual_projection",
                d_v,
                D,
                bias=False,
                tokens=one,
                description="Linear(d_v, D, bias=False) on the pooled class token",
            )
            children.append(projection if cfg.head == "model" else off_loss_path(projection))
        if cfg.head == "image_classification" and cfg.num_labels:
            children.append(
                linear(
                    "classifier",
                    d_v,
                    LABELS(cfg.num_labels),
                    tokens=one,
                    description="class scores on the mean of the patch tokens (the mean: element-wise, no matmul)",
                )
            )
    if cfg.head == "model":
        children.append(learned_tensor("logit_scale", one, leading=False, description="the learned logit scale"))
        children.append(_similarity(D))
    root = composite("clip", "model", children, f"CLIP ({CLASSES[cfg.head]})")
    return with_modules(root, reference_modules(cfg))


def reference_modules(cfg: ClipConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule or parameter names, inside a layer relative to the layer."""
    text = "" if cfg.head == "text" else "text_model."
    vision = "" if cfg.head == "vision" else "vision_model."
    modules: dict[str, tuple[str, ...]] = {
        "clip": ("",),
        "clip.text_model.embeddings": (f"{text}embeddings",),
        "clip.text_model.embeddings.token": (f"{text}embeddings.token_embedding",),
        "clip.text_model.embeddings.position": (f"{text}embeddings.position_embedding",),
        "clip.text_model.layers": (f"{text}encoder.layers",),
        "clip.text_model.final_norm": (f"{text}final_layer_norm",),
        "clip.text_projection": ("text_projection",),
        "clip.vision_model.embeddings": (f"{vision}embeddings",),
        "clip.vision_model.embeddings.patch_embedding": (f"{vision}embeddings.patch_embedding",),
        "clip.vision_model.embeddings.class_embedding": (f"{vision}embeddings.class_embedding",),
        "clip.vision_model.embeddings.position": (f"{vision}embeddings.position_embedding",),
        "clip.vision_model.pre_norm": (f"{vision}pre_layrnorm",),
        "clip.vision_model.layers": (f"{vision}encoder.layers",),
        "clip.vision_model.post_norm": (f"{vision}post_layernorm",),
        "clip.visual_projection": ("visual_projection",),
        "clip.classifier": ("classifier",),
        "clip.logit_scale": ("logit_scale",),
    }
    # a tower's own class (CLIPTextModel, CLIPVisionModel) is the tower: its root holds it
    modules["clip.text_model"] = (text.rstrip("."),)
    modules["clip.vision_model"] = (vision.rstrip("."),)
    for tower, prefix in (("text_model", text), ("vision_model", vision)):
        path = f"clip.{tower}.layers.layer"
        modules |= {
            path: (f"{prefix}encoder.layers",),
            f"{path}.attention_norm": ("layer_norm1",),
            f"{path}.attention": ("self_attn",),
            f"{path}.attention.out_proj": ("self_attn.out_proj",),
            f"{path}.mlp_norm": ("layer_norm2",),
            f"{path}.mlp": ("mlp",),
        }
    return modules


def _text_kwargs(cfg: ClipConfig) -> dict[str, Any]:
    return dict(
        vocab_size=cfg.vocab_size,
        max_position_embeddings=cfg.max_positions,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        intermediate_size=cfg.d_ff,
        hidden_act=cfg.activation,
        projection_dim=cfg.projection_dim,
    )


def _vision_kwargs(cfg: ClipConfig) -> dict[str, Any]:
    return dict(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        num_channels=cfg.channels,
        hidden_size=cfg.vision_d_model,
        num_hidden_layers=cfg.vision_n_layers,
        num_attention_heads=cfg.vision_n_heads,
        intermediate_size=cfg.vision_d_ff,
        hidden_act=cfg.vision_activation,
        projection_dim=cfg.projection_dim,
    )


def reference(cfg: ClipConfig) -> Reference:
    """The transformers class of the head, built from the configuration class it takes."""
    if cfg.head in ("text", "text_projection"):
        config_class, kwargs = "CLIPTextConfig", _text_kwargs(cfg)
    elif cfg.head in ("vision", "vision_projection"):
        config_class, kwargs = "CLIPVisionConfig", _vision_kwargs(cfg)
    elif cfg.head == "image_classification":
        config_class, kwargs = "CLIPConfig", dict(vision_config=_vision_kwargs(cfg), num_labels=cfg.num_labels)
    else:
        config_class = "CLIPConfig"
        kwargs = dict(
            text_config=_text_kwargs(cfg), vision_config=_vision_kwargs(cfg), projection_dim=cfg.projection_dim
        )
    return Reference(
        library="transformers",
        target=f"transformers.{CLASSES[cfg.head]}",
        config_class=f"transformers.{config_class}",
        kwargs=kwargs,
        inputs="archzoo_clip.reference_inputs",
    )


def reference_inputs(model: Any, seq_len: int, device: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """One forward pass of batch 1 of a transformers CLIP class: N = ``seq_len`` caption tokens for a class that
    reads text, and one image of the configuration's size and channels for a class that reads images (its
    forward's ``input_ids`` and ``pixel_values``); sizes are read off the built ``model``. A caption longer than
    the text tower's learned positions is refused, as transformers refuses it."""
    import inspect

    import torch

    config = model.config
    taken = inspect.signature(model.forward).parameters
    inputs: dict[str, Any] = {}
    if "input_ids" in taken:
        text = getattr(config, "text_config", config)
        if seq_len > text.max_position_embeddings:
            raise ValueError(
                f"N = {seq_len}: CLIP's text tower has {text.max_position_embeddings} learned positions, so a caption "
                f"holds at most {text.max_position_embeddings} tokens; give a shorter N"
            )
        inputs["input_ids"] = torch.zeros(1, seq_len, dtype=torch.long, device=device)
    if "pixel_values" in taken:
        vision = getattr(config, "vision_config", config)
        side = vision.image_size
        inputs["pixel_values"] = torch.zeros(1, vision.num_channels, side, side, device=device)
    return (), inputs


# ---- Hugging Face config.json: CLIPConfig and its two sub-configurations, as transformers 5.23 defines them ---

_EOS = (
    "the token whose hidden state the text tower pools: an index into the sequence, no parameters or FLOPs (the "
    "value 2 makes transformers pool at the largest token id instead, the same one vector)"
)

HF_CLIP_TEXT = HFTable(
    model_type="clip_text_model",
    config_class="CLIPTextConfig",
    defaults=dict(
        vocab_size=49408,
        hidden_size=512,
        intermediate_size=2048,
        projection_dim=512,
        num_hidden_layers=12,
        num_attention_heads=8,
        max_position_embeddings=77,
        hidden_act="quick_gelu",
        layer_norm_eps=1e-05,
        attention_dropout=0.0,
        initializer_range=0.02,
        initializer_factor=1.0,
        pad_token_id=1,
        bos_token_id=49406,
        eos_token_id=49407,
    ),
    aliases={},
    read={
        "vocab_size": "vocab_size",
        "hidden_size": "d_model",
        "intermediate_size": "d_ff",
        "projection_dim": "projection_dim",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "max_position_embeddings": "max_positions",
        "hidden_act": "activation",
    },
    ignored={
        "layer_norm_eps": NORM_EPSILON,
        "attention_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "initializer_factor": INITIALISATION,
        "pad_token_id": f"{TOKEN_ID} (CLIP's token embedding has no padding row)",
        "bos_token_id": TOKEN_ID,
        "eos_token_id": _EOS,
        # written by the released files (transformers 4.x's CLIPTextConfig had the field)
        "dropout": "dropout of transformers 4.x's CLIP configuration, no field of 5.23's and never read by its "
        "modeling_clip: no parameters, and FlopCounterMode counts no FLOPs for dropout",
    },
    refused={},
    base_class="CLIPTextModel",
    classes={"CLIPTextModel": {"head": "text"}, "CLIPTextModelWithProjection": {"head": "text_projection"}},
)

HF_CLIP_VISION = HFTable(
    model_type="clip_vision_model",
    config_class="CLIPVisionConfig",
    defaults=dict(
        hidden_size=768,
        intermediate_size=3072,
        projection_dim=512,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_channels=3,
        image_size=224,
        patch_size=32,
        hidden_act="quick_gelu",
        layer_norm_eps=1e-05,
        attention_dropout=0.0,
        initializer_range=0.02,
        initializer_factor=1.0,
    ),
    aliases={},
    read={
        "hidden_size": "vision_d_model",
        "intermediate_size": "vision_d_ff",
        "projection_dim": "projection_dim",
        "num_hidden_layers": "vision_n_layers",
        "num_attention_heads": "vision_n_heads",
        "num_channels": "channels",
        "image_size": "image_size",
        "patch_size": "patch_size",
        "hidden_act": "vision_activation",
    },
    ignored={
        "layer_norm_eps": NORM_EPSILON,
        "attention_dropout": DROPOUT,
        "initializer_range": INITIALISATION,
        "initializer_factor": INITIALISATION,
        "dropout": HF_CLIP_TEXT.ignored["dropout"],
    },
    refused={},
    base_class="CLIPVisionModel",
    classes={"CLIPVisionModel": {"head": "vision"}, "CLIPVisionModelWithProjection": {"head": "vision_projection"}},
)

HF_CLIP = HFTable(
    model_type="clip",
    config_class="CLIPConfig",
    defaults=dict(
        text_config=None,
        vision_config=None,
        projection_dim=512,
        logit_scale_init_value=2.6592,
        initializer_factor=1.0,
    ),
    aliases={},
    read={"projection_dim": "projection_dim", "num_labels": "num_labels"},
    ignored={
        "logit_scale_init_value": "the initial value of logit_scale, one parameter whatever its value",
        "initializer_factor": INITIALISATION,
    },
    refused={},
    base_class="CLIPModel",
    # every class: a tower's class loads its sub-configuration from a clip file (from_pretrained reads
    # text_config or vision_config as written, the configuration class's base_config_key)
    classes={name: {"head": head} for head, name in CLASSES.items()},
    nested={"text_config": HF_CLIP_TEXT, "vision_config": HF_CLIP_VISION},
    nested_overrides={"text_config_dict": "text_config", "vision_config_dict": "vision_config"},
    class_sub_configs={
        "CLIPTextModel": "text_config",
        "CLIPTextModelWithProjection": "text_config",
        "CLIPVisionModel": "vision_config",
        "CLIPVisionModelWithProjection": "vision_config",
    },
)


def _square(hf: dict[str, Any], key: str) -> Any:
    """A side in pixels: CLIP's embeddings divide it as one integer, so a ``[height, width]`` pair fails there."""
    value = hf[key]
    if isinstance(value, list):
        raise ValueError(
            f"{key}: {value} is a pair of sides, which transformers' CLIP vision embeddings cannot divide by the "
            f"patch size (they take one side); give one side, e.g. {key}: {value[0] if value else 224}"
        )
    return value


def _text_values(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        vocab_size=hf["vocab_size"],
        max_positions=hf["max_position_embeddings"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        d_ff=hf["intermediate_size"],
        activation=hf["hidden_act"],
    )


def _vision_values(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        image_size=_square(hf, "image_size"),
        patch_size=_square(hf, "patch_size"),
        channels=hf["num_channels"],
        vision_d_model=hf["hidden_size"],
        vision_n_layers=hf["num_hidden_layers"],
        vision_n_heads=hf["num_attention_heads"],
        vision_d_ff=hf["intermediate_size"],
        vision_activation=hf["hidden_act"],
    )


#: the classes that build a projection, and so read projection_dim (the others build with it null too)
_PROJECTING = ("CLIPModel", "CLIPTextModelWithProjection", "CLIPVisionModelWithProjection")


def _projection(hf: dict[str, Any], model_class: str) -> dict[str, Any]:
    return {"projection_dim": hf["projection_dim"]} if model_class in _PROJECTING else {}


def _nested_values(hf: dict[str, Any], key: str, values: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """``values`` of the sub-configuration under ``key``; a refusal names its key as ``vision_config.patch_size``
    (the kit then names it as the file gave it: under vision_config, or vision_config_dict)."""
    try:
        return values(hf[key])
    except ValueError as exc:
        raise ValueError(f"{key}.{exc}") from None


@hf_reader(HF_CLIP)
def _from_clip(hf: dict[str, Any], model_class: str = "CLIPModel") -> dict[str, Any]:
    # a tower's class is read from its sub-configuration alone (HF_CLIP.class_sub_configs), by the tower's reader;
    # CLIPModel projects to CLIPConfig's own projection_dim, never to text_config's or vision_config's (the kit reports
    # those as not read, as the table's own projection_dim sets the same key)
    return {
        **_nested_values(hf, "text_config", _text_values),
        **_nested_values(hf, "vision_config", _vision_values),
        **_projection(hf, model_class),
        "num_labels": hf["num_labels"],
    }


@hf_reader(HF_CLIP_TEXT)
def _from_clip_text(hf: dict[str, Any], model_class: str = "CLIPTextModel") -> dict[str, Any]:
    return {**_text_values(hf), **_projection(hf, model_class)}


@hf_reader(HF_CLIP_VISION)
def _from_clip_vision(hf: dict[str, Any], model_class: str = "CLIPVisionModel") -> dict[str, Any]:
    return {**_vision_values(hf), **_projection(hf, model_class)}


def _longest_caption(cfg: ClipConfig) -> int:
    """The longest N: the text tower's learned positions; a class without the text tower reads no caption."""
    return cfg.max_positions if cfg.head in TEXT_HEADS else MAX_SIZE


ARCHITECTURE = Architecture(
    name="clip",
    title="CLIP",
    summary="OpenAI's contrastive image-text dual encoder (CLIP ViT-B/32, B/16, L/14): a causal text Transformer and "
    "a Vision Transformer projected into one embedding space; N is the caption's tokens, the image is fixed.",
    citation="Radford et al. Learning Transferable Visual Models From Natural Language Supervision. ICML 2021. "
    "arXiv:2103.00020",
    config_model=ClipConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    max_seq_len=_longest_caption,
    reference=reference,
)


register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook(
    {
        "clip": (_from_clip, "clip"),
        "clip_text_model": (_from_clip_text, "clip"),
        "clip_vision_model": (_from_clip_vision, "clip"),
    }
)
