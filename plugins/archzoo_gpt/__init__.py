"""archzoo plugin: GPT-style decoders (GPT-1, GPT-2, the GPT-3 table) with learned positions."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.architecture import check_activation, check_heads
from archzoo.blocks import attention, composite, embedding, feed_forward, layer_norm, linear, repeat
from archzoo.symbols import symbol

__version__ = "0.1.0"


class GptConfig(ArchConfig):
    """A decoder-only Transformer; defaults are GPT-2 small (Radford et al. 2019)."""

    vocab_size: PositiveInt = Field(50257, description="BPE vocabulary size")
    max_positions: PositiveInt = Field(1024, description="context length (learned positions)")
    d_model: PositiveInt = Field(768, description="model width")
    n_layers: PositiveInt = Field(12, description="decoder layers")
    n_heads: PositiveInt = Field(12, description="attention heads")
    d_head: PositiveInt | None = Field(None, description="width of one head (null = d_model / n_heads)")
    d_ff: PositiveInt | None = Field(None, description="feed-forward width (null = 4 d_model)")
    tie_embeddings: bool = Field(True, description="LM head shares the token embedding matrix")
    bias: bool = Field(True, description="biases in the linear layers")
    head: Literal["lm", "none"] = Field("lm", description="lm (GPT2LMHeadModel) or none (GPT2Model)")
    final_norm: bool = Field(True, description="LayerNorm after the last layer (GPT-2); GPT-1 has none")
    activation: str = Field("gelu_new", description="feed-forward activation")

    @model_validator(mode="after")
    def _check(self) -> "GptConfig":
        if self.d_head is None:
            check_heads(self.d_model, self.n_heads, ", or give d_head explicitly (GPT-3 XL: n_heads 24, d_head 128)")
        check_activation(self.activation)
        return self


def build(cfg: GptConfig):
    d = symbol("d", cfg.d_model)
    V = symbol("V", cfg.vocab_size)
    P = symbol("P", cfg.max_positions)
    L = symbol("L", cfg.n_layers)
    if cfg.d_head is None:
        inner = d  # h heads of d / h
    else:
        inner = symbol("h", cfg.n_heads) * symbol("d_h", cfg.d_head)
    d_ff = 4 * d if cfg.d_ff is None else symbol("d_ff", cfg.d_ff)

    layer_parts = [
        layer_norm("attention_norm", d, bias=True),
        attention("attention", d, inner, bias=cfg.bias, causal=True),
        layer_norm("mlp_norm", d, bias=True),
        feed_forward("mlp", d, d_ff, activation=cfg.activation, bias=cfg.bias),
    ]
    layer_description = "pre-LN decoder layer: norm, causal attention, add; norm, MLP, add"
    if not cfg.final_norm:  # GPT-1 normalises after each sub-block
        layer_parts = [layer_parts[1], layer_parts[0], layer_parts[3], layer_parts[2]]
        layer_description = "post-LN decoder layer: causal attention, add & norm; MLP, add & norm"
    children = [
        embedding("token", V, d, role="token", description="token embeddings"),
        embedding("position", P, d, role="position", description="learned position embeddings"),
        repeat(composite("layer", "decoder_layer", layer_parts, layer_description), L, name="layers"),
    ]
    if cfg.final_norm:
        children.append(layer_norm("final_norm", d))
    if cfg.head == "lm":
        children.append(
            linear("lm_head", d, V, bias=False, tied_to="token" if cfg.tie_embeddings else "",
                   description="next-token logits" + (", weight tied to the token embedding" if cfg.tie_embeddings else ""))
        )
    return composite("gpt", "model", children, "GPT decoder")


def reference(cfg: GptConfig) -> Reference | None:
    if cfg.d_head is not None and cfg.d_head * cfg.n_heads != cfg.d_model:
        return None  # transformers' GPT-2 ties the head width to d_model / n_heads
    if not cfg.bias:
        return None
    if not cfg.final_norm:
        if cfg.d_ff is not None and cfg.d_ff != 4 * cfg.d_model:
            return None
        if cfg.activation not in ("relu", "silu", "gelu", "swish"):
            return None  # the only activations transformers' OpenAI GPT accepts
        target = "OpenAIGPTLMHeadModel" if cfg.head == "lm" else "OpenAIGPTModel"
        return Reference(
            library="transformers", target=f"transformers.{target}", config_class="transformers.OpenAIGPTConfig",
            kwargs=dict(vocab_size=cfg.vocab_size, n_positions=cfg.max_positions, n_embd=cfg.d_model,
                        n_layer=cfg.n_layers, n_head=cfg.n_heads, afn=cfg.activation,
                        tie_word_embeddings=cfg.tie_embeddings),
        )
    target = "GPT2LMHeadModel" if cfg.head == "lm" else "GPT2Model"
    return Reference(
        library="transformers", target=f"transformers.{target}", config_class="transformers.GPT2Config",
        kwargs=dict(vocab_size=cfg.vocab_size, n_positions=cfg.max_positions, n_embd=cfg.d_model,
                    n_layer=cfg.n_layers, n_head=cfg.n_heads, n_inner=cfg.d_ff,
                    activation_function=cfg.activation, tie_word_embeddings=cfg.tie_embeddings),
    )


def _from_gpt2(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        vocab_size=hf.get("vocab_size", 50257), max_positions=hf.get("n_positions", 1024),
        d_model=hf.get("n_embd", 768), n_layers=hf.get("n_layer", 12), n_heads=hf.get("n_head", 12),
        d_ff=hf.get("n_inner"), activation=hf.get("activation_function", "gelu_new"), head="none",
    )


def _from_openai_gpt(hf: dict[str, Any]) -> dict[str, Any]:
    return dict(
        vocab_size=hf.get("vocab_size", 40478), max_positions=hf.get("n_positions", 512),
        d_model=hf.get("n_embd", 768), n_layers=hf.get("n_layer", 12), n_heads=hf.get("n_head", 12),
        activation=hf.get("afn", "gelu"), final_norm=False, head="none",
    )


ARCHITECTURE = Architecture(
    name="gpt",
    title="GPT",
    summary="Decoder-only Transformer with learned positions and causal self-attention; covers GPT-1, "
    "GPT-2 and the GPT-3 model table.",
    citation="Radford, Wu, Child, Luan, Amodei, Sutskever. Language Models are Unsupervised Multitask "
    "Learners. OpenAI 2019; Brown et al. Language Models are Few-Shot Learners. NeurIPS 2020, arXiv:2005.14165",
    config_model=GptConfig,
    build=build,
    seq_len=lambda cfg: cfg.max_positions,
    max_seq_len=lambda cfg: cfg.max_positions,
    reference=reference,
    hf_model_types={"gpt2": _from_gpt2, "openai-gpt": _from_openai_gpt},
)


@hookimpl
def register_architectures(register):
    register(ARCHITECTURE)
