"""archzoo plugin: Vision Transformers (ViT, DeiT) as timm and Hugging Face build them."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import check_activation, check_heads
from archzoo.blocks import (
    Block,
    attention,
    composite,
    feed_forward,
    layer_norm,
    learned_tensor,
    linear,
    off_loss_path,
    patch_embedding,
    repeat,
    with_modules,
)
from archzoo.formula import const
from archzoo.hf_config import ACTIVATION_ONLY, DROPOUT, INITIALISATION, NORM_EPSILON, HFTable, hf_reader
from archzoo.plugin_parts import NumLabels, architectures_hook, hf_readers_hook, num_labels_field
from archzoo.symbols import declare_symbol, symbol

# the hook by which this plugin states what its layers save for backward
from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"

# The symbols only this plugin's formulas use (the shared ones are archzoo.symbols.symbol's).
CHANNELS = declare_symbol("C", latex="C", meaning="image channels (channels)", order=30)
PATCH = declare_symbol("p", latex="p", meaning="patch side in pixels (patch_size)", order=31)
PATCHES = declare_symbol("n_p", latex="n_{p}", meaning="patches per image, (image_size / patch_size)²", order=32)
CLASSES = declare_symbol("K", latex="K", meaning="classes (num_classes)", order=33)
PRE_LOGITS = declare_symbol("r", latex="r", meaning="pre-logits width (representation_size)", order=34)
STRIDE = declare_symbol("s", latex="s", meaning="pixels per patch side the decoder restores (encoder_stride)", order=36)
POOLER_WIDTH = declare_symbol(
    "d_pool", latex="d_{\\mathrm{pool}}", meaning="pooler output width (pooler_size)", order=35
)


class VitConfig(ArchConfig):
    """An image classifier over patch tokens; defaults are ViT-B/16 at 224 pixels (Dosovitskiy et al. 2021)."""

    image_size: PositiveInt = Field(224, description="input side in pixels")
    patch_size: PositiveInt = Field(16, description="patch side in pixels; must divide image_size")
    channels: PositiveInt = Field(3, description="input channels")
    d_model: PositiveInt = Field(768, description="model width")
    n_layers: PositiveInt = Field(12, description="encoder layers")
    n_heads: PositiveInt = Field(12, description="attention heads; must divide d_model")
    d_ff: PositiveInt = Field(3072, description="MLP width")
    num_classes: NumLabels = num_labels_field("classifier outputs; 0 = no head", default=1000)
    class_token: bool = Field(True, description="a learned [CLS] token")
    distillation_token: bool = Field(False, description="DeiT's distillation token, with its own head")
    qkv_bias: bool = Field(True, description="biases in the Q, K, V projections")
    pooler: bool | None = Field(
        False,
        description="Hugging Face ViTModel's dense + tanh pooler on the [CLS] token; null = as transformers "
        "builds it: yes without a classifier (ViTModel), no with one (ViTForImageClassification)",
    )
    pooler_size: PositiveInt | None = Field(
        None, description="width of the pooler's output (transformers' pooler_output_size); null = d_model"
    )
    distillation_head: bool | None = Field(
        None,
        description="a second classifier on the distillation token; null = with the distillation token "
        "(DeiTForImageClassificationWithTeacher); false: one classifier (DeiTForImageClassification)",
    )
    representation_size: PositiveInt | None = Field(None, description="pre-logits dense + tanh width (null = none)")
    masked_image_modeling: bool = Field(
        False,
        description="ViTForMaskedImageModeling / DeiTForMaskedImageModeling: a learned mask token, and a pixel "
        "decoder on the patch tokens (a 1x1 convolution to encoder_stride² x channels, then a pixel shuffle); "
        "needs num_classes 0 and no pooler",
    )
    encoder_stride: PositiveInt = Field(
        16, description="side of the pixel block the masked-image-modeling decoder restores from each patch token"
    )
    activation: str = Field("gelu", description="MLP activation")

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "pooler" in data and data["pooler"] is None:
                data = {**data, "pooler": data.get("num_classes", 1000) == 0}
            if data.get("distillation_head") is None:
                data = {**data, "distillation_head": data.get("distillation_token", False)}
        return data

    @model_validator(mode="after")
    def _check(self) -> VitConfig:
        if self.image_size % self.patch_size:
            raise ValueError(
                f"patch_size: image_size {self.image_size} is not divisible by patch_size {self.patch_size}; "
                "choose a patch size that tiles the image"
            )
        check_heads(self.d_model, self.n_heads)
        check_activation(self.activation)
        if self.distillation_token and not self.class_token:
            raise ValueError("distillation_token: DeiT's distillation token needs class_token: true")
        if self.masked_image_modeling and (self.num_classes or self.pooler or self.representation_size):
            raise ValueError(
                "masked_image_modeling: the pixel decoder is the model's only head (no classifier, pooler or "
                "pre-logits); set num_classes to 0, pooler to false and representation_size to null"
            )
        if self.distillation_head and not self.distillation_token:
            raise ValueError(
                "distillation_head: the distillation head reads the distillation token; set distillation_token: true"
            )
        return self

    @property
    def n_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2

    @property
    def n_tokens(self) -> int:
        return self.n_patches + int(self.class_token) + int(self.distillation_token)


def build(cfg: VitConfig) -> Block:
    d = symbol("d", cfg.d_model)
    L = symbol("L", cfg.n_layers)
    d_ff = symbol("d_ff", cfg.d_ff)
    n_p = PATCHES(cfg.n_patches, definition=f"({cfg.image_size} / {cfg.patch_size})²")
    extra = int(cfg.class_token) + int(cfg.distillation_token)

    parts = [patch_embedding("patch_embedding", CHANNELS(cfg.channels), PATCH(cfg.patch_size), d, n_p)]
    if cfg.class_token:
        parts.append(learned_tensor("class_token", d, leading=False, description="learned [CLS] token"))
    if cfg.distillation_token:
        parts.append(learned_tensor("distillation_token", d, leading=False, description="DeiT distillation token"))
    if cfg.masked_image_modeling:
        parts.append(
            learned_tensor(
                "mask_token",
                d,
                leading=False,
                description="learned mask token, put in place of the masked patches (with bool_masked_pos only)",
            )
        )
    parts.append(
        learned_tensor(
            "position",
            (n_p + extra) * d,
            leading=True,
            role="position",
            description="learned position table, one row per token",
        )
    )
    children = [composite("embeddings", "embeddings", parts, "patches, special tokens and positions")]
    layer = composite(
        "layer",
        "encoder_layer",
        [
            layer_norm("attention_norm", d),
            attention("attention", d, d, bias=cfg.qkv_bias, out_bias=True, heads=symbol("h", cfg.n_heads)),
            layer_norm("mlp_norm", d),
            feed_forward("mlp", d, d_ff, activation=cfg.activation),
        ],
        "pre-LN encoder layer: norm, attention, add; norm, MLP, add",
    )
    children += [repeat(layer, L, name="layers"), layer_norm("final_norm", d)]
    if cfg.pooler:
        pooled = d if cfg.pooler_size is None else POOLER_WIDTH(cfg.pooler_size)
        # no head reads the pooler (a classifier reads the [CLS] token of the final norm): a training step's
        # loss never reaches it, so autograd runs no backward through it
        pooler = linear("pooler", d, pooled, tokens=const(1), description="dense + tanh on the [CLS] token")
        children.append(off_loss_path(pooler))
    if cfg.masked_image_modeling:
        s = STRIDE(cfg.encoder_stride)
        out = s * s * CHANNELS(cfg.channels)
        children.append(
            linear(
                "decoder",
                d,
                out,
                tokens=n_p,
                description=f"pixel decoder: Conv2d({d}, {out}, kernel_size=1) on the patch tokens (the special "
                "tokens dropped), then a pixel shuffle (no FLOPs)",
            )
        )
    width = d
    if cfg.representation_size is not None:
        r = PRE_LOGITS(cfg.representation_size)
        children.append(linear("pre_logits", d, r, tokens=const(1), description="dense + tanh before the classifier"))
        width = r
    if cfg.num_classes:
        K = CLASSES(cfg.num_classes)
        children.append(linear("head", width, K, tokens=const(1), description="classifier on the pooled token"))
        if cfg.distillation_head:
            children.append(
                linear(
                    "distillation_head", width, K, tokens=const(1), description="classifier on the distillation token"
                )
            )
    return with_modules(composite("vit", "model", children, "Vision Transformer"), reference_modules(cfg))


def reference_modules(cfg: VitConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the transformers class `reference` builds (for `archzoo verify`):
    block path -> submodule or parameter names, inside a layer relative to the layer."""
    headless = cfg.num_classes == 0 and not cfg.masked_image_modeling
    base = "" if headless else ("deit." if cfg.distillation_token else "vit.")
    teacher = cfg.distillation_token and cfg.distillation_head  # DeiTForImageClassificationWithTeacher
    return {
        "vit": ("",),
        "vit.embeddings": (f"{base}embeddings",),
        "vit.embeddings.patch_embedding": (f"{base}embeddings.patch_embeddings",),
        "vit.embeddings.class_token": (f"{base}embeddings.cls_token",),
        "vit.embeddings.distillation_token": (f"{base}embeddings.distillation_token",),
        "vit.embeddings.position": (f"{base}embeddings.position_embeddings",),
        "vit.embeddings.mask_token": (f"{base}embeddings.mask_token",),
        "vit.decoder": ("decoder",),
        "vit.layers": (f"{base}layers",),
        "vit.layers.layer": (f"{base}layers",),
        "vit.layers.layer.attention_norm": ("layernorm_before",),
        "vit.layers.layer.attention": ("attention",),
        "vit.layers.layer.mlp_norm": ("layernorm_after",),
        "vit.layers.layer.mlp": ("mlp",),
        "vit.final_norm": (f"{base}layernorm",),
        "vit.pooler": (f"{base}pooler",),
        "vit.head": ("cls_classifier" if teacher else "classifier",),
        "vit.distillation_head": ("distillation_classifier",),
    }


def reference(cfg: VitConfig) -> Reference | None:
    if not cfg.class_token or cfg.representation_size is not None:
        return None
    kwargs: dict[str, Any] = dict(
        image_size=cfg.image_size,
        patch_size=cfg.patch_size,
        num_channels=cfg.channels,
        hidden_size=cfg.d_model,
        num_hidden_layers=cfg.n_layers,
        num_attention_heads=cfg.n_heads,
        intermediate_size=cfg.d_ff,
        qkv_bias=cfg.qkv_bias,
        hidden_act=cfg.activation,
    )
    if cfg.pooler_size is not None:
        kwargs["pooler_output_size"] = cfg.pooler_size
    family = "DeiT" if cfg.distillation_token else "ViT"
    if cfg.masked_image_modeling:
        return Reference(
            library="transformers",
            target=f"transformers.{family}ForMaskedImageModeling",
            config_class=f"transformers.{family}Config",
            kwargs={**kwargs, "encoder_stride": cfg.encoder_stride},
            inputs="image",
        )
    if cfg.num_classes == 0:
        return Reference(
            library="transformers",
            target=f"transformers.{family}Model",
            config_class=f"transformers.{family}Config",
            kwargs=kwargs,
            model_kwargs={"add_pooling_layer": cfg.pooler},
            inputs="image",
        )
    if cfg.pooler:
        return None  # the classification models drop the pooler
    kwargs["num_labels"] = cfg.num_classes
    if not cfg.distillation_token:
        target = "ViTForImageClassification"
    else:
        target = "DeiTForImageClassificationWithTeacher" if cfg.distillation_head else "DeiTForImageClassification"
    return Reference(
        library="transformers",
        target=f"transformers.{target}",
        config_class=f"transformers.{family}Config",
        kwargs=kwargs,
        inputs="image",
    )


# ---- Hugging Face config.json: each model type's keys, as transformers 5.23 defines them ----------------


def _head_dim_refused(family: str) -> dict[str, tuple[tuple[Any, ...], str]]:
    return {
        "head_dim": (
            (),
            f"{family}'s attention reads an explicit head_dim, but the vit plugin's heads are "
            "hidden_size / num_attention_heads wide; remove the key if it says the same",
        )
    }


#: what the masked-image-modeling classes set: the pixel decoder, no classifier and no pooler
_MASKED_IMAGE = {"num_classes": 0, "pooler": False, "masked_image_modeling": True}

HF_VIT = HFTable(
    model_type="vit",
    config_class="ViTConfig",
    defaults=dict(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        image_size=224,
        patch_size=16,
        num_channels=3,
        qkv_bias=True,
        encoder_stride=16,
        pooler_output_size=None,
        pooler_act="tanh",
    ),
    aliases={},
    read={
        "hidden_size": "d_model",
        "num_hidden_layers": "n_layers",
        "num_attention_heads": "n_heads",
        "intermediate_size": "d_ff",
        "hidden_act": "activation",
        "image_size": "image_size",
        "patch_size": "patch_size",
        "num_channels": "channels",
        "qkv_bias": "qkv_bias",
        "pooler_output_size": "pooler_size",
        "num_labels": "num_classes",
        "encoder_stride": "encoder_stride",
    },
    ignored={
        "hidden_dropout_prob": DROPOUT,
        "attention_probs_dropout_prob": DROPOUT,
        "initializer_range": INITIALISATION,
        "layer_norm_eps": NORM_EPSILON,
        "pooler_act": ACTIVATION_ONLY,
    },
    refused=_head_dim_refused("ViT"),
    base_class="ViTModel",
    classes={
        "ViTModel": {"num_classes": 0, "pooler": None},
        "ViTForImageClassification": {"pooler": False},
        "ViTForMaskedImageModeling": _MASKED_IMAGE,
    },
)

HF_DEIT = HFTable(
    model_type="deit",
    config_class="DeiTConfig",
    defaults=HF_VIT.defaults,
    aliases={},
    read=HF_VIT.read,
    ignored=HF_VIT.ignored,
    refused=_head_dim_refused("DeiT"),
    base_class="DeiTModel",
    classes={
        "DeiTModel": {"num_classes": 0, "pooler": None},
        "DeiTForImageClassification": {"pooler": False, "distillation_head": False},
        "DeiTForImageClassificationWithTeacher": {"pooler": False},
        "DeiTForMaskedImageModeling": _MASKED_IMAGE,
    },
)


def _square(hf: dict[str, Any], key: str) -> Any:
    """A side in pixels: transformers also takes ``[height, width]``; archzoo counts square images and patches."""
    value = hf[key]
    if isinstance(value, list):
        if len(value) != 2 or value[0] != value[1]:
            raise ValueError(
                f"{key}: {value} is not square; the vit plugin counts square images and patches, "
                f"so give one side, e.g. {key}: {value[0] if value else 224}"
            )
        return value[0]
    return value


@hf_reader(HF_VIT)
def _from_vit(hf: dict[str, Any], model_class: str = "ViTModel") -> dict[str, Any]:
    return dict(
        image_size=_square(hf, "image_size"),
        patch_size=_square(hf, "patch_size"),
        channels=hf["num_channels"],
        d_model=hf["hidden_size"],
        n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"],
        d_ff=hf["intermediate_size"],
        qkv_bias=hf["qkv_bias"],
        activation=hf["hidden_act"],
        pooler_size=hf["pooler_output_size"],
        num_classes=hf["num_labels"],
        encoder_stride=hf["encoder_stride"],
    )


@hf_reader(HF_DEIT)
def _from_deit(hf: dict[str, Any], model_class: str = "DeiTModel") -> dict[str, Any]:
    return {**_from_vit(hf, model_class), "distillation_token": True}


ARCHITECTURE = Architecture(
    name="vit",
    title="Vision Transformer",
    summary="Transformer encoder over image patches with a class token and learned positions; covers "
    "ViT and DeiT (distillation token).",
    citation="Dosovitskiy et al. An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale. "
    "ICLR 2021. arXiv:2010.11929",
    config_model=VitConfig,
    build=build,
    seq_len=lambda cfg: cfg.n_tokens,
    seq_len_fixed=True,
    seq_len_note=lambda cfg: (
        f"{cfg.n_patches} patches of {cfg.patch_size}x{cfg.patch_size} pixels plus "
        f"{cfg.n_tokens - cfg.n_patches} special token(s)"
    ),
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)
register_hf_readers = hf_readers_hook({"vit": (_from_vit, None), "deit": (_from_deit, None)})
