"""The gemma plugin against transformers: defaults, published configurations, random small ones, every head class,
generation (prefill, decode, the KV cache) and the config.json readers of gemma2 and gemma3_text.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Gemma 2 / Gemma 3 class transformers
5.23 builds on the meta device, what ``torch.utils.flop_counter.FlopCounterMode`` reports for one eager pass of batch
1, the elements transformers' own ``DynamicCache`` holds, or a figure the Gemma reports print (named beside it).
"""

from __future__ import annotations

import json
import random

import pytest

from archzoo.architecture import parse_config
from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import make_report
from archzoo.testing import assert_blocks_match_modules, assert_matches_reference, build_model, check_plugin
from family_checks import counter, write_json
from transformers_models import forward_flops, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

GEMMA2_CLASSES = {
    "lm": "Gemma2ForCausalLM",
    "none": "Gemma2Model",
    "sequence_classification": "Gemma2ForSequenceClassification",
    "token_classification": "Gemma2ForTokenClassification",
}
GEMMA3_CLASSES = {
    "lm": "Gemma3ForCausalLM",
    "none": "Gemma3TextModel",
    "sequence_classification": "Gemma3TextForSequenceClassification",
}


def count(architecture: str, n: int | None = None, **config):
    return counter(architecture)(n, **config)


# ---- the kit's conformance checks and the defaults -------------------------------------------------------


@pytest.mark.reference
@pytest.mark.slow  # builds both defaults (1B and 2.6B parameters) on the meta device: over 10 s here
def test_plugin_passes_check_plugin(host):
    """archzoo.testing's conformance checks: hooks, keys, both defaults against their classes, both HF tables."""
    assert check_plugin("gemma") == []


@pytest.mark.reference
def test_gemma2_defaults_are_transformers_defaults(T, host):
    """gemma2's defaults are Gemma2Config's (Gemma 2 2B): the same parameters and FLOPs."""
    model = build_model("Gemma2ForCausalLM", T.Gemma2Config())
    assert count("gemma2").params == n_params(model)
    for n in (1, 9):
        assert count("gemma2", n).flops == forward_flops(model, n), n


# ---- published configurations ----------------------------------------------------------------------------

#: config.json files as Google released them on the Hub (keys and values transcribed: no byte-for-byte copy of
#: these files was found in a public repository, so they are not in tests/data/hf_published/). The Gemma 2 shapes
#: are those of Table 1 of "Gemma 2: Improving Open Language Models at a Practical Size" (arXiv:2408.00118); the
#: Gemma 3 1B file is google/gemma-3-1b-pt's, and the 4B/12B/27B files are the text_config of google/gemma-3-*-pt
#: saved as gemma3_text (what Gemma3ForCausalLM reads; the report, arXiv:2503.19786, prints no shapes).
_GEMMA2_KEYS = {
    "architectures": ["Gemma2ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0,
    "bos_token_id": 2,
    "cache_implementation": "hybrid",
    "eos_token_id": 1,
    "final_logit_softcapping": 30.0,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh",
    "initializer_range": 0.02,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "pad_token_id": 0,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "torch_dtype": "float32",
    "transformers_version": "4.42.0.dev0",
    "use_cache": True,
    "vocab_size": 256000,
}
_GEMMA3_KEYS = {
    "architectures": ["Gemma3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": None,
    "bos_token_id": 2,
    "cache_implementation": "hybrid",
    "eos_token_id": 1,
    "final_logit_softcapping": None,
    "hidden_activation": "gelu_pytorch_tanh",
    "initializer_range": 0.02,
    "model_type": "gemma3_text",
    "pad_token_id": 0,
    "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0,
    "rope_theta": 1000000.0,
    "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.50.0.dev0",
    "use_cache": True,
}


def _gemma2(d: int, ff: int, layers: int, heads: int, kv: int, head_dim: int, scalar: int) -> dict:
    return dict(
        _GEMMA2_KEYS,
        hidden_size=d,
        intermediate_size=ff,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        query_pre_attn_scalar=scalar,
        sliding_window_size=4096,
    )


def _gemma3(d: int, ff: int, layers: int, heads: int, kv: int, head_dim: int, scalar: int, **more) -> dict:
    return dict(
        _GEMMA3_KEYS,
        hidden_size=d,
        intermediate_size=ff,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        head_dim=head_dim,
        query_pre_attn_scalar=scalar,
        **more,
    )


_LONG = dict(max_position_embeddings=131072, sliding_window=1024, rope_scaling={"factor": 8.0, "rope_type": "linear"})
PUBLISHED = {
    "gemma-2-2b": _gemma2(2304, 9216, 26, 8, 4, 256, 256),
    "gemma-2-9b": _gemma2(3584, 14336, 42, 16, 8, 256, 256),
    "gemma-2-27b": _gemma2(4608, 36864, 46, 32, 16, 128, 144),
    "gemma-3-1b": _gemma3(
        1152,
        6912,
        26,
        4,
        1,
        256,
        256,
        max_position_embeddings=32768,
        sliding_window=512,
        rope_scaling=None,
        vocab_size=262144,
    ),
    "gemma-3-4b": _gemma3(2560, 10240, 34, 8, 4, 256, 256, **_LONG),
    "gemma-3-12b": _gemma3(3840, 15360, 48, 16, 8, 256, 256, **_LONG),
    "gemma-3-27b": _gemma3(5376, 21504, 62, 32, 16, 128, 168, **_LONG),
}

#: Table 2 of the Gemma 2 report ("Parameter counts for the Gemma models"), Non-embedding Parameters, to the
#: parameter
GEMMA2_NON_EMBEDDING = {"gemma-2-2b": 2_024_517_888, "gemma-2-9b": 8_324_201_984, "gemma-2-27b": 26_047_480_320}
#: Table 1 of the Gemma 3 Technical Report, Non-embedding Parameters, in millions as printed
GEMMA3_NON_EMBEDDING_M = {"gemma-3-1b": 698, "gemma-3-4b": 3209, "gemma-3-12b": 10759, "gemma-3-27b": 25600}


@pytest.mark.reference
@pytest.mark.slow
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_files_equal_transformers(T, host, tmp_path, model_id, capsys):
    """Each published file, read by `archzoo count --hf-config` as written, against the class transformers builds
    from the same file (AutoConfig), on the meta device: parameters, and FLOPs at two lengths."""
    path = write_json(tmp_path, PUBLISHED[model_id])
    model_class = PUBLISHED[model_id]["architectures"][0]
    model = build_model(model_class, T.AutoConfig.from_pretrained(str(path)))
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["total"] == n_params(model)
    reading = load_hf_config(path, host, hf_class=model_class)
    for n in (1, 16):
        assert make_report(reading.architecture, reading.config, n).flops == forward_flops(model, n), n


@pytest.mark.parametrize("model_id", GEMMA2_NON_EMBEDDING)
def test_gemma2_non_embedding_counts_are_table_2s(host, tmp_path, model_id):
    """Table 2 of the Gemma 2 report prints each model's non-embedding parameters to the parameter."""
    reading = load_hf_config(write_json(tmp_path, PUBLISHED[model_id]), host, hf_class="Gemma2ForCausalLM")
    report = make_report(reading.architecture, reading.config)
    assert report.params - reading.config.vocab_size * reading.config.d_model == GEMMA2_NON_EMBEDDING[model_id]


@pytest.mark.parametrize("model_id", GEMMA3_NON_EMBEDDING_M)
def test_gemma3_non_embedding_counts_are_table_1s(host, tmp_path, model_id):
    """Table 1 of the Gemma 3 report prints the text models' non-embedding parameters in millions."""
    reading = load_hf_config(write_json(tmp_path, PUBLISHED[model_id]), host, hf_class="Gemma3ForCausalLM")
    report = make_report(reading.architecture, reading.config)
    non_embedding = report.params - reading.config.vocab_size * reading.config.d_model
    assert round(non_embedding / 1e6) == GEMMA3_NON_EMBEDDING_M[model_id]


# ---- every head class, and random small configurations -------------------------------------------------


def _small(rng: random.Random, arch: str) -> dict:
    """A small random configuration exercising every option: head widths that are not d / h, grouped and
    multi-query attention, biases, an untied head, explicit layer kinds or a pattern, a bidirectional model."""
    heads = rng.choice([2, 4])
    config = dict(
        vocab_size=rng.choice([61, 97]),
        d_model=heads * rng.choice([8, 12]),
        n_layers=rng.randint(1, 7),
        n_heads=heads,
        n_kv_heads=rng.choice([1, heads // 2, heads]),
        d_head=rng.choice([6, 8, 16]),
        d_ff=rng.choice([20, 36]),
        sliding_window=rng.choice([3, 5, 64]),
        attention_bias=rng.random() < 0.5,
        tie_embeddings=rng.random() < 0.7,
        bidirectional=rng.random() < 0.2,
        sliding_window_pattern=rng.choice([2, 3, 6]),
        num_labels=3,
    )
    if rng.random() < 0.5:
        config["layer_types"] = [rng.choice(["sliding_attention", "full_attention"]) for _ in range(config["n_layers"])]
    # drawn last, so the draws above stay what they were: keys that change neither parameters nor FLOPs
    config |= dict(
        attn_softcap=rng.choice([None, 50.0, 2.5]),
        final_softcap=rng.choice([None, 30.0, 0.5]),
        pad_token_id=rng.choice([None, 0, 5]),
    )
    return config


def _cases() -> list:
    cases = []
    for arch, classes in (("gemma2", GEMMA2_CLASSES), ("gemma3", GEMMA3_CLASSES)):
        for seed in range(3):
            for head in classes:
                cases.append(pytest.param(arch, seed, head, id=f"{arch}-{seed}-{head}"))
    return cases


@pytest.mark.reference
@pytest.mark.parametrize("arch, seed, head", _cases())
def test_random_configurations_equal_transformers(host, arch, seed, head):
    """Random small configurations, every head class transformers has for the type: the blocks that name their
    submodules hold what those hold, and parameters and FLOPs at two lengths equal the class's."""
    config = dict(_small(random.Random(f"{arch}-{seed}"), arch), head=head)
    classes = GEMMA2_CLASSES if arch == "gemma2" else GEMMA3_CLASSES
    ref = host.architecture(arch).reference(parse_config(host.architecture(arch), config))
    assert ref.target == f"transformers.{classes[head]}"
    assert_blocks_match_modules(arch, config)
    assert_matches_reference(arch, config, seq_lens=(4, 11))


# ---- generation: prefill, decode and the KV cache, against transformers' own cache ----------------------

_WINDOWED = dict(vocab_size=61, d_model=32, n_layers=4, n_heads=4, n_kv_heads=2, d_head=8, d_ff=36, sliding_window=6)


def _generation_ref(host, arch: str):
    architecture = host.architecture(arch)
    cfg = parse_config(architecture, _WINDOWED)
    return cfg, architecture.reference(cfg)


@pytest.mark.reference
@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_prefill_and_decode_exact_on_both_sides_of_the_window(host, arch):
    """Prefill (eager: the full N x N products under the window's mask) and a decode step equal FlopCounterMode's
    count on both sides of the window W = 6: past it a sliding layer's step attends to the W keys transformers'
    sliding cache layer hands it, and the whole report, its JSON and its blocks say so."""
    from archzoo.reference import reference_decode_flops, reference_prefill_flops

    _, ref = _generation_ref(host, arch)
    for n in (4, 6, 11):
        assert count(arch, n, **_WINDOWED).prefill_flops == reference_prefill_flops(ref, n), n
    for n in (3, 6, 7, 9, 14):
        report = count(arch, n, **_WINDOWED)
        measured = reference_decode_flops(ref, n)
        assert report.decode_flops == measured, n
        assert report.to_dict()["flops"]["decode"] == measured, n
        assert report.blocks_dict()["decode_flops"] == measured, n


@pytest.mark.reference
@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_the_decode_formula_reads_the_window_past_it(host, arch):
    """Past the window the decode formula names W (the symbol table gives its value) where the sliding layers'
    attention products read the keys; up to it, N, and no W."""
    inside = count(arch, 6, **_WINDOWED)
    beyond = count(arch, 9, **_WINDOWED)
    assert "W" not in {s["name"] for s in inside.symbols()}
    assert {s["name"]: s["value"] for s in beyond.symbols()}["W"] == _WINDOWED["sliding_window"]
    assert "W" in beyond.decode_formula(9).text() and "W" not in inside.decode_formula(6).text()
    # the decode step grows with N in the global layers only
    cfg, _ = _generation_ref(host, arch)
    global_layers = cfg.kinds().count("full_attention")
    grow = 4 * cfg.n_heads * cfg.d_head * global_layers
    assert count(arch, 10, **_WINDOWED).decode_flops - beyond.decode_flops == grow


@pytest.mark.reference
@pytest.mark.parametrize("arch", ["gemma2", "gemma3"])
def test_kv_cache_is_what_transformers_cache_holds_within_the_window(T, host, arch):
    """The KV cache per token times N equals the elements transformers' DynamicCache holds after a forward pass
    of N <= W - 1 tokens; past it the sliding layers keep W - 1 tokens between steps, which the cache archzoo says is
    held after N tokens (the memory report's) counts."""
    import torch

    cfg, ref = _generation_ref(host, arch)
    config = getattr(T, ref.config_class.rsplit(".", 1)[1])(**ref.kwargs)
    model = build_model(ref.target.rsplit(".", 1)[1], config, device="cpu")
    per_token = count(arch, **_WINDOWED).kv_cache_elements_per_token
    sliding = cfg.kinds().count("sliding_attention")
    for n in (3, 5, 12):
        cache = T.DynamicCache(config=config)
        with torch.no_grad():
            model(input_ids=torch.zeros(1, n, dtype=torch.long), past_key_values=cache, use_cache=True)
        held = sum(layer.keys.numel() + layer.values.numel() for layer in cache.layers)
        beyond = max(0, n - (cfg.sliding_window - 1))
        assert per_token * n - held == sliding * 2 * cfg.n_kv_heads * cfg.d_head * beyond, n
        assert count(arch, **_WINDOWED).kv_cache_elements_held(n) == held, n  # what the memory report counts


@pytest.mark.reference
def test_training_flops_equal_a_backward_pass(host):
    """Forward and backward of one training step, against FlopCounterMode on transformers' class."""
    from archzoo.reference import reference_training_flops

    for arch in ("gemma2", "gemma3"):
        _, ref = _generation_ref(host, arch)
        assert count(arch, 7, **_WINDOWED).training_flops == reference_training_flops(ref, 7), arch


def test_default_length_is_the_context(host):
    """A report's default N is the model's context length, the window shorter or not (every figure exact past it)."""
    assert count("gemma2").seq_len == 8192  # Gemma 2 2B: 8,192-token context (Gemma2Config), 4,096-token window
    assert count("gemma3").seq_len == 32768  # Gemma 3 1B: 32,768-token context (Gemma3TextConfig), 512-token window
    assert count("gemma2", layer_types=["full_attention"] * 26).seq_len == 8192


def test_layer_runs_follow_the_pattern(host):
    """Gemma 2 alternates sliding and global layers (sliding first); Gemma 3 puts a global one after five sliding."""
    g2 = count("gemma2", n_layers=5).root
    runs = {c.name: c.positions for c in next(c for c in g2.children if c.name == "layers").children}
    assert runs == {"sliding_layers": (0, 2, 4), "global_layers": (1, 3)}
    g3 = count("gemma3", n_layers=13).root
    runs = {c.name: c.positions for c in next(c for c in g3.children if c.name == "layers").children}
    assert runs["global_layers"] == (5, 11)


# ---- config.json: what is read, converted or refused ----------------------------------------------------


def test_the_vision_model_type_is_refused_naming_the_text_type(tmp_path, capsys):
    """gemma3 (Gemma3ForConditionalGeneration: a vision tower around the text model) is refused in one line, which
    names gemma3_text, the type archzoo counts."""
    path = write_json(tmp_path, {"model_type": "gemma3", "text_config": {"hidden_size": 2560}})
    assert main(["count", "--hf-config", str(path)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(path) in err and "'gemma3' is not supported" in err and "gemma3_text" in err


@pytest.mark.reference
@pytest.mark.parametrize(
    "config_class, change",
    [
        ("Gemma2Config", {}),
        ("Gemma3TextConfig", {}),
        ("Gemma3TextConfig", dict(sliding_window_pattern=2, num_hidden_layers=3)),
        ("Gemma3TextConfig", dict(use_bidirectional_attention=True, sliding_window=6)),
    ],
    ids=["gemma2", "gemma3_text", "gemma3_text-pattern", "gemma3_text-bidirectional"],
)
def test_a_file_transformers_saves_reads_as_every_class(T, host, tmp_path, capsys, config_class, change):
    """A config.json as save_pretrained writes it (to_dict: every attribute, _sliding_window_pattern and the
    computed layer_types among them) counts what each class built from it holds and computes."""
    from transformers_models import config_json_figures

    model_type = getattr(T, config_class).model_type
    base = {k: v for k, v in BASES[model_type].items() if k != "sliding_window_pattern"}
    path = write_json(tmp_path, getattr(T, config_class)(**{**base, **change}).to_dict())
    for model_class in ALL_CLASSES[model_type].values():
        assert _cli_figures(path, model_class, capsys) == config_json_figures(T, path, model_class, SWEEP_N), (
            model_class
        )


@pytest.mark.reference
def test_a_gemma3_files_text_config_counts_its_text_model(T, host, tmp_path, capsys):
    """What the refusal of gemma3 points to, and the module docstring tells: the file's text_config, saved as a
    config.json of its own (model_type gemma3_text), counts the text model inside Gemma3ForConditionalGeneration
    exactly: its parameters are the whole model's without the SigLIP vision tower and the projector, and its FLOPs
    those of a text-only prompt (no image: the vision tower does not run)."""
    from transformers_models import forward_flops

    text = dict(BASES["gemma3_text"], vocab_size=300)
    vision = dict(hidden_size=32, intermediate_size=40, num_hidden_layers=1, num_attention_heads=2, image_size=28)
    config = T.Gemma3Config(
        text_config=text,
        vision_config=dict(vision, patch_size=7),
        mm_tokens_per_image=4,
        image_token_index=299,
        boi_token_index=297,
        eoi_token_index=298,
    )
    whole = write_json(tmp_path, config.to_dict())  # as save_pretrained writes it
    assert main(["count", "--hf-config", str(whole)]) != 0
    assert "gemma3_text" in capsys.readouterr().err
    text_config = json.loads(whole.read_text())["text_config"]
    assert text_config["model_type"] == "gemma3_text"
    path = write_json(tmp_path, text_config, "text_config.json")
    model = build_model("Gemma3ForConditionalGeneration", config)
    vision_and_projector = n_params(model.model.vision_tower) + n_params(model.model.multi_modal_projector)
    assert vision_and_projector > 0
    assert main(["count", "--hf-config", str(path), "--hf-class", "Gemma3ForCausalLM", "--seq-len", "9", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["total"] == n_params(model) - vision_and_projector
    assert report["flops"]["forward"] == forward_flops(model, 9)
    assert main(["count", "--hf-config", str(path), "--json"]) == 0  # Gemma3TextModel: the language model alone
    assert json.loads(capsys.readouterr().out)["params"]["total"] == n_params(model.model.language_model)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"sliding_window": None}, "sliding_window"),
        ({"layer_types": ["sliding_attention", "local"]}, "layer_types"),
        ({"num_attention_heads": 5}, "n_heads"),
        # Gemma2Config's strict float, refused in the kit's words (archzoo.hf_reading._check_field_types)
        ({"attn_logit_softcapping": 50}, "attn_logit_softcapping: 50 is not a float or null, which transformers"),
        ({"final_logit_softcapping": "30.0"}, "final_logit_softcapping"),
        ({"pad_token_id": 2.0}, "pad_token_id"),
    ],
)
def test_bad_files_are_refused_in_one_line(host, tmp_path, change, key):
    data = dict(PUBLISHED["gemma-2-2b"], num_hidden_layers=2, **change)
    with pytest.raises(HFConfigError) as info:
        load_hf_config(write_json(tmp_path, data), host)
    message = str(info.value)
    assert "\n" not in message and key in message, message


def test_bidirectional_gemma3_has_no_kv_cache_and_halves_its_window(T, host, tmp_path):
    """use_bidirectional_attention: no causal mask, so no KV cache; Gemma3TextConfig's window becomes W // 2 + 1."""
    data = dict(PUBLISHED["gemma-3-1b"], use_bidirectional_attention=True)
    reading = load_hf_config(write_json(tmp_path, data), host)
    assert reading.config.sliding_window == 257
    assert make_report(reading.architecture, reading.config).kv_cache_elements_per_token == 0
    ref = reading.architecture.reference(reading.config)
    assert T.Gemma3TextConfig(**ref.kwargs).sliding_window == 257  # the reference is built with the same window


# ---- config.json key by key: every key the tables read, changed alone, as every class --------------------

#: the length of the swept forward passes: longer than the bases' 4-token window, so sliding layers mask
SWEEP_N = 9
BASES = {
    "gemma2": dict(
        vocab_size=97,
        hidden_size=48,
        intermediate_size=40,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=64,
        sliding_window=4,
    ),
}
BASES["gemma3_text"] = dict(BASES["gemma2"], sliding_window_pattern=2)  # one sliding, one global layer
_COMMON_SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    intermediate_size=33,
    num_hidden_layers=3,  # sliding, global, sliding
    num_attention_heads=8,
    num_key_value_heads=1,
    head_dim=10,  # 8 heads of 10 in a 48-wide model: h d_h is not d
    hidden_activation="relu",
    max_position_embeddings=16,
    attention_bias=True,
    sliding_window=64,  # longer than the pass: the sliding layers see every token
    layer_types=["full_attention", "sliding_attention"],  # the global layer first
    use_bidirectional_attention=True,
    pad_token_id=3,
    tie_word_embeddings=False,
    num_labels=5,
    attn_logit_softcapping=3.0,  # neither Gemma 2's 50.0 nor Gemma 3's null
    final_logit_softcapping=0.5,  # neither Gemma 2's 30.0 nor Gemma 3's null
)
#: one value per key each table reads (the check below holds them to the tables), changed alone
SWEEPS = {
    "gemma2": dict(_COMMON_SWEEP, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}),
    "gemma3_text": dict(
        _COMMON_SWEEP,
        sliding_window_pattern=3,  # two sliding layers, then the global one
        rope_parameters={
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 5e5},
            "sliding_attention": {"rope_type": "default", "rope_theta": 500.0},
        },
        rope_scaling={"rope_type": "linear", "factor": 8.0},  # the global layers' (Gemma 3 4B's file)
    ),
}
#: the keys the tables ignore (they hold no parameters and cost no matmul FLOPs), each changed alone to a value
#: that exercises it, other values of the read keys, and the combinations the one-key sweep does not make:
#: transformers' figures must still equal archzoo's, or both refuse
_SOFTCAPS = dict(final_logit_softcapping=5.0, attn_logit_softcapping=3.0)  # both caps at once
#: keys a file may give as null: some transformers computes (layer_types), some it cannot run without
_NULLS = {
    f"{key}-null": {key: None}
    for key in (
        "head_dim",
        "num_key_value_heads",
        "layer_types",
        "use_bidirectional_attention",
        "query_pre_attn_scalar",
        "attention_dropout",
        "rms_norm_eps",
        "pad_token_id",
        "hidden_activation",
        "attn_logit_softcapping",
        "final_logit_softcapping",
    )
}
#: caps transformers' strict fields refuse (a float or null only: JSON's 50 is an integer), and one it takes that
#: computes nothing finite (a cap of 0.0 divides by zero: no count depends on it)
_CAP_TYPES = {
    "attn_logit_softcapping-integer": dict(attn_logit_softcapping=50),
    "final_logit_softcapping-integer": dict(final_logit_softcapping=30),
    "attn_logit_softcapping-true": dict(attn_logit_softcapping=True),
    "final_logit_softcapping-string": dict(final_logit_softcapping="30.0"),
    "softcapping-zero-negative": dict(attn_logit_softcapping=0.0, final_logit_softcapping=-2.0),
    "pad_token_id-float": dict(pad_token_id=3.0),
    "pad_token_id-beyond-vocabulary": dict(pad_token_id=97),
    "pad_token_id-negative": dict(pad_token_id=-2),
}
EXTRA = {
    "gemma2": {
        "no-softcapping": dict(final_logit_softcapping=None, attn_logit_softcapping=None),
        "query_pre_attn_scalar": dict(query_pre_attn_scalar=7),  # not head_dim: another score scale
        "rope_theta": dict(rope_theta=500.0),
        "rope_scaling": dict(rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
        "window-of-one": dict(sliding_window=1),
        "all-global": dict(layer_types=["full_attention", "full_attention"]),
        "all-sliding": dict(layer_types=["sliding_attention", "sliding_attention"]),
        "bidirectional-window": dict(use_bidirectional_attention=True, sliding_window=3),
        "legacy-keys": dict(hidden_act="relu", sliding_window_size=2, cache_implementation="hybrid"),
        "untied-gqa-bias": dict(tie_word_embeddings=False, num_key_value_heads=1, attention_bias=True),
        "rope-per-layer-type": dict(
            rope_parameters={
                "full_attention": {"rope_type": "default", "rope_theta": 5e5},
                "sliding_attention": {"rope_type": "default", "rope_theta": 500.0},
            }
        ),
        "rope-unknown-type": dict(rope_parameters={"rope_type": "spiral"}),
        "layer_types-too-short": dict(layer_types=["full_attention"]),
        "heads-not-dividing-width": dict(num_attention_heads=5, num_key_value_heads=1),
        **_NULLS,
        **_CAP_TYPES,
    },
    "gemma3_text": {
        "softcapping": dict(_SOFTCAPS),
        "query_pre_attn_scalar": dict(query_pre_attn_scalar=7),
        "rope-thetas": dict(rope_theta=5e5, rope_local_base_freq=500.0),
        "rope_scaling-over-rope_parameters": dict(
            rope_scaling={"rope_type": "dynamic", "factor": 2.0},
            rope_parameters={"full_attention": {"rope_type": "default"}, "sliding_attention": None},
        ),
        "window-of-one": dict(sliding_window=1),
        "pattern-and-layer_types": dict(sliding_window_pattern=1, layer_types=["sliding_attention"] * 2),
        "pattern-six": dict(sliding_window_pattern=6, num_hidden_layers=7),  # 5 sliding, global, sliding
        "bidirectional-window": dict(use_bidirectional_attention=True, sliding_window=6),  # becomes 4
        "legacy-keys": dict(hidden_act="relu", sliding_window_size=2, cache_implementation="hybrid"),
        "rope-flat": dict(rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}),
        "rope-unknown-type": dict(
            rope_parameters={"full_attention": {"rope_type": "spiral"}, "sliding_attention": {"rope_type": "default"}}
        ),
        "rope_scaling-unknown-type": dict(rope_scaling={"rope_type": "spiral", "factor": 2.0}),
        # a type the model's layers do not use: transformers only warns, and builds the model
        "rope-unknown-type-of-no-layer": dict(
            layer_types=["sliding_attention"] * 2,
            rope_parameters={"full_attention": {"rope_type": "spiral"}, "sliding_attention": {"rope_type": "default"}},
        ),
        "rope_scaling-over-flat-rope_parameters": dict(
            rope_parameters={"rope_type": "linear", "factor": 2.0}, rope_scaling={"rope_type": "linear", "factor": 4.0}
        ),
        "rope_scaling-without-global-settings": dict(
            rope_parameters={"sliding_attention": {"rope_type": "default"}},
            rope_scaling={"rope_type": "dynamic", "factor": 2.0},
        ),
        "rope-linear-without-factor": dict(
            rope_parameters={"full_attention": {"rope_type": "linear"}, "sliding_attention": {"rope_type": "default"}}
        ),
        "layer_types-too-short": dict(layer_types=["full_attention"]),
        "heads-not-dividing-width": dict(num_attention_heads=5, num_key_value_heads=1),
        **_NULLS,
        **_CAP_TYPES,
    },
}
ALL_CLASSES = {"gemma2": GEMMA2_CLASSES, "gemma3_text": GEMMA3_CLASSES}


def test_the_sweep_covers_every_key(host):
    """A key added to a table must get a sweep value here, or this fails."""
    from family_checks import table_of

    for model_type, sweep in SWEEPS.items():
        assert set(sweep) == set(table_of(host, model_type).read), model_type


def _cli_figures(path, model_class: str, capsys) -> tuple[int, int] | str:
    """`archzoo count --hf-config` of the file as ``model_class``: its parameters and forward FLOPs at SWEEP_N, or
    its one-line refusal."""
    code = main(["count", "--hf-config", str(path), "--hf-class", model_class, "--seq-len", str(SWEEP_N), "--json"])
    out, err = capsys.readouterr()
    if code:
        return err.strip()
    report = json.loads(out)
    return report["params"]["total"], report["flops"]["forward"]


def _sweep_cases() -> list:
    cases = []
    for model_type, sweep in SWEEPS.items():
        changes = {"(base)": {}, **{key: {key: value} for key, value in sweep.items()}, **EXTRA[model_type]}
        for label, change in changes.items():
            cases.append(pytest.param(model_type, label, change, id=f"{model_type}-{label}"))
    return cases


@pytest.mark.reference
@pytest.mark.parametrize("model_type, label, change", _sweep_cases())
def test_each_key_against_transformers(T, host, tmp_path, model_type, label, change, capsys):
    """The base file with one change, counted by `archzoo count --hf-config` as every class the plugin supports for
    the type, against the class transformers builds from the same file (AutoConfig, eager attention, one forward
    pass of SWEEP_N tokens on the CPU): parameters and FLOPs equal, or both refuse the file."""
    path = write_json(tmp_path, {"model_type": model_type, **BASES[model_type], **change})
    outcomes = _assert_exact_or_refused(T, host, path, ALL_CLASSES[model_type].values(), capsys, change)
    if label == "(base)" or label in SWEEPS[model_type]:  # each swept value is one transformers builds: counted
        assert set(outcomes) == {"exact"}, outcomes


def _assert_exact_or_refused(T, host, path, classes, capsys, label) -> list[str]:
    """Each class: archzoo's figures equal transformers', or both refuse (archzoo in one line naming the file).
    Returns the outcome of each class, "exact" or "refused"."""
    from transformers_models import config_json_figures

    outcomes = []
    for model_class in classes:
        try:
            expected: tuple[int, int] | None = config_json_figures(T, path, model_class, SWEEP_N)
        except Exception as exc:  # transformers refuses the file for this class: archzoo must too
            expected, why = None, f"{type(exc).__name__}: {exc}"
        got = _cli_figures(path, model_class, capsys)
        if expected is None:
            assert isinstance(got, str), f"{model_class}: transformers refuses ({why}), archzoo counts {got} ({label})"
            assert len(got.splitlines()) == 1 and str(path) in got and "Traceback" not in got, got
            outcomes.append("refused")
        else:
            assert got == expected, (model_class, label)
            reading = load_hf_config(path, host, hf_class=model_class)
            assert reading.architecture.reference(reading.config).target == f"transformers.{model_class}"
            outcomes.append("exact")
    return outcomes


def _mixes() -> list:
    cases = []
    for model_type, sweep in SWEEPS.items():
        for seed in range(6):
            rng = random.Random(f"{model_type}-mix-{seed}")
            keys = [k for k in [*sweep, *EXTRA[model_type]] if k not in {**_NULLS, **_CAP_TYPES} and rng.random() < 0.4]
            cases.append(pytest.param(model_type, keys, id=f"{model_type}-mix{seed}"))
    return cases


@pytest.mark.reference
@pytest.mark.parametrize("model_type, keys", _mixes())
def test_random_mixes_of_the_swept_changes(T, host, tmp_path, model_type, keys, capsys):
    """Swept values and extra changes taken together at random (the combinations one key at a time never makes),
    as every class: exact, or refused by both."""
    data = {"model_type": model_type, **BASES[model_type]}
    for key in keys:
        data |= {key: SWEEPS[model_type][key]} if key in SWEEPS[model_type] else EXTRA[model_type][key]
    path = write_json(tmp_path, data)
    _assert_exact_or_refused(T, host, path, ALL_CLASSES[model_type].values(), capsys, keys)


@pytest.mark.reference
@pytest.mark.parametrize("model_type", list(SWEEPS))
def test_ignored_keys_change_no_figure(T, host, tmp_path, model_type, capsys):
    """Every key the table ignores, changed at once to a value other than its default: transformers' figures still
    equal archzoo's, for every class."""
    from family_checks import table_of
    from transformers_models import config_json_figures

    values = dict(
        initializer_range=0.5,
        use_cache=False,
        bos_token_id=5,
        eos_token_id=6,
        attention_dropout=0.1,
        rms_norm_eps=1e-3,
        query_pre_attn_scalar=7,
        cache_implementation="hybrid",
        hidden_act="relu",
        sliding_window_size=2,
    )
    if model_type == "gemma3_text":
        values |= dict(rope_local_base_freq=500.0, _sliding_window_pattern=3)  # not the base's sliding_window_pattern
    assert set(values) == set(table_of(host, model_type).ignored)
    path = write_json(tmp_path, {"model_type": model_type, **BASES[model_type], **values})
    for model_class in ALL_CLASSES[model_type].values():
        assert _cli_figures(path, model_class, capsys) == config_json_figures(T, path, model_class, SWEEP_N), (
            model_class
        )
