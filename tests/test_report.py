"""Reports: human units, weight sizes, KV cache and the attention crossover."""

import pytest

import archzoo
from archzoo.report import human_bytes, human_count


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0"),
        (999, "999"),
        (1_000, "1.00K"),
        (999_999, "1.00M"),
        (9_996_000, "10.0M"),
        (109_482_240, "109.5M"),
        (999_999_999, "1.00B"),
        (1_557_611_200, "1.56B"),
        (174_604_259_328, "174.6B"),
    ],
)
def test_human_count(n, text):
    assert human_count(n) == text


def test_human_bytes_is_decimal():
    assert human_bytes(437_928_960) == "437.9 MB"
    assert human_bytes(512) == "512 B"


def test_weight_bytes_per_dtype_are_whole_bytes():
    report = archzoo.count("gpt", n_layers=1, d_model=8, n_heads=2, vocab_size=3, max_positions=1)
    sizes = report.weight_bytes()
    assert sizes["fp32"] == 4 * report.params
    assert sizes["bf16"] == sizes["fp16"] == 2 * report.params
    assert sizes["int4"] == (report.params + 1) // 2 and isinstance(sizes["int4"], int)


def test_kv_cache_per_token_gpt2():
    # GPT-2 small caches K and V of 768 for each of 12 layers: 2 * 12 * 768 = 18,432 elements per token
    assert archzoo.count("gpt").kv_cache_elements_per_token == 18_432
    assert archzoo.count("bert").kv_cache_elements_per_token == 0


def test_attention_overtakes_where_the_quadratic_term_wins():
    report = archzoo.count("gpt", head="none")
    n = report.attention_overtakes_at
    total, attention = report.flops_at(n)
    assert attention > total - attention
    total, attention = report.flops_at(n - 1)
    assert attention <= total - attention


def test_human_count_rounds_once_from_the_exact_value():
    assert human_count(38_654_705_664) == "38.7B"  # 38.654..., not 38.65 then 38.6
    assert human_count(28_348_416) == "28.3M"
    assert human_count(999_960_000) == "1.00B"


def test_dense_models_use_every_parameter():
    for name in ("gpt", "bert", "vit", "transformer"):
        report = archzoo.count(name)
        assert report.active_params == report.params
        assert report.to_dict()["params"]["active"] == report.params
    albert = archzoo.count("bert", shared_layers=True)  # one set of weights, run 12 times: all of it used
    assert albert.active_params == albert.params


def test_json_blocks_give_all_stored_copies_and_one():
    data = archzoo.count("gpt").to_dict()
    layers = next(b for b in data["blocks"]["children"] if b["name"] == "layers")
    (layer,) = layers["children"]
    # transformers 5.23 GPT2LMHeadModel(GPT2Config()).transformer.h[0] on the meta device: 7,087,872 parameters
    assert (layer["stored"], layer["executed"], layer["params_each"]) == (12, 12, 7_087_872)
    assert layer["params"] == layers["params"] == 12 * 7_087_872
    assert layer["flops"] == layers["flops"]
    assert layer["formula_each"]["text"] != layer["formula"]["text"]
    albert = archzoo.count("bert", shared_layers=True).to_dict()
    shared = next(b for b in albert["blocks"]["children"] if b["name"] == "layers")["children"][0]
    assert (shared["stored"], shared["executed"]) == (1, 12) and shared["params"] == shared["params_each"]


def test_cross_attention_kv_cache_per_source_token():
    # transformers 5.23 BartForConditionalGeneration(BartConfig(d_model=64, decoder_layers=3, 4 heads, ffn 128)),
    # one forward on 11 source and 5 target tokens with use_cache: its EncoderDecoderCache holds 384 elements per
    # source token in cross_attention_cache and 384 per target token in self_attention_cache (2 x 3 layers x 64);
    # torch.nn.Transformer's decoder has the same attention widths
    report = archzoo.count("transformer", d_model=64, n_heads=4, d_ff=128, n_encoder_layers=2, n_decoder_layers=3)
    assert report.cross_kv_cache_elements_per_source_token == 384
    assert report.kv_cache_elements_per_token == 384
    kv = report.to_dict()["memory"]["kv_cache"]
    assert kv["elements_per_token"] == kv["cross_elements_per_source_token"] == 384
    assert archzoo.count("gpt").to_dict()["memory"]["kv_cache"]["cross_elements_per_source_token"] == 0


@pytest.mark.reference
def test_cross_attention_kv_cache_against_bart():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BartConfig(
        vocab_size=40,
        d_model=64,
        encoder_layers=2,
        decoder_layers=3,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.BartForConditionalGeneration(config).eval()
    with torch.no_grad():
        cache = model(
            input_ids=torch.randint(3, 40, (1, 11)), decoder_input_ids=torch.randint(3, 40, (1, 5)), use_cache=True
        ).past_key_values
    cross = sum(layer.keys.numel() + layer.values.numel() for layer in cache.cross_attention_cache.layers)
    own = sum(layer.keys.numel() + layer.values.numel() for layer in cache.self_attention_cache.layers)
    report = archzoo.count("transformer", d_model=64, n_heads=4, d_ff=128, n_encoder_layers=2, n_decoder_layers=3)
    assert report.cross_kv_cache_elements_per_source_token * 11 == cross
    assert report.kv_cache_elements_per_token * 5 == own


def test_macs_halve_a_formula_exactly_and_refuse_one_that_is_not_matmul_work():
    from archzoo.formula import N, sym
    from archzoo.report import in_units

    d = sym("d", 8)
    assert in_units(4 * N * d + 2, "macs").text() == "2·N·d + 1"
    assert in_units(4 * N * d, "flops").text() == "4·N·d"
    with pytest.raises(ValueError, match=r"^3·N: an odd coefficient \(3\) cannot be halved into MACs$"):
        in_units(3 * N, "macs")


def test_an_encoder_has_no_prefill_or_decode_and_says_why():
    report = archzoo.count("bert", 64)
    assert (report.prefill_flops, report.decode_flops) == (None, None)
    assert "no causal self-attention" in (report.generation_note or "")
    assert archzoo.count("gpt", 64).generation_note is None


def test_the_hoffmann_rule_omitted_for_a_stack_of_runs_says_so():
    """Gemma 2's stack is a run of sliding-window layers and one of global layers: Hoffmann et al.'s formula needs
    one stack of L alike layers, and the reason it is left out names the runs, not an encoder and a decoder."""
    import archzoo

    report = archzoo.count("gemma2")
    (hoffmann,) = [a for a in report.approximations() if a.name.startswith("Hoffmann")]
    assert hoffmann.flops is None
    assert "runs of different layers" in hoffmann.omitted and "encoder" not in hoffmann.omitted


def test_a_too_long_n_names_the_key_that_holds_the_positions():
    """Whisper's decoder positions are max_target_positions (448 in WhisperConfig's defaults): the refusal names
    that key, not a max_positions Whisper has not."""
    import archzoo
    from archzoo.errors import ConfigError

    with pytest.raises(ConfigError, match=r"seq_len 449: longer than the 448 positions .*; raise max_target_positions"):
        archzoo.count("whisper", 449)
