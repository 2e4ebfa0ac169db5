"""The whisper plugin against transformers: defaults, published shapes, every head class, random configurations over
every option, training, prefill and decode FLOPs, the key/value caches, config.json files key by key, refusals.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Whisper class transformers 5.23
builds on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for its eager forward pass of
batch 1 (30 s of log-mel frames, ``num_mel_bins`` by ``2 x max_source_positions``, which its encoder insists on, and
N decoder tokens), or a figure the Whisper authors printed (named beside it). The model's own inputs here are built
by this module (`_inputs`) from the configuration, not by the plugin.
"""

from __future__ import annotations

import random
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from archzoo.architecture import parse_config
from archzoo.errors import ArchzooError, ConfigError, HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import NOT_GENERATIVE, make_report
from archzoo.testing import assert_matches_reference, build_model, check_plugin
from family_checks import (
    assert_random_config_matches,
    assert_table_is_the_configuration_class,
    counter,
    table_of,
    write_json,
)
from transformers_models import n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "WhisperForConditionalGeneration",
    "none": "WhisperModel",
    "causal_lm": "WhisperForCausalLM",
    "audio_classification": "WhisperForAudioClassification",
}
DATA = Path(__file__).resolve().parent / "data" / "hf_published"

count = counter("whisper")


def _inputs(model: Any, config: Any, n: int, dtype: Any = None) -> dict[str, Any]:
    """One forward pass of batch 1: the mel frames WhisperEncoder checks for (num_mel_bins by twice
    max_source_positions) where the class has an encoder, n decoder tokens where it has a decoder."""
    import torch

    name = type(model).__name__
    tokens = torch.zeros(1, n, dtype=torch.long, device="meta")
    frames = torch.zeros(1, config.num_mel_bins, 2 * config.max_source_positions, device="meta", dtype=dtype)
    if name == "WhisperForCausalLM":
        return {"input_ids": tokens}
    if name == "WhisperForAudioClassification":
        return {"input_features": frames}
    return {"input_features": frames, "decoder_input_ids": tokens}


def _flops(model: Any, config: Any, n: int, **extra: Any) -> int:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**_inputs(model, config, n, **extra))
    return counter.get_total_flops()


def _figures(T, model_class: str, config: Any, n: int) -> tuple[int, int]:
    model = build_model(model_class, config)
    return n_params(model), _flops(model, config, n)


# ---- the plugin and its defaults --------------------------------------------------------------------------


@pytest.mark.reference
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, configuration keys, reference built block by block, HF table."""
    assert check_plugin("whisper") == []


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_defaults_are_transformers_defaults(T, host, head):
    """The configuration's defaults are WhisperConfig's (whisper-tiny), for every class."""
    config = T.WhisperConfig()
    params, flops_1 = _figures(T, CLASSES[head], config, 1)
    assert count(1, head=head).params == params
    assert count(1, head=head).flops == flops_1
    assert count(7, head=head).flops == _figures(T, CLASSES[head], config, 7)[1]


#: Radford et al. 2022, "Robust Speech Recognition via Large-Scale Weak Supervision", Table 1 (layers, width,
#: heads, parameters; layers are each of the encoder's and the decoder's), feed-forward 4 x width; large-v3 has 128
#: mel bins and 51,866 tokens (openai/whisper-large-v3's card); the turbo model is large-v3 with 4 decoder layers
#: (openai/whisper's README prints 809 M). The printed sizes are nominal, each above transformers' exact count.
PUBLISHED: dict[str, tuple[dict[str, Any], float]] = {
    "tiny": (dict(d_model=384, n_encoder_layers=4, n_decoder_layers=4, n_encoder_heads=6, n_decoder_heads=6), 39e6),
    "base": (dict(d_model=512, n_encoder_layers=6, n_decoder_layers=6, n_encoder_heads=8, n_decoder_heads=8), 74e6),
    "small": (
        dict(d_model=768, n_encoder_layers=12, n_decoder_layers=12, n_encoder_heads=12, n_decoder_heads=12),
        244e6,
    ),
    "medium": (
        dict(d_model=1024, n_encoder_layers=24, n_decoder_layers=24, n_encoder_heads=16, n_decoder_heads=16),
        769e6,
    ),
    "large": (
        dict(d_model=1280, n_encoder_layers=32, n_decoder_layers=32, n_encoder_heads=20, n_decoder_heads=20),
        1550e6,
    ),
    "large-v3": (
        dict(d_model=1280, n_encoder_layers=32, n_decoder_layers=32, n_encoder_heads=20, n_decoder_heads=20)
        | dict(num_mel_bins=128, vocab_size=51866),
        1550e6,
    ),
    "large-v3-turbo": (
        dict(d_model=1280, n_encoder_layers=32, n_decoder_layers=4, n_encoder_heads=20, n_decoder_heads=20)
        | dict(num_mel_bins=128, vocab_size=51866),
        809e6,
    ),
}


def _hf_kwargs(shape: dict[str, Any]) -> dict[str, Any]:
    d = shape["d_model"]
    return dict(
        d_model=d,
        encoder_layers=shape["n_encoder_layers"],
        decoder_layers=shape["n_decoder_layers"],
        encoder_attention_heads=shape["n_encoder_heads"],
        decoder_attention_heads=shape["n_decoder_heads"],
        encoder_ffn_dim=4 * d,
        decoder_ffn_dim=4 * d,
        num_mel_bins=shape.get("num_mel_bins", 80),
        vocab_size=shape.get("vocab_size", 51865),
    )


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_shapes(T, host, model_id):
    shape, printed = PUBLISHED[model_id]
    kwargs = _hf_kwargs(shape)
    report = count(16, d_ff_encoder=kwargs["encoder_ffn_dim"], d_ff_decoder=kwargs["decoder_ffn_dim"], **shape)
    model = build_model("WhisperForConditionalGeneration", T.WhisperConfig(**kwargs))
    assert report.params == n_params(model)
    assert 0 < printed - report.params < 0.035 * printed  # nominal figures, within 3.5% above the exact count
    if model_id in ("tiny", "large-v3-turbo"):  # FLOPs of the smallest and of the one whose sides differ
        assert report.flops == _flops(model, model.config, 16)


def test_large_v3_exact_count_is_pinned(host):
    """Whisper large-v3 (the closing note's figure): 1,543,490,560 parameters, measured with transformers 5.23's
    WhisperForConditionalGeneration on the meta device and rebuilt from transformers by test_published_shapes."""
    shape, _ = PUBLISHED["large-v3"]
    assert count(d_ff_encoder=5120, d_ff_decoder=5120, **shape).params == 1_543_490_560


@pytest.mark.reference
def test_the_encoder_position_table_is_a_parameter(T, host):
    """transformers never trains the encoder's sinusoidal table (requires_grad_(False)), but it is an nn.Embedding
    weight, so parameters() holds it; openai/whisper's own model keeps it as a buffer instead."""
    model = build_model("WhisperModel", T.WhisperConfig())
    names = dict(model.named_parameters())
    assert "encoder.embed_positions.weight" in names
    assert not names["encoder.embed_positions.weight"].requires_grad
    position = next(b for p, _, b in count().root.walk() if p == "whisper.encoder.position")
    assert position.params.evaluate() == names["encoder.embed_positions.weight"].numel() == 1500 * 384


# ---- every head class, random configurations --------------------------------------------------------------

_SMALL = dict(vocab_size=97, num_mel_bins=8, d_model=16, n_encoder_layers=2, n_decoder_layers=3, n_encoder_heads=2)
_SMALL |= dict(n_decoder_heads=4, d_ff_encoder=24, d_ff_decoder=20, max_source_positions=10, max_target_positions=12)
_SMALL |= dict(classifier_proj_size=6, num_labels=3)


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class(host, head):
    config = dict(_SMALL, head=head)
    assert host.architecture("whisper").reference(count(**config).config).target == f"transformers.{CLASSES[head]}"
    assert_random_config_matches(host, "whisper", config, (1, 5, 12))


def _random_config(rng: random.Random) -> dict[str, Any]:
    heads = rng.choice([1, 2, 4])
    d_ff = rng.randint(1, 40)
    return dict(
        vocab_size=rng.randint(2, 120),
        num_mel_bins=rng.randint(1, 12),
        d_model=4 * heads * rng.randint(1, 3),
        n_encoder_layers=rng.randint(1, 3),
        n_decoder_layers=rng.randint(1, 3),
        n_encoder_heads=heads,
        n_decoder_heads=rng.choice([1, heads]),
        d_ff_encoder=d_ff,
        d_ff_decoder=rng.choice([d_ff, rng.randint(1, 40)]),  # the same width on both sides: one symbol, d_ff
        max_source_positions=rng.randint(1, 12),
        max_target_positions=rng.randint(8, 16),
        activation=rng.choice(["gelu", "relu", "silu", "gelu_new"]),
        tie_embeddings=rng.random() < 0.6,
        head=rng.choice(list(CLASSES)),
        use_weighted_layer_sum=rng.random() < 0.5,
        classifier_proj_size=rng.randint(1, 9),
        num_labels=rng.randint(1, 5),
    )


CONFIGS = [_random_config(random.Random(seed)) for seed in range(12)]


@pytest.mark.reference
@pytest.mark.parametrize("config", CONFIGS, ids=[f"seed{i}" for i in range(len(CONFIGS))])
def test_random_configs_equal_transformers(host, config):
    assert_random_config_matches(host, "whisper", config, (1, 8))


@pytest.mark.reference
def test_the_encoder_always_reads_30_seconds_whatever_n(T, host):
    """N is the number of decoder tokens: the encoder's FLOPs are FlopCounterMode's count for WhisperEncoder over
    its mel frames at every N, and the audio classifier's FLOPs do not change with N at all."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    reports = [count(n, **_SMALL) for n in (1, 5, 12)]
    config = T.WhisperConfig(**reports[0].architecture.reference(reports[0].config).kwargs)
    model = build_model("WhisperModel", config)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model.encoder(_inputs(model, config, 1)["input_features"])
    for report in reports:
        encoder = next(v for v in report.root.visits() if v.path == "whisper.encoder")
        assert encoder.flops.evaluate(N=report.seq_len) == counter.get_total_flops()
    # the classifier reads no tokens: any N, beyond the decoder's positions too, is the same pass
    longest = reports[0].config.max_target_positions
    classifier = [count(n, **dict(_SMALL, head="audio_classification")).flops for n in (1, 12, longest + 1)]
    assert classifier[0] == classifier[1] == classifier[2]


# ---- training, prefill, decode, the caches -----------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_training_flops_equal_flop_counter_mode(host, head):
    from archzoo.reference import reference_training_flops

    arch = host.architecture("whisper")
    for config in (dict(_SMALL, head=head), dict(_SMALL, head=head, tie_embeddings=False, use_weighted_layer_sum=True)):
        cfg = parse_config(arch, config)
        assert make_report(arch, cfg, 5).training_flops == reference_training_flops(arch.reference(cfg), 5), config


@pytest.mark.reference
@pytest.mark.parametrize(
    "head, changes",
    [
        ("lm", {}),
        ("lm", dict(tie_embeddings=False)),
        ("none", {}),
        ("causal_lm", {}),
        # more decoder than encoder layers: the class sizes its own cache by decoder_layers, and archzoo measures it so
        ("causal_lm", dict(n_encoder_layers=1, n_decoder_layers=3)),
        ("lm", dict(n_encoder_layers=3, n_decoder_layers=1)),
    ],
)
def test_prefill_and_decode_equal_flop_counter_mode(host, head, changes):
    from archzoo.reference import reference_decode_flops, reference_prefill_flops

    arch = host.architecture("whisper")
    cfg = parse_config(arch, dict(_SMALL, head=head, **changes))
    ref = arch.reference(cfg)
    report = make_report(arch, cfg, 6)
    assert report.generative
    assert report.prefill_flops == reference_prefill_flops(ref, 6)
    assert report.decode_flops == reference_decode_flops(ref, 6)
    assert report.decode_at(3) == reference_decode_flops(ref, 3)
    assert report.decode_at(12) == reference_decode_flops(ref, 12)


def test_the_audio_classifier_does_not_generate(host):
    report = count(6, **dict(_SMALL, head="audio_classification"))
    assert (report.generative, report.prefill_flops, report.decode_flops) == (False, None, None)
    assert report.generation_note == NOT_GENERATIVE


@pytest.mark.reference
def test_a_decode_step_has_no_source_length_to_choose(host):
    """Whisper's encoder reads its fixed 30 s whatever is asked: a source length for its decode step is refused."""
    from archzoo.reference import reference_decode_flops

    arch = host.architecture("whisper")
    ref = arch.reference(parse_config(arch, _SMALL))
    with pytest.raises(ArchzooError, match=r"archzoo_whisper.reference_inputs makes, whose length archzoo does not"):
        reference_decode_flops(ref, 4, 7)


@pytest.mark.reference
def test_prefill_plus_decode_steps_is_what_generating_costs(T, host):
    """GenerationMixin.generate (greedy, M new tokens, no early stop) from 30 s of audio costs prefill and one decode
    step for each later token, decode(2 .. M): the cross-attention always over the encoder's positions."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    new = 4
    report = count(1, **_SMALL)
    config = T.WhisperConfig(**host.architecture("whisper").reference(report.config).kwargs)
    model = build_model("WhisperForConditionalGeneration", config, device="cpu")
    frames = torch.zeros(1, config.num_mel_bins, 2 * config.max_source_positions)
    start = torch.zeros(1, 1, dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad(), FlopCounterMode(display=False) as counter:
        warnings.simplefilter("ignore")  # generation's notes on the settings given: not findings
        T.GenerationMixin.generate(
            model,
            input_features=frames,
            decoder_input_ids=start,
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            num_beams=1,
            pad_token_id=0,
            eos_token_id=None,
            suppress_tokens=None,
            begin_suppress_tokens=None,
            forced_decoder_ids=None,
        )
    steps = sum(report.decode_at(n) for n in range(2, new + 1))
    assert counter.get_total_flops() == report.prefill_flops + steps


@pytest.mark.reference
def test_kv_caches_equal_what_transformers_caches(T, host):
    """Decoder self-attention caches keys and values per decoder token, cross-attention per encoder position,
    and those are always max_source_positions: the elements EncoderDecoderCache holds after one CPU forward pass."""
    import torch

    report = count(**_SMALL)
    config = T.WhisperConfig(**report.architecture.reference(report.config).kwargs)
    model = build_model("WhisperForConditionalGeneration", config, device="cpu")
    target = 5
    with torch.no_grad():
        cache = model(
            input_features=torch.zeros(1, config.num_mel_bins, 2 * config.max_source_positions),
            decoder_input_ids=torch.ones(1, target, dtype=torch.long),
            use_cache=True,
        ).past_key_values

    def elements(layers) -> int:
        return sum(layer.keys.numel() + layer.values.numel() for layer in layers)

    assert report.kv_cache_elements_per_token * target == elements(cache.self_attention_cache.layers)
    cross = elements(cache.cross_attention_cache.layers)
    assert report.cross_kv_cache_elements_per_source_token * config.max_source_positions == cross


# ---- Hugging Face config.json: every key accounted for -----------------------------------------------------


@pytest.mark.reference
def test_table_equals_the_transformers_configuration_class(T, host):
    """Fields and defaults, aliases (attribute_map), AutoModel's class, every model class of the type counted (none
    refused), and every key of a file transformers itself writes known."""
    modeling = "transformers.models.whisper.modeling_whisper"
    table = assert_table_is_the_configuration_class(T, host, "whisper", "WhisperConfig", modeling)
    assert dict(table.aliases) == T.WhisperConfig.attribute_map


BASE = dict(vocab_size=97, num_mel_bins=8, d_model=16, encoder_layers=2, decoder_layers=3, encoder_attention_heads=2)
BASE |= dict(decoder_attention_heads=4, encoder_ffn_dim=24, decoder_ffn_dim=20, max_source_positions=10)
BASE |= dict(max_target_positions=12, pad_token_id=0, bos_token_id=1, eos_token_id=1, decoder_start_token_id=2)
#: one value per key the table reads, each changed alone
SWEEP = dict(
    vocab_size=101,
    num_mel_bins=3,
    d_model=24,
    encoder_layers=1,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=2,
    encoder_ffn_dim=7,
    decoder_ffn_dim=9,
    max_source_positions=6,
    max_target_positions=16,
    activation_function="relu",
    tie_word_embeddings=False,
    use_weighted_layer_sum=True,
    classifier_proj_size=5,
    num_labels=4,
    pad_token_id=7,
)


def test_the_sweep_covers_every_key(host):
    assert set(SWEEP) == set(table_of(host, "whisper").read)


def _file_figures(T, path: Path, model_class: str, n: int) -> tuple[int, int]:
    config = T.AutoConfig.from_pretrained(str(path))
    return _figures(T, model_class, config, n)


@pytest.mark.reference
@pytest.mark.parametrize("change", [{}, *({k: v} for k, v in SWEEP.items())], ids=["(base)", *SWEEP])
def test_each_key_against_transformers(T, host, tmp_path, change):
    path = write_json(tmp_path, {"model_type": "whisper", **BASE, **change})
    for model_class in CLASSES.values():
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 5)
        assert (report.params, report.flops) == _file_figures(T, path, model_class, 5), (change, model_class)
        assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"


@pytest.mark.reference
def test_ignored_keys_change_no_figure(T, host, tmp_path):
    """Every key the whisper table ignores, changed from its default at once: transformers' figures still equal
    archzoo's, for every class."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    changed = dict(
        encoder_layerdrop=0.3,
        decoder_layerdrop=0.4,
        dropout=0.2,
        attention_dropout=0.1,
        activation_dropout=0.1,
        init_std=0.5,
        bos_token_id=5,
        eos_token_id=6,
        decoder_start_token_id=7,
        use_cache=False,
        scale_embedding=True,
        suppress_tokens=[1, 2],
        begin_suppress_tokens=[3],
        median_filter_width=5,
        apply_spec_augment=True,
        mask_time_prob=0.5,
        mask_time_length=2,
        mask_time_min_masks=1,
        mask_feature_prob=0.5,
        mask_feature_length=2,
        mask_feature_min_masks=1,
        forced_decoder_ids=[[1, 8], [2, 9]],
    )
    assert set(changed) == set(table_of(host, "whisper").ignored)
    path = write_json(tmp_path, {"model_type": "whisper", **BASE, **changed})
    for model_class in CLASSES.values():
        reading = load_hf_config(path, host, hf_class=model_class)
        report = make_report(reading.architecture, reading.config, 5)
        config = T.AutoConfig.from_pretrained(str(path))
        model = build_model(model_class, config, device="cpu")  # real weights: use_cache false runs on the CPU
        inputs = {k: torch.zeros(v.shape, dtype=v.dtype) for k, v in _inputs(model, config, 5).items()}
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(**inputs)
        assert (report.params, report.flops) == (n_params(model), counter.get_total_flops()), model_class


# ---- what transformers cannot build is refused, and what it builds is not --------------------------------


@pytest.mark.parametrize(
    "config, message",
    [
        (
            dict(d_model=96, n_decoder_heads=7),
            r"^n_decoder_heads: d_model 96 is not divisible by n_decoder_heads 7, which transformers' "
            r"WhisperAttention refuses; choose a divisor of d_model$",
        ),
        (
            dict(d_model=96, n_encoder_heads=5, n_decoder_heads=4),
            r"^n_encoder_heads: d_model 96 is not divisible by n_encoder_heads 5, which transformers' "
            r"WhisperAttention refuses; choose a divisor of d_model$",
        ),
        (dict(d_model=15, n_encoder_heads=3, n_decoder_heads=3), r"^d_model: the encoder's sinusoidal position table"),
        (
            dict(d_model=2, n_encoder_heads=1, n_decoder_heads=1),
            r"^d_model: .* fails on 2\); choose an even d_model of 4 or more$",
        ),
        (dict(activation="prelu"), r"^activation: unknown activation 'prelu'"),
    ],
)
def test_what_transformers_cannot_build_is_refused(host, config, message):
    arch = host.architecture("whisper")
    with pytest.raises(ConfigError) as info:
        parse_config(arch, config, source="whisper")
    assert len(str(info.value).splitlines()) == 1
    assert re.search(message, str(info.value).removeprefix("whisper: ")), str(info.value)


@pytest.mark.reference
@pytest.mark.parametrize(
    "kwargs, model_class",
    [
        (dict(d_model=28, decoder_attention_heads=8), "WhisperModel"),
        (dict(d_model=96, encoder_attention_heads=5, decoder_attention_heads=4), "WhisperModel"),
        (dict(d_model=15, encoder_attention_heads=3, decoder_attention_heads=3), "WhisperModel"),
        (dict(d_model=2, encoder_attention_heads=1, decoder_attention_heads=1), "WhisperForAudioClassification"),
        (dict(vocab_size=40, d_model=8), "WhisperForConditionalGeneration"),  # the default padding index 50256
    ],
)
def test_the_refusals_are_transformers_own(T, kwargs, model_class):
    """transformers fails to build each (with weights: on the meta device it skips initialising the sinusoids)."""
    small = dict(encoder_layers=1, decoder_layers=1, max_source_positions=4, num_mel_bins=2, max_target_positions=4)
    with pytest.raises((ValueError, ZeroDivisionError, AssertionError, IndexError)):
        build_model(model_class, T.WhisperConfig(**small | kwargs), device="cpu")


@pytest.mark.reference
def test_the_decoder_alone_takes_an_odd_width(T, host):
    """WhisperForCausalLM has no sinusoidal table: transformers builds it at d_model 15, and so does archzoo."""
    config = dict(_SMALL, d_model=15, n_encoder_heads=3, n_decoder_heads=5, head="causal_lm")
    assert_matches_reference(host.architecture("whisper"), config, seq_lens=(4,))


def test_a_padding_index_outside_the_vocabulary_is_refused_where_there_is_a_decoder(host, tmp_path):
    path = write_json(tmp_path, {"model_type": "whisper", "vocab_size": 40})
    for model_class in ("WhisperModel", "WhisperForConditionalGeneration", "WhisperForCausalLM"):
        with pytest.raises(HFConfigError) as info:
            load_hf_config(path, host, hf_class=model_class)
        assert str(info.value) == (
            f"{path}: pad_token_id: 50,256 is outside the vocabulary of 40 tokens, and transformers' token embedding "
            "refuses such a padding index; set pad_token_id to null or to a token id"
        )


@pytest.mark.reference
def test_the_audio_classifier_has_no_token_embedding_to_refuse_it(T, host, tmp_path):
    """WhisperForAudioClassification is the encoder alone: transformers builds it whatever the padding index."""
    data = {"model_type": "whisper", **BASE, "vocab_size": 40, "pad_token_id": 50256}
    path = write_json(tmp_path, data)
    reading = load_hf_config(path, host, hf_class="WhisperForAudioClassification")
    report = make_report(reading.architecture, reading.config, 5)
    assert (report.params, report.flops) == _file_figures(T, path, "WhisperForAudioClassification", 5)
