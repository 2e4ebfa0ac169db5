"""archzoo plugin: the encoder-decoder Transformer of Vaswani et al. (2017), as torch.nn.Transformer builds it.

With a vocabulary, the reference is `Seq2SeqTransformer`, defined here: torch.nn.Transformer with token
embeddings in front and the pre-softmax projection behind. It needs torch, so it is made on first access
and importing this plugin stays torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference
from archzoo.architecture import check_heads
from archzoo.blocks import (
    Block,
    attention,
    composite,
    embedding,
    feed_forward,
    layer_norm,
    lm_head,
    repeat,
    seq2seq_decoder,
    seq2seq_encoder,
    with_modules,
)
from archzoo.formula import total
from archzoo.plugin_parts import architectures_hook
from archzoo.seq2seq_parts import source_target_note, stack_modules
from archzoo.symbols import symbol

from .activation import register_activation_memory as register_activation_memory

__version__ = "0.1.0"


class TransformerConfig(ArchConfig):
    """torch.nn.Transformer's hyperparameters (defaults are the paper's base model), plus optional embeddings."""

    d_model: PositiveInt = Field(512, description="model width")
    n_heads: PositiveInt = Field(8, description="attention heads; must divide d_model")
    d_ff: PositiveInt = Field(2048, description="feed-forward width")
    n_encoder_layers: PositiveInt = Field(6, description="encoder layers")
    n_decoder_layers: PositiveInt = Field(6, description="decoder layers")
    bias: bool = Field(True, description="biases in linear layers and LayerNorms (torch's bias=)")
    activation: Literal["relu", "gelu"] = Field("relu", description="feed-forward activation")
    vocab_size: NonNegativeInt = Field(
        0, description="token embeddings and output projection; 0 = none, as torch.nn.Transformer"
    )
    share_embeddings: bool = Field(True, description="source and target share one embedding matrix (Sec. 3.4)")
    tie_output: bool = Field(True, description="the pre-softmax projection reuses the target embedding (Sec. 3.4)")

    @model_validator(mode="after")
    def _check(self) -> TransformerConfig:
        check_heads(self.d_model, self.n_heads)
        return self


def _first_layer_reads_inputs(cfg: TransformerConfig, stack: Block) -> Block:
    """``stack`` with the backward of a training step its first layer skips when there is no vocabulary:
    torch.nn.Transformer then takes the source and target embeddings themselves as inputs, which need no
    gradient, so the first layer's query, key and value projections compute their weights' gradients only
    (1x their forward FLOPs, not 2x). The stack's figure says so; the per-copy figures of its layers are
    those of every later copy."""
    if cfg.vocab_size:
        return stack
    layers = next(child for child in stack.children if child.name == "layers")
    attention_block = next(child for child in layers.children[0].children if child.name == "self_attention")
    saved = total(c.flops for c in attention_block.children if c.name in ("q_proj", "k_proj", "v_proj"))
    return replace(stack, backward_flops=stack.backward_flops - saved)


def build(cfg: TransformerConfig) -> Block:
    d = symbol("d", cfg.d_model)
    d_ff = symbol("d_ff", cfg.d_ff)
    b = cfg.bias
    # the head layout recorded on the blocks (`Block.heads`), for readers such as the activation-memory formula
    h, d_h = symbol("h", cfg.n_heads), symbol("d_h", cfg.d_model // cfg.n_heads, definition="d / h")
    encoder_layer = composite(
        "layer",
        "encoder_layer",
        [
            attention("self_attention", d, d, bias=b, heads=h, d_head=d_h),
            layer_norm("norm1", d, bias=b),
            feed_forward("feed_forward", d, d_ff, activation=cfg.activation, bias=b),
            layer_norm("norm2", d, bias=b),
        ],
        "post-LN encoder layer (TransformerEncoderLayer)",
    )
    decoder_layer = composite(
        "layer",
        "decoder_layer",
        [
            attention("self_attention", d, d, bias=b, causal=True, heads=h, d_head=d_h),
            layer_norm("norm1", d, bias=b),
            attention("cross_attention", d, d, bias=b, cross=True, heads=h, d_head=d_h),
            layer_norm("norm2", d, bias=b),
            feed_forward("feed_forward", d, d_ff, activation=cfg.activation, bias=b),
            layer_norm("norm3", d, bias=b),
        ],
        "post-LN decoder layer (TransformerDecoderLayer)",
    )
    children = []
    if cfg.vocab_size:
        V = symbol("V", cfg.vocab_size)
        if cfg.share_embeddings:
            children.append(embedding("embedding", V, d, role="token", description="shared source/target embeddings"))
        else:
            children.append(embedding("source_embedding", V, d, role="token"))
            children.append(embedding("target_embedding", V, d, role="token"))

    def stack(name: str, layer: Block, n_layers: str, count: int, marked: Callable[[Block], Block]) -> Block:
        """The encoder or decoder: its layers and final LayerNorm, marked for generation, first layer's
        inputs checked."""
        layers = repeat(layer, symbol(n_layers, count), name="layers")
        block = composite(
            name, "stack", [layers, layer_norm("norm", d, bias=b)], f"{name} stack and its final LayerNorm"
        )
        return _first_layer_reads_inputs(cfg, marked(block))

    children += [
        stack("encoder", encoder_layer, "L_e", cfg.n_encoder_layers, seq2seq_encoder),
        stack("decoder", decoder_layer, "L_d", cfg.n_decoder_layers, seq2seq_decoder),
    ]
    if cfg.vocab_size:
        tied = ("embedding" if cfg.share_embeddings else "target_embedding") if cfg.tie_output else ""
        children.append(
            lm_head(
                d,
                symbol("V", cfg.vocab_size),
                tied_to=tied,
                name="output_projection",
                description="pre-softmax projection" + (f", weight tied to {tied}" if tied else ""),
            )
        )
    return with_modules(
        composite("transformer", "model", children, "encoder-decoder Transformer"), reference_modules(cfg)
    )


def reference_modules(cfg: TransformerConfig) -> dict[str, tuple[str, ...]]:
    """Where each block's parameters live in the module `reference` builds (for `archzoo verify`): block path
    -> submodule names, inside a layer relative to the layer. With a vocabulary, torch.nn.Transformer is the
    ``transformer`` attribute of archzoo's Seq2SeqTransformer."""
    base = "transformer." if cfg.vocab_size else ""
    table: dict[str, tuple[str, ...]] = {
        "transformer": ("",),
        "transformer.embedding": ("source_embedding",),  # target_embedding is the same module
        "transformer.source_embedding": ("source_embedding",),
        "transformer.target_embedding": ("target_embedding",),
        "transformer.output_projection": ("output_projection",),
    }
    for stack, cross in (("encoder", False), ("decoder", True)):
        layer: dict[str, tuple[str, ...]] = {
            "self_attention": ("self_attn",),
            "feed_forward": ("linear1", "linear2"),
            "norm1": ("norm1",),
            "norm2": ("norm2",),
        }
        if cross:
            layer |= {"cross_attention": ("multihead_attn",), "norm3": ("norm3",)}
        table |= stack_modules(f"transformer.{stack}", f"{base}{stack}", parts={"norm": "norm"}, layer=layer)
    return table


def reference(cfg: TransformerConfig) -> Reference:
    kwargs = dict(
        d_model=cfg.d_model,
        nhead=cfg.n_heads,
        num_encoder_layers=cfg.n_encoder_layers,
        num_decoder_layers=cfg.n_decoder_layers,
        dim_feedforward=cfg.d_ff,
        activation=cfg.activation,
        bias=cfg.bias,
    )
    if not cfg.vocab_size:
        return Reference(library="torch", target="torch.nn.Transformer", kwargs=kwargs, inputs="seq2seq_embeddings")
    return Reference(
        library="archzoo",
        target=f"{__name__}.Seq2SeqTransformer",
        kwargs={
            **kwargs,
            "vocab_size": cfg.vocab_size,
            "share_embeddings": cfg.share_embeddings,
            "tie_output": cfg.tie_output,
        },
        inputs="seq2seq_token_ids",
        note="torch.nn.Transformer with nn.Embedding in front and an nn.Linear projection behind",
    )


ARCHITECTURE = Architecture(
    name="transformer",
    title="Transformer (encoder-decoder)",
    summary="The original encoder-decoder Transformer: post-LN encoder and decoder stacks with "
    "self-attention, cross-attention and ReLU feed-forward layers, as torch.nn.Transformer.",
    citation="Vaswani et al. Attention Is All You Need. NeurIPS 2017. arXiv:1706.03762",
    config_model=TransformerConfig,
    build=build,
    seq_len=lambda cfg: 512,
    seq_len_note=lambda cfg: source_target_note(512),
    reference=reference,
)

register_architectures = architectures_hook(ARCHITECTURE)


def _seq2seq_transformer_class() -> type:
    import torch
    from torch import nn

    class Seq2SeqTransformer(nn.Module):
        """torch.nn.Transformer with token embeddings in front and the pre-softmax projection behind."""

        def __init__(self, vocab_size: int, share_embeddings: bool, tie_output: bool, **transformer_kwargs: Any):
            super().__init__()
            d = transformer_kwargs["d_model"]
            self.transformer = nn.Transformer(**transformer_kwargs)
            self.source_embedding = nn.Embedding(vocab_size, d)
            self.target_embedding = self.source_embedding if share_embeddings else nn.Embedding(vocab_size, d)
            self.output_projection = nn.Linear(d, vocab_size, bias=False)
            if tie_output:
                self.output_projection.weight = self.target_embedding.weight

        def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
            out = self.transformer(self.source_embedding(src), self.target_embedding(tgt))
            return self.output_projection(out)

    Seq2SeqTransformer.__qualname__ = "Seq2SeqTransformer"  # as if defined at module level, where it is found
    return Seq2SeqTransformer


def __getattr__(name: str) -> Any:
    # Seq2SeqTransformer needs torch, so it is made on first access: importing this plugin stays torch-free.
    if name == "Seq2SeqTransformer":
        cls = _seq2seq_transformer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
