"""The configuration base (`archzoo.architecture.TransformerConfig`) and the parts Transformer plugins share
(`archzoo.decoder_parts`): what a family states through them is what it would have written out itself."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from pydantic import Field, PositiveInt, ValidationError

from archzoo.architecture import Architecture, TransformerConfig, check_head_count, check_kv_heads, context_length
from archzoo.blocks import Block, layer_norm
from archzoo.decoder_parts import (
    HeadWidthConfig,
    attention_modules,
    causal_attention,
    d_head_field,
    decoder_heads,
    decoder_kwargs,
    decoder_modules,
    decoder_reference,
    decoder_symbols,
    decoder_table,
    fused_attention,
    head_dim_kwargs,
    kv_heads,
    kv_heads_field,
    rotary_fraction,
    settings_ignored,
    with_norms,
)
from archzoo.formula import sym
from archzoo.hf_vocabulary import HFTable
from archzoo.plugin_parts import architectures_hook, describe_heads, head_classes, hf_readers_hook, table_values


class _Tiny(TransformerConfig):
    DEFAULTS: ClassVar[dict[str, Any]] = {"vocab_size": 100, "d_model": 64, "n_layers": 2, "n_heads": 4}
    DESCRIPTIONS: ClassVar[dict[str, str]] = {"d_model": "model width (hidden_size)"}

    d_ff: PositiveInt = Field(256, description="feed-forward width")
    max_positions: PositiveInt = Field(32, description="context length")


class _TinyVariant(_Tiny):
    DEFAULTS: ClassVar[dict[str, Any]] = {"d_model": 96, "d_ff": 384}


def test_defaults_and_descriptions_re_declare_the_base_keys_first_in_the_base_order():
    fields = _Tiny.model_fields
    assert list(fields) == ["vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_positions"]
    assert [fields[k].default for k in ("vocab_size", "d_model", "n_layers", "n_heads")] == [100, 64, 2, 4]
    assert fields["d_model"].description == "model width (hidden_size)"
    assert fields["n_heads"].description == "attention heads"  # the base's wording where the family gives none
    assert _Tiny().model_dump() == {
        "vocab_size": 100,
        "d_model": 64,
        "n_layers": 2,
        "n_heads": 4,
        "d_ff": 256,
        "max_positions": 32,
    }


def test_a_variant_changes_its_parents_values_including_the_parents_own_keys():
    variant = _TinyVariant()
    assert (variant.d_model, variant.d_ff, variant.vocab_size) == (96, 384, 100)
    assert list(_TinyVariant.model_fields) == list(_Tiny.model_fields)
    assert _TinyVariant.model_fields["d_model"].description == "model width (hidden_size)"


def test_the_base_keys_keep_their_constraints_and_strictness():
    with pytest.raises(ValidationError, match="greater than 0"):
        _Tiny(n_layers=0)
    with pytest.raises(ValidationError, match="valid integer"):
        _Tiny(d_model="64")


def test_the_heads_check_runs_unless_the_family_turns_it_off():
    with pytest.raises(ValidationError, match=r"n_heads: d_model 64 is not divisible by n_heads 3; choose a divisor"):
        _Tiny(n_heads=3)

    class Rounding(_Tiny):
        HEADS_DIVIDE_WIDTH: ClassVar[bool] = False

    assert Rounding(n_heads=3).n_heads == 3


def test_a_key_the_bases_lack_or_a_key_given_twice_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="'d_kv' is no key of its bases"):

        class Unknown(TransformerConfig):
            DEFAULTS: ClassVar[dict[str, Any]] = {"d_kv": 64}

    with pytest.raises(TypeError, match="'d_model' is declared in the class body and in DEFAULTS"):

        class Twice(TransformerConfig):
            DEFAULTS: ClassVar[dict[str, Any]] = {"d_model": 64}
            d_model: PositiveInt = Field(64, description="model width")


def test_a_base_key_without_a_default_stays_required():
    class Partial(TransformerConfig):
        DEFAULTS: ClassVar[dict[str, Any]] = {"vocab_size": 10, "d_model": 8, "n_layers": 1}

    with pytest.raises(ValidationError, match="n_heads"):
        Partial()


def test_every_built_in_transformer_family_puts_the_four_keys_first(host):
    on_base = {
        name: arch for name, arch in host.architectures.items() if issubclass(arch.config_model, TransformerConfig)
    }
    assert len(on_base) >= 10, sorted(on_base)
    for name, arch in on_base.items():
        assert list(arch.config_model.model_fields)[:4] == ["vocab_size", "d_model", "n_layers", "n_heads"], name


def test_the_shared_head_checks_name_their_key():
    with pytest.raises(ValueError, match=r"^n_kv_heads: n_heads 8 is not divisible by n_kv_heads 3; choose a divisor"):
        check_kv_heads(8, 3)
    check_kv_heads(8, None)  # as many key/value heads as query heads
    with pytest.raises(
        ValueError, match=r"^n_heads: d_model 4 leaves each of 8 heads 0 wide; choose at most 4 heads, or"
    ):
        check_head_count(4, 8, "or give d_head")


def test_the_default_sequence_length_is_the_context():
    arch = Architecture(
        name="tiny", title="Tiny", summary="s", citation="c", config_model=_Tiny, build=lambda cfg: Block("x", "x", "")
    )
    assert arch.seq_len(_Tiny()) == 32 == context_length(_Tiny(max_positions=32))


def test_the_decoder_heads_hold_what_torch_s_linears_hold():
    torch = pytest.importorskip("torch")
    d, V = sym("d", 64), sym("V", 100)
    cases = {
        "sequence_classification": torch.nn.Linear(64, 5, bias=False),
        "token_classification": torch.nn.Linear(64, 5),
        "question_answering": torch.nn.Linear(64, 2),
    }
    for head, module in cases.items():
        (block,) = decoder_heads(head, d, V, tied=False, num_labels=5)
        assert block.params.evaluate() == sum(p.numel() for p in module.parameters()), head
    (untied,) = decoder_heads("lm", d, V, tied=False)
    assert untied.params.evaluate() == torch.nn.Linear(64, 100, bias=False).weight.numel()
    (tied,) = decoder_heads("lm", d, V, tied=True)
    assert tied.params.evaluate() == 0 and tied.tied_to == "token"
    assert decoder_heads("none", d, V, tied=False) == []
    (classifier,) = decoder_heads("token_classification", d, V, tied=False, token_classifier="classifier")
    assert classifier.name == "classifier"


def test_grouped_key_value_heads_get_their_own_symbol_and_width():
    h, d_h, inner = sym("h", 8), sym("d_h", 16), sym("d", 128)
    assert kv_heads(8, None, h, d_h, inner) == (h, inner)
    assert kv_heads(8, 8, h, d_h, inner) == (h, inner)
    h_kv, width = kv_heads(8, 2, h, d_h, inner)
    assert (h_kv.evaluate(), width.evaluate()) == (2, 2 * 16)


def test_module_rows_name_the_base_model_prefix_only_in_head_classes():
    layer = {"norm": "input_layernorm", **attention_modules(out="dense", norms=("q_layernorm", "k_layernorm"))}
    rows = decoder_modules("phi", "lm", layer, final_norm="final_layernorm")
    assert rows["phi.token"] == ("model.embed_tokens",)
    assert rows["phi.layers.layer.attention.out_proj"] == ("self_attn.dense",)
    assert rows["phi.layers.layer.attention.k_norm"] == ("self_attn.k_layernorm",)
    assert rows["phi.final_norm"] == ("model.final_layernorm",)
    assert rows["phi.lm_head"] == ("lm_head",)
    assert decoder_modules("phi", "none", layer)["phi.layers"] == ("layers",)


def test_a_table_reads_every_key_it_maps_and_the_plugin_computes_the_rest():
    table = HFTable(
        model_type="tiny",
        config_class="TinyConfig",
        defaults={"vocab_size": 10, "hidden_size": 8, "pad_token_id": None, "rope_parameters": None},
        aliases={},
        read={
            "vocab_size": "vocab_size",
            "hidden_size": "d_model",
            "head_dim": "d_head",  # not a field of the class: read when a file sets it
            "pad_token_id": "(checked: inside the vocabulary)",
            "rope_parameters": "rotary_fraction",
            "num_labels": "num_labels",
        },
        ignored={},
        refused={},
        base_class="TinyModel",
        classes={"TinyModel": {"head": "none"}},
    )
    hf = {"vocab_size": 10, "hidden_size": 8, "pad_token_id": None, "rope_parameters": None, "num_labels": 3}
    assert table_values(hf, table, rotary_fraction=0.5) == {
        "vocab_size": 10,
        "d_model": 8,
        "d_head": None,
        "num_labels": 3,
        "rotary_fraction": 0.5,
    }
    assert table_values({**hf, "head_dim": 4}, table, rotary_fraction=0.5)["d_head"] == 4


def test_heads_are_described_and_tabled_from_the_class_map():
    classes = {"lm": "XForCausalLM", "none": "XModel", "sequence_classification": "XForSequenceClassification"}
    assert describe_heads(classes, prefix="X") == (
        "lm (XForCausalLM), none (XModel) or sequence_classification (a bias-free score layer on every token, the "
        "last non-padding one's kept): XFor..."
    )
    assert describe_heads({"lm": "YForCausalLM", "none": "YModel"}) == "lm (YForCausalLM) or none (YModel)"
    assert list(head_classes(classes)) == ["XModel", "XForCausalLM", "XForSequenceClassification"]
    assert head_classes(classes)["XForCausalLM"] == {"head": "lm"}


def test_the_hooks_are_archzoo_hook_implementations_that_register_what_they_hold():
    arch = object()
    registered: list[Any] = []
    hook = architectures_hook(arch, arch)  # type: ignore[arg-type]
    assert hasattr(hook, "archzoo_impl") and hook.__name__ == "register_architectures"
    hook(registered.append)
    assert registered == [arch, arch]

    def reader(hf: dict[str, Any]) -> dict[str, Any]:
        return {}

    calls: list[tuple[Any, ...]] = []
    readers = hf_readers_hook({"tiny": (reader, "tiny"), "other": (reader, None)})
    assert hasattr(readers, "archzoo_impl") and readers.__name__ == "register_hf_readers"
    readers(lambda *args, **kwargs: calls.append((*args, kwargs["architecture"])))
    assert calls == [("tiny", reader, "tiny"), ("other", reader, None)]


def test_a_causal_attention_holds_its_torch_projections_and_keeps_its_cache_when_norms_join():
    torch = pytest.importorskip("torch")
    d, h, d_h = sym("d", 64), sym("h", 8), sym("d_h", 8)
    grouped = causal_attention(d, d, h, d_h, 8, 2, bias=True, out_bias=False, details=", QK-norm")
    projections = [torch.nn.Linear(64, 64), torch.nn.Linear(64, 16), torch.nn.Linear(64, 16)]
    projections.append(torch.nn.Linear(64, 64, bias=False))
    assert grouped.params.evaluate() == sum(p.numel() for m in projections for p in m.parameters())
    assert grouped.description == "causal grouped-query self-attention with rotary positions, QK-norm"
    assert causal_attention(d, d, h, d_h, 8, None, bias=False).description == (
        "causal self-attention with rotary positions"
    )
    norms = [layer_norm("q_norm", d_h, bias=False), layer_norm("k_norm", d_h, bias=False)]
    normed = with_norms(grouped, norms)
    assert normed.params.evaluate() == grouped.params.evaluate() + 2 * torch.nn.LayerNorm(8, bias=False).weight.numel()
    assert (normed.kv_cache, normed.heads, normed.kv_heads, normed.d_head) == (
        grouped.kv_cache,
        grouped.heads,
        grouped.kv_heads,
        grouped.d_head,
    )
    assert [c.name for c in normed.children][-2:] == ["q_norm", "k_norm"]


def test_an_architecture_without_a_context_must_say_what_its_sequence_length_is():
    class Positionless(TransformerConfig):
        DEFAULTS: ClassVar[dict[str, Any]] = {"vocab_size": 10, "d_model": 8, "n_layers": 1, "n_heads": 2}

    with pytest.raises(ValidationError, match="seq_len: Positionless has no max_positions"):
        Architecture(
            name="tiny",
            title="Tiny",
            summary="s",
            citation="c",
            config_model=Positionless,
            build=lambda cfg: Block("x", "x", ""),
        )
    given = Architecture(
        name="tiny",
        title="Tiny",
        summary="s",
        citation="c",
        config_model=Positionless,
        build=lambda cfg: Block("x", "x", ""),
        seq_len=lambda cfg: 16,
    )
    assert given.seq_len(Positionless()) == 16


def test_the_rotary_fraction_is_the_files_or_the_classs_and_an_unknown_type_is_refused():
    assert rotary_fraction(None, 0.25, "StableLmConfig") == 0.25
    assert rotary_fraction({"rope_type": "default"}, 0.5, "PhiConfig") == 0.5
    assert (
        rotary_fraction({"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.4}, 0.5, "PhiConfig") == 0.4
    )
    with pytest.raises(ValueError, match=r'^rope_parameters: rope_type "bogus" is not one transformers\' PhiConfig'):
        rotary_fraction({"rope_type": "bogus"}, 0.5, "PhiConfig")
    with pytest.raises(ValueError, match=r"^rope_parameters: expected an object"):
        rotary_fraction("default", 0.5, "PhiConfig")


class _HeadWidth(HeadWidthConfig):
    """A family on the head-width base: its own keys in its own order, checked as transformers' classes fail."""

    DEFAULTS: ClassVar[dict[str, Any]] = {"vocab_size": 100, "d_model": 48, "n_layers": 2, "n_heads": 4}

    n_kv_heads: PositiveInt | None = kv_heads_field()
    d_head: PositiveInt | None = d_head_field()
    activation: str = Field("silu", description="activation")
    max_positions: PositiveInt = Field(32, description="context length")


def test_the_head_width_base_checks_what_a_rotary_decoder_class_refuses():
    assert list(_HeadWidth.model_fields) == [
        "vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads", "d_head", "activation", "max_positions"
    ]  # fmt: skip
    # 7 heads do not divide 48: a head is rounded down to 6, as transformers does, not refused
    assert (_HeadWidth().head_width, _HeadWidth(n_heads=7).head_width, _HeadWidth(d_head=10).head_width) == (12, 6, 10)
    refusals = [
        (dict(d_model=4, n_heads=8), r"n_heads: d_model 4 leaves each of 8 heads 0 wide; .*or give d_head"),
        (dict(n_kv_heads=3), r"n_kv_heads: n_heads 4 is not divisible by n_kv_heads 3"),
        (dict(n_heads=16), r"n_heads: rotary positions turn pairs of channels, .* got 3 \(d_model 48 / n_heads 16\)"),
        (dict(d_head=7), r"d_head: rotary positions turn pairs of channels, .* got 7;"),
        (dict(activation="nope"), r"activation: unknown activation 'nope'"),
    ]
    for config, message in refusals:
        with pytest.raises(ValidationError, match=message):
            _HeadWidth(**config)


@pytest.mark.reference
def test_the_decoder_symbols_and_keyword_arguments_are_what_transformers_builds(T):
    """Heads that divide the width, heads of d_model // n_heads rounded down, and heads of their own width: the
    query projection transformers' Starcoder2Attention builds from decoder_kwargs is ``inner`` wide, h·d_h."""
    from archzoo.testing import build_model

    for config in (dict(n_heads=4), dict(n_heads=7), dict(n_heads=4, d_head=10)):
        cfg = _HeadWidth(**config, n_kv_heads=1)
        s = decoder_symbols(cfg)
        kwargs = dict(decoder_kwargs(SimpleNamespace(**cfg.model_dump(), d_ff=16)), **head_dim_kwargs(cfg))
        assert kwargs["num_key_value_heads"] == 1 and kwargs["hidden_act"] == "silu"
        model = build_model("Starcoder2Model", T.Starcoder2Config(**kwargs))
        q_proj = model.layers[0].self_attn.q_proj
        assert (q_proj.in_features, q_proj.out_features) == (s.d.evaluate(), s.inner.evaluate()), config
        assert (s.h * s.d_h).evaluate() == s.inner.evaluate()
    ref = decoder_reference({"lm": "XForCausalLM", "none": "XModel"}, "none", "XConfig", {"vocab_size": 3})
    assert (ref.target, ref.config_class, ref.kwargs) == (
        "transformers.XModel",
        "transformers.XConfig",
        {"vocab_size": 3},
    )


def test_a_fused_attention_holds_its_torch_linears_and_a_multi_head_cache():
    torch = pytest.importorskip("torch")
    d = sym("d", 64)
    for bias in (True, False):
        block = fused_attention(d, 3 * d, bias=bias, qkv="q", scores="s", description="a")
        linears = (torch.nn.Linear(64, 192, bias=bias), torch.nn.Linear(64, 64, bias=bias))
        assert block.params.evaluate() == sum(p.numel() for m in linears for p in m.parameters())
        qkv, core, out = block.children
        assert (qkv.name, core.kind, out.name) == ("qkv_proj", "attention_core", "out_proj")
        assert block.kv_cache.evaluate() == 2 * 64  # a key and a value of d per token and layer


def test_the_table_of_a_decoder_sets_its_base_class_and_head_classes():
    table = decoder_table(
        "x", "XConfig", {"lm": "XForCausalLM", "none": "XModel"}, defaults={}, read={}, ignored=settings_ignored()
    )
    assert (table.base_class, list(table.classes), table.refused, table.aliases) == (
        "XModel", ["XModel", "XForCausalLM"], {}, {}
    )  # fmt: skip
    assert list(table.ignored) == ["initializer_range", "layer_norm_eps", "use_cache", "bos_token_id", "eos_token_id"]


def test_the_activation_kit_refuses_an_activation_it_does_not_know_and_registers_through_a_hook():
    from types import SimpleNamespace as Terms

    from archzoo.decoder_saves import configured_activation
    from archzoo.saved_tensors import UnsupportedActivationMemory, activation_memory_hook

    assert configured_activation(Terms(activation="", config=Terms(activation="relu")), "x") == "relu"  # type: ignore[arg-type]
    with pytest.raises(UnsupportedActivationMemory, match=r"^x: activation 'prelu': the formula knows what gelu"):
        configured_activation(Terms(activation="prelu", config=None), "x")  # type: ignore[arg-type]
    saves: list[Any] = []
    hook = activation_memory_hook("a", "b")  # type: ignore[arg-type]
    assert hasattr(hook, "archzoo_impl") and hook.__name__ == "register_activation_memory"
    hook(saves.append)
    assert saves == ["a", "b"]
