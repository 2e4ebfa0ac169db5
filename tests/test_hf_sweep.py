"""config.json import swept key by key against transformers: every count-relevant key, every class.

For each supported model type, a small base config.json is changed one count-relevant key at a time
(each key the type's table reads, the label count through ``id2label`` and through ``num_labels``), and
each variant is counted as every model class archzoo supports for the type (``--hf-class``). The same
file is loaded with ``transformers.AutoConfig.from_pretrained``, the class is built with small random
weights on the CPU, and its ``sum(p.numel() for p in model.parameters())`` and the FLOPs of one eager forward pass under
``torch.utils.flop_counter.FlopCounterMode`` must equal archzoo's figures. Where transformers refuses to
build a variant, archzoo must refuse it too (``HFConfigError``): exact or refused, never a silent number.

Further tests: every alias, and an alias given next to its native key; all ignored keys changed at once
(they must leave transformers' figures where archzoo counts them); random combinations of the
count-relevant keys (hypothesis); and the tables themselves against transformers' configuration classes
(fields, defaults, ``attribute_map``, ``AutoModel``'s class, the model classes each type has).

Models are a few layers of a few dozen units; the module runs in about a minute on two cores. Marked ``reference``: skipped only when torch or transformers is missing.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from archzoo.errors import HFConfigError
from archzoo.hf_config import _GENERATION_KEYS, COMMON_DEFAULTS, COMMON_KEYS, hf_table, load_hf_config
from archzoo.host import PluginHost
from archzoo.report import make_report

pytestmark = [pytest.mark.reference, pytest.mark.sweep]

SEQ_LEN = 8  # tokens per forward pass for the text models; a ViT's length is its patches plus special tokens

_BERT = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=1,
    num_attention_heads=3,
    intermediate_size=80,
    max_position_embeddings=24,
)
_GPT = dict(vocab_size=97, n_embd=48, n_layer=1, n_head=3, n_positions=24)
_VIT = dict(
    image_size=16, patch_size=8, hidden_size=48, num_hidden_layers=1, num_attention_heads=3, intermediate_size=80
)
_FIVE_LABELS = {str(i): f"class_{i}" for i in range(5)}
_BART = dict(
    vocab_size=97,
    d_model=48,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=3,
    decoder_attention_heads=3,
    encoder_ffn_dim=80,
    decoder_ffn_dim=80,
    max_position_embeddings=24,
)
_MOE = dict(
    vocab_size=97,
    hidden_size=48,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_experts_per_tok=2,
    max_position_embeddings=24,
    pad_token_id=None,
)
_ROPE = {"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3}
_MOE_SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=8,
    num_key_value_heads=1,
    num_experts_per_tok=1,
    max_position_embeddings=40,
    hidden_act="gelu_pytorch_tanh",
    tie_word_embeddings=True,
    pad_token_id=3,
    rope_parameters=_ROPE,
)
_BART_SWEEP = dict(
    vocab_size=101,
    d_model=60,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=56,
    max_position_embeddings=40,
    activation_function="relu",
    scale_embedding=True,
    tie_word_embeddings=False,
    pad_token_id=3,
)

#: per model type: a small base config.json, and for each count-relevant key a value to change it to
BASES: dict[str, dict[str, Any]] = {
    "bert": dict(_BERT),
    "roberta": dict(_BERT),
    "distilbert": dict(vocab_size=97, dim=48, n_layers=1, n_heads=3, hidden_dim=80, max_position_embeddings=24),
    "albert": dict(_BERT, embedding_size=16),
    "xlm-roberta": dict(_BERT),
    "xlm-roberta-xl": dict(_BERT),
    "electra": dict(_BERT, embedding_size=16),
    "gpt2": dict(_GPT),
    "openai-gpt": dict(_GPT),
    "vit": dict(_VIT),
    "deit": dict(_VIT),
    **{
        t: dict(
            vocab_size=97,
            hidden_size=48,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=80,
            max_position_embeddings=24,
            pad_token_id=None,
        )
        for t in ("llama", "mistral", "qwen2", "gemma", "olmo", "phi3")
    },
    **{t: dict(_BART) for t in ("bart", "mbart")},
    "bloom": dict(vocab_size=97, hidden_size=48, n_layer=1, n_head=3),
    "opt": dict(
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=1,
        ffn_dim=80,
        num_attention_heads=3,
        max_position_embeddings=24,
        word_embed_proj_dim=48,
    ),
    "mixtral": dict(_MOE, intermediate_size=40, num_local_experts=4),
    "qwen2_moe": dict(_MOE, moe_intermediate_size=40, shared_expert_intermediate_size=56, num_experts=4),
    "gpt_neox": dict(
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=1,
        num_attention_heads=3,
        intermediate_size=80,
        max_position_embeddings=24,
    ),
    # rotary_dim at most a head's width (GPT-J-6B's 64 is wider than these 16-wide heads)
    "gptj": dict(vocab_size=97, n_embd=48, n_layer=1, n_head=3, n_positions=24, rotary_dim=8),
    "phi": dict(
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=80,
        max_position_embeddings=24,
    ),
    "t5": dict(
        vocab_size=97,
        d_model=48,
        d_kv=12,
        d_ff=80,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=4,
        relative_attention_num_buckets=8,
    ),
}
_BERT_SWEEP = dict(
    vocab_size=101,
    hidden_size=60,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=64,
    max_position_embeddings=40,
    type_vocab_size=3,
    hidden_act="relu",
    tie_word_embeddings=False,
)
_GPT_SWEEP = dict(vocab_size=101, n_embd=60, n_layer=2, n_head=4, n_positions=40, tie_word_embeddings=False)
_VIT_SWEEP = dict(
    image_size=24,
    patch_size=4,
    hidden_size=60,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=64,
    hidden_act="relu",
    num_channels=1,
    qkv_bias=False,
    pooler_output_size=30,
    encoder_stride=3,
)
SWEEPS: dict[str, dict[str, Any]] = {
    "bert": dict(_BERT_SWEEP, is_decoder=True),
    "roberta": dict(_BERT_SWEEP, is_decoder=True, pad_token_id=5),
    "distilbert": dict(
        vocab_size=101,
        dim=60,
        n_layers=2,
        n_heads=4,
        hidden_dim=64,
        max_position_embeddings=40,
        activation="relu",
        tie_word_embeddings=False,
    ),
    "albert": dict(_BERT_SWEEP, embedding_size=40),
    "xlm-roberta": dict(_BERT_SWEEP, is_decoder=True, pad_token_id=5),
    "xlm-roberta-xl": dict(_BERT_SWEEP, is_decoder=True, pad_token_id=5),
    "electra": dict(_BERT_SWEEP, is_decoder=True, embedding_size=40),
    "gpt2": dict(_GPT_SWEEP, n_inner=100, activation_function="relu"),
    "openai-gpt": dict(_GPT_SWEEP, afn="relu"),
    "vit": _VIT_SWEEP,
    "deit": _VIT_SWEEP,
    **{
        t: dict(
            vocab_size=101,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=8,
            num_key_value_heads=1,
            intermediate_size=64,
            max_position_embeddings=40,
            hidden_act="gelu_pytorch_tanh",
            tie_word_embeddings=t != "gemma",
            pad_token_id=3,
            rope_parameters={"rope_type": "default" if t == "phi3" else "linear", "factor": 2.0, "rope_theta": 5e3},
            **({"attention_bias": True} if t in ("llama", "gemma", "olmo") else {}),
            **({"mlp_bias": True} if t == "llama" else {}),
            **({"head_dim": 10} if t in ("llama", "mistral", "gemma") else {}),
        )
        for t in ("llama", "mistral", "qwen2", "gemma", "olmo", "phi3")
    },
}
SWEEPS.update(
    {
        "bart": _BART_SWEEP,
        "mbart": _BART_SWEEP,
        "bloom": dict(vocab_size=101, hidden_size=60, n_layer=2, n_head=4, tie_word_embeddings=False),
        "opt": dict(
            vocab_size=101,
            hidden_size=60,
            num_hidden_layers=2,
            ffn_dim=64,
            num_attention_heads=4,
            max_position_embeddings=40,
            word_embed_proj_dim=32,
            activation_function="gelu",
            do_layer_norm_before=False,
            _remove_final_layer_norm=True,
            enable_bias=False,
            layer_norm_elementwise_affine=False,
            tie_word_embeddings=False,
            pad_token_id=3,
        ),
        # the router's settings change only what a training step saves (the activation formula refuses them)
        "mixtral": dict(
            _MOE_SWEEP,
            intermediate_size=64,
            num_local_experts=3,
            head_dim=10,
            output_router_logits=True,
            router_jitter_noise=0.1,
        ),
        "qwen2_moe": dict(
            _MOE_SWEEP,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=24,
            num_experts=3,
            qkv_bias=False,
            # layers without experts: a dense gated feed-forward of intermediate_size (the base has one layer)
            decoder_sparse_step=2,
            mlp_only_layers=[0],
            intermediate_size=36,
            norm_topk_prob=True,
            output_router_logits=True,
        ),
        # sequential residual, no biases, a tied output embedding, a padding id, and half of each head turned (the
        # base: a quarter); 72 wide for the base's 3 heads; 4 heads of the base's 48 leave 12 channels, a quarter of which
        # is odd (3, turned as 4)
        "gpt_neox": dict(
            vocab_size=101,
            hidden_size=72,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            hidden_act="relu",
            max_position_embeddings=40,
            tie_word_embeddings=True,
            use_parallel_residual=False,
            attention_bias=False,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3, "partial_rotary_factor": 0.5},
            pad_token_id=3,
        ),
        # 60 wide for the base's 3 heads (20 channels each); rotary_dim 12 fits the base's 16-wide heads
        "gptj": dict(
            vocab_size=101,
            n_embd=60,
            n_layer=2,
            n_head=4,
            n_inner=100,
            n_positions=40,
            rotary_dim=12,
            activation_function="relu",
            tie_word_embeddings=True,
            pad_token_id=3,
        ),
        # 6 heads of the base's 48 (8 channels, half of them turned), multi-query attention, query/key LayerNorms,
        # every channel of the base's 12-wide heads turned, a tied LM head (its bias its own), a padding index
        "phi": dict(
            vocab_size=101,
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=6,
            num_key_value_heads=1,
            intermediate_size=64,
            hidden_act="relu",
            max_position_embeddings=40,
            tie_word_embeddings=True,
            qk_layernorm=True,
            pad_token_id=3,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 5e3, "partial_rotary_factor": 1.0},
        ),
        "t5": dict(
            vocab_size=101,
            d_model=60,
            d_kv=10,
            d_ff=64,
            num_layers=2,
            num_decoder_layers=3,
            num_heads=3,
            relative_attention_num_buckets=16,
            feed_forward_proj="gated-gelu",
            dense_act_fn="relu",
            is_gated_act=True,
            tie_word_embeddings=False,
        ),
    }
)
#: the sliding-window keys, read only to refuse a window transformers' forward pass cannot run with (a window under
#: one token, sliding layers without one, layer_types of the wrong length or kinds: tests/test_llama.py's
#: WINDOW_EDGES); each value here is one transformers runs
_WINDOW_SWEEP = {
    "mistral": dict(sliding_window=8),
    "phi3": dict(sliding_window=8),
    "mixtral": dict(sliding_window=8),
    "qwen2": dict(use_sliding_window=True, sliding_window=4, max_window_layers=0, layer_types=["full_attention"]),
    "qwen2_moe": dict(use_sliding_window=True, sliding_window=4, max_window_layers=0, layer_types=["full_attention"]),
}
for _model_type, _keys in _WINDOW_SWEEP.items():
    SWEEPS[_model_type].update(_keys)
#: keys a type reads only to refuse a file archzoo cannot count as transformers' class uses it (each refusal is
#: tested with its plugin, tests/test_t5.py): swept here they would be refused where transformers builds
#: variants where a class built from the configuration is not what from_pretrained loads for such a file, and
#: archzoo counts the loaded model: T5 v1.1's files say tie_word_embeddings false and their checkpoints hold an
#: lm_head of their own, while transformers 5.23's T5Config forces the tie (tests/test_t5.py checks that head
#: against from_pretrained)
FROM_PRETRAINED_ONLY = {("t5", "tie_word_embeddings", "T5ForConditionalGeneration")}
CHECKED_ONLY = {
    "t5": {"is_decoder", "is_encoder_decoder", "scale_decoder_outputs"},
    # with more decoder than encoder layers, *ForCausalLM runs only without a cache (tests/test_hf_heads.py)
    "bart": {"use_cache"},
    "mbart": {"use_cache"},
}
#: the label count, changed both ways transformers reads it
LABEL_VARIANTS = {"id2label": _FIVE_LABELS, "num_labels": 7}


def _host() -> PluginHost:
    return PluginHost().load()


HOST = _host()
#: the tables of the model types swept here (those with a base config above), as their plugins register them
TABLES = {t: hf_table(r.reader) for t, r in HOST.hf_readers().items() if t in BASES}


def _variants() -> list:
    cases = []
    for model_type, sweep in SWEEPS.items():
        table = TABLES[model_type]
        for key, value in [("(base)", None), *sweep.items(), *LABEL_VARIANTS.items()]:
            for model_class in table.classes:
                if (model_type, key, model_class) in FROM_PRETRAINED_ONLY:
                    continue
                cases.append(pytest.param(model_type, key, value, model_class, id=f"{model_type}-{key}-{model_class}"))
    return cases


# ---- measuring both sides -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_and_transformers():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()  # token ids beyond a tiny vocabulary only warn
    return torch, transformers


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return path


def _transformers_figures(torch, transformers, path: Path, model_class: str, seq_len: int) -> tuple[int, int]:
    """Parameters and forward FLOPs of ``model_class`` built from the file, as transformers does it."""
    from torch.utils.flop_counter import FlopCounterMode

    config = transformers.AutoConfig.from_pretrained(str(path))
    config._attn_implementation = "eager"  # FLOPs of the attention products are counted
    # each expert runs as its own matmuls on the tokens routed to it (transformers' grouped_mm kernel is an op
    # FlopCounterMode does not count, so with it the experts would cost nothing)
    config._experts_implementation = "eager"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(transformers, model_class)(config)
    params = sum(p.numel() for p in model.parameters())
    if hasattr(config, "image_size"):
        side = config.image_size if isinstance(config.image_size, int) else config.image_size[0]
        inputs = {"pixel_values": torch.zeros(1, config.num_channels, side, side)}
    else:
        inputs = {"input_ids": torch.ones(1, seq_len, dtype=torch.long)}
        if model_class.endswith("ForSequenceClassification") and getattr(config, "is_encoder_decoder", False):
            # the head reads the decoder output at the input's end-of-sequence tokens: every input ends with one
            inputs["input_ids"] = torch.full((1, seq_len), config.eos_token_id, dtype=torch.long)
        if getattr(config, "is_encoder_decoder", False) and not model_class.endswith("EncoderModel"):
            inputs["decoder_input_ids"] = inputs["input_ids"]  # archzoo's N is both sides' length
    # Small random weights on the CPU, not the meta device: a padding token or a cache setting makes the
    # forward pass read a tensor's value (Tensor.item), which the meta device cannot do.
    model.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**inputs)
    return params, counter.get_total_flops()


def _compare(torch, transformers, tmp_path: Path, data: dict[str, Any], model_class: str) -> str:
    """Exact or refused: archzoo's figures equal transformers', or both refuse. Returns which."""
    path = _write(tmp_path, data)
    try:
        expected = _transformers_figures(torch, transformers, path, model_class, SEQ_LEN)
    except Exception as exc:  # transformers refuses this file for this class
        with pytest.raises(HFConfigError):
            reading = load_hf_config(path, HOST, hf_class=model_class)
            pytest.fail(
                f"transformers refuses {data} as {model_class} ({type(exc).__name__}: {exc}), "
                f"but archzoo counts it as {reading.config!r}"
            )
        return "refused"
    reading = load_hf_config(path, HOST, hf_class=model_class)
    is_image = reading.architecture.name == "vit"
    report = make_report(reading.architecture, reading.config, None if is_image else SEQ_LEN)
    assert (report.params, report.flops) == expected, (
        f"{data} as {model_class}: archzoo {report.params:,} params and {report.flops:,} FLOPs, transformers "
        f"{expected[0]:,} and {expected[1]:,} (params {report.params - expected[0]:+,}, "
        f"FLOPs {report.flops - expected[1]:+,})"
    )
    return "exact"


# ---- the sweep: one key at a time, every class -----------------------------------------------------------


@pytest.mark.parametrize("model_type, key, value, model_class", _variants())
def test_each_key_against_transformers(torch_and_transformers, tmp_path, model_type, key, value, model_class):
    data = {"model_type": model_type, **BASES[model_type]}
    if key != "(base)":
        data[key] = value
    outcome = _compare(*torch_and_transformers, tmp_path, data, model_class)
    if outcome == "exact":  # the plugin's own reference names the same class and builds the same count
        from archzoo.reference import reference_params

        reading = load_hf_config(tmp_path / "config.json", HOST, hf_class=model_class)
        report = make_report(reading.architecture, reading.config)
        from archzoo.reference import build_reference

        ref = reading.architecture.reference(reading.config)
        assert ref is not None, reading.config
        _, transformers = torch_and_transformers
        # the class itself, or a plugin's subclass of it that registers the same modules under more names
        assert isinstance(build_reference(ref), getattr(transformers, model_class)), ref
        assert reference_params(ref) == report.params
    # the only variants transformers refuses: question answering with other than 2 labels in the BERT family
    # (DistilBERT's class refuses to build, the others' forward pass splits the logits into two), in T5 and in
    # GPT-J (their Linear(d, num_labels) is split in two); the other types' question answering is a Linear(d, 2)
    # whatever num_labels says
    qa_types = ("bert", "roberta", "distilbert", "albert", "xlm-roberta", "xlm-roberta-xl", "electra", "t5", "gptj")
    qa_labels = model_class.endswith("ForQuestionAnswering") and model_type in qa_types
    # and BART's decoder alone with more layers than the encoder, whose cache transformers sizes by the encoder
    short_cache = model_class.endswith("ForCausalLM") and data.get("decoder_layers", 1) > data.get("encoder_layers", 1)
    assert (outcome == "refused") == ((qa_labels and key in LABEL_VARIANTS) or short_cache)


#: model types whose plugin's own test module sweeps every key its table reads, against transformers, in that module
#: (its SWEEP; the module's test_the_sweep_covers_every_key holds it to the table)
SWEPT_IN_OWN_MODULE = {
    "falcon": "test_falcon",
    "starcoder2": "test_starcoder2",
    "modernbert": "test_modernbert",
    "deberta-v2": "test_deberta",
    "cohere": "test_cohere",
    "stablelm": "test_stablelm",
    "whisper": "test_whisper",
    "clip": "test_clip",
    "clip_text_model": "test_clip",
    "clip_vision_model": "test_clip",
    "gemma2": "test_gemma",
    "gemma3_text": "test_gemma",
    "deepseek_v2": "test_deepseek",
    "deepseek_v3": "test_deepseek",
    "qwen3": "test_qwen3",
    "qwen3_moe": "test_qwen3",
    "olmo2": "test_olmo2",
    "granite": "test_llama",
    "gpt_oss": "test_gpt_oss",
}
#: model types with no key-by-key sweep yet: their tables are checked field for field against the transformers
#: configuration class, and their counts against published files and random configurations, in these modules
NOT_SWEPT_KEY_BY_KEY: dict[str, str] = {}


def test_the_model_types_swept_elsewhere_are_swept_there():
    import importlib

    for model_type, name in SWEPT_IN_OWN_MODULE.items():
        module = importlib.import_module(name)
        table = hf_table(HOST.hf_readers()[model_type].reader)
        sweep = getattr(module, "SWEEPS", {}).get(model_type, getattr(module, "SWEEP", None))  # one module, three types
        nested = {f"{key}.{name}" for key, sub in table.nested.items() for name in sub.read}  # text_config.hidden_size
        assert set(sweep) == set(table.read) | nested, model_type
    for name in set(NOT_SWEPT_KEY_BY_KEY.values()):
        assert (Path(__file__).parent / f"{name}.py").is_file(), name


def test_the_sweep_covers_every_key_each_type_reads():
    """A key added to a type's table must get a sweep value here, or this fails."""
    assert set(TABLES) == set(BASES), "a model type swept here is no longer read by any plugin"
    for model_type, table in TABLES.items():
        assert set(SWEEPS[model_type]) == set(table.read) - {"num_labels"} - CHECKED_ONLY.get(model_type, set()), (
            model_type
        )


def test_every_model_type_a_plugin_reads_is_swept():
    """A plugin that registers a new Hugging Face model type must get a base and a sweep here, or this fails."""
    assert set(HOST.hf_readers()) == set(BASES) | set(SWEPT_IN_OWN_MODULE) | set(NOT_SWEPT_KEY_BY_KEY)


@pytest.mark.parametrize("model_type", sorted(t for t in TABLES if TABLES[t].aliases))
def test_aliases_read_like_their_native_keys(torch_and_transformers, tmp_path, model_type):
    """Each alias alone, then next to its native key with another value: transformers applies the alias last."""
    table = TABLES[model_type]
    sweep = SWEEPS[model_type]
    for alias, native in table.aliases.items():
        for model_class in (table.base_class, list(table.classes)[-1]):
            data = {"model_type": model_type, **BASES[model_type]}
            data.pop(native, None)
            data[alias] = sweep[native]
            assert _compare(*torch_and_transformers, tmp_path, data, model_class) == "exact"
            both = {"model_type": model_type, **BASES[model_type], alias: sweep[native]}
            assert _compare(*torch_and_transformers, tmp_path, both, model_class) == "exact"


#: values for the ignored keys that are not typed fields of the configuration class (or need a safe value)
_IGNORED_VALUES = {
    "pad_token_id": 5,
    "bos_token_id": 6,
    "eos_token_id": 7,
    "sep_token_id": 8,
    "cls_token_id": 9,
    "mask_token_id": 10,
    "decoder_start_token_id": 11,
    "classifier_dropout": 0.3,
    "summary_activation": "tanh",
    "summary_type": "first",
    "pooler_act": "relu",
    "encoder_stride": 8,
    "n_ctx": 7,
    "summary_last_dropout": 0.2,
    "dtype": "float32",
    "torch_dtype": "float32",
    "problem_type": "regression",
    "label2id": {"a": 0, "b": 1},
    "task_specific_params": {"text-generation": {"max_length": 50}},
    "transformers_version": "4.6.0",
    "architectures": ["SomethingElse"],
    "chunk_size_feed_forward": 4,
    "cross_attention_hidden_size": 8,
    # return_dict false makes ViTForImageClassification's forward fail in transformers 5.23 (it reads
    # last_hidden_state from a tuple): a bug of that class, unrelated to counts, so it stays true here
    "return_dict": True,
    "attn_implementation": "sdpa",
    "_attn_implementation": "sdpa",
    "_attn_implementation_internal": "sdpa",
    "experts_implementation": "eager",
    "pruned_heads": {},
    "per_layer_config": None,
    "bad_words_ids": [[1]],
    "begin_suppress_tokens": [1],
    "suppress_tokens": [1],
    "forced_bos_token_id": 1,
    "forced_eos_token_id": 2,
    "num_assistant_tokens_schedule": "constant",
    "max_length": 30,
    "min_length": 2,
    "finetuning_task": "sst2",
    "tokenizer_class": "BertTokenizer",
    "prefix": "x",
    "_name_or_path": "x",
    "name_or_path": "x",
    "_commit_hash": "abc",
    "_num_labels": 3,
    "position_embedding_type": "relative_key",
    "directionality": "bidi",
    "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12,
    "pooler_num_fc_layers": 3,
    "pooler_size_per_head": 128,
    "pooler_type": "first_token_transform",
    "down_scale_factor": 1,
    "gap_size": 0,
    "net_structure_type": 0,
    "num_memory_blocks": 0,
    "n_special": 0,
    "tie_weights_": True,
    "predict_special_tokens": True,
    "tie_word_embeddings": False,
    "use_cache": False,
    "is_decoder": True,
    "add_cross_attention": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0},
    "clip_qkv": 8.0,
    "layer_types": ["sliding_attention"],
    "sliding_window": 4,
    "use_sliding_window": True,
    "use_bidirectional_attention": True,
}
#: keys whose change would make transformers build something else, although archzoo's table calls them
#: irrelevant for this test's purpose: the attention kernel (FlopCounterMode sees fused attention as zero)
_KERNEL_KEYS = {"attn_implementation", "_attn_implementation", "_attn_implementation_internal"}
#: gradient_checkpointing recomputes activations in the backward pass only, so it cannot change a forward
#: count; but BART's layers built with it cannot run under FlopCounterMode without gradients (torch's module
#: tracker asserts on a tensor without a gradient function), so it is left out of the all-at-once change
_KERNEL_KEYS |= {"gradient_checkpointing"}


def _changed(key: str, default: Any) -> Any:
    if key in _IGNORED_VALUES:
        return _IGNORED_VALUES[key]
    if isinstance(default, bool):
        return not default
    if isinstance(default, float):
        return round(default + 0.05, 4)
    if isinstance(default, int):
        return default + 1
    if isinstance(default, str):
        return default + "_x"
    return True if default is None else default


def _ignored_keys(model_type: str) -> dict[str, Any]:
    table = TABLES[model_type]
    keys = {k: _changed(k, table.defaults.get(k)) for k in table.ignored}
    for key, (disposition, _) in COMMON_KEYS.items():
        if disposition == "ignored" and key not in table.read and key not in table.refused and key not in _KERNEL_KEYS:
            keys.setdefault(key, _changed(key, COMMON_DEFAULTS.get(key)))
    return keys


@pytest.mark.parametrize(
    "model_type, model_class", [pytest.param(t, c, id=f"{t}-{c}") for t in sorted(TABLES) for c in TABLES[t].classes]
)
def test_ignored_keys_change_no_figure(torch_and_transformers, tmp_path, model_type, model_class):
    """All keys archzoo ignores, changed at once: transformers' figures still equal archzoo's."""
    data = {"model_type": model_type, **BASES[model_type], **_ignored_keys(model_type)}
    assert _compare(*torch_and_transformers, tmp_path, data, model_class) == "exact"


@pytest.mark.parametrize("model_type, model_class", [("vit", "ViTForImageClassification"), ("deit", "DeiTModel")])
def test_image_and_patch_sides_as_pairs(torch_and_transformers, tmp_path, model_type, model_class):
    """transformers also takes [height, width]; a square pair counts like its side."""
    data = {"model_type": model_type, **BASES[model_type], "image_size": [24, 24], "patch_size": [4, 4]}
    assert _compare(*torch_and_transformers, tmp_path, data, model_class) == "exact"


#: the rotary keys older files carry (converted into rope_parameters while loading, so not swept above: GPT-NeoX's
#: rotary_pct and rotary_emb_base, Phi-2's top-level partial_rotary_factor and rope_theta, rope_scaling), and the
#: edges of the rotary and head shapes, each with what transformers 5.23 does with it on the bases above: builds
#: and runs it ("exact": archzoo's figures must equal its), or fails ("refused": archzoo must refuse it too)
_ROTARY_AND_HEAD_EDGES = [
    ("gpt_neox", {"rotary_pct": 0.5, "rotary_emb_base": 5000}, "exact"),
    ("gpt_neox", {"rotary_pct": 1.0}, "exact"),
    ("gpt_neox", {"rotary_pct": 0.0625}, "exact"),  # 1 channel of 16, turned as 2
    ("gpt_neox", {"rotary_pct": 0.96875}, "exact"),  # 15 channels of 16, turned as 16
    ("gpt_neox", {"rotary_pct": 0.5, "rope_scaling": {"type": "linear", "factor": 2.0}}, "exact"),
    ("gpt_neox", {"rope_scaling": {"type": "unknown", "factor": 2.0}}, "refused"),
    ("phi", {"partial_rotary_factor": 0.5, "rope_theta": 5000.0}, "exact"),
    ("phi", {"partial_rotary_factor": 0.4}, "exact"),  # Phi-2's factor: 4 channels of 12
    ("phi", {"partial_rotary_factor": 0.34, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, "exact"),
    ("phi", {"partial_rotary_factor": 0.25}, "refused"),  # 3 channels of 12, turned as 4 against 3
    ("phi", {"num_key_value_heads": 3}, "refused"),  # not a divisor of 4 query heads
    ("phi", {"num_attention_heads": 5}, "refused"),  # the base's 2 key/value heads do not divide 5 query heads
    ("phi", {"hidden_size": 50, "num_key_value_heads": 4}, "exact"),  # 4 heads of 12 in a 50-wide model
    ("gptj", {"rotary_dim": 16}, "exact"),  # a whole head
    ("gptj", {"rotary_dim": 18}, "refused"),  # wider than a head
    ("gptj", {"rotary_dim": 7}, "refused"),  # odd
]


@pytest.mark.parametrize(
    "model_type, change, outcome, model_class",
    [
        pytest.param(
            t,
            change,
            outcome,
            c,
            id=f"{t}-{'-'.join(f'{k}={v}' if not isinstance(v, dict) else k for k, v in change.items())}-{c}",
        )
        for t, change, outcome in _ROTARY_AND_HEAD_EDGES
        for c in TABLES[t].classes
    ],
)
def test_rotary_keys_and_head_edges(torch_and_transformers, tmp_path, model_type, change, outcome, model_class):
    """Each converted rotary key and shape edge, as every class: exact where transformers runs it, else refused."""
    data = {"model_type": model_type, **BASES[model_type], **change}
    assert _compare(*torch_and_transformers, tmp_path, data, model_class) == outcome


# ---- random combinations --------------------------------------------------------------------------------

_ACTIVATIONS = {
    "bert": "hidden_act",
    "roberta": "hidden_act",
    "albert": "hidden_act",
    "distilbert": "activation",
    "gpt2": "activation_function",
    "openai-gpt": "afn",
    "vit": "hidden_act",
    "deit": "hidden_act",
    **{t: "hidden_act" for t in ("llama", "mistral", "qwen2", "gemma", "olmo", "phi3")},
}


@st.composite
def _config(draw, model_type: str) -> tuple[dict[str, Any], str]:
    table = TABLES[model_type]
    heads = draw(st.integers(1, 4))
    width = heads * draw(st.sampled_from([4, 8, 12]))
    names = {native: alias for alias, native in table.aliases.items()}  # sometimes written with an alias
    data: dict[str, Any] = {"model_type": model_type}

    def put(native: str, value: Any) -> None:
        key = names[native] if native in names and draw(st.booleans()) else native
        data[key] = value

    text = model_type not in ("vit", "deit")
    width_key = {"distilbert": "dim", "gpt2": "n_embd", "openai-gpt": "n_embd"}.get(model_type, "hidden_size")
    put(width_key, width)
    put(
        {"distilbert": "n_heads", "gpt2": "n_head", "openai-gpt": "n_head"}.get(model_type, "num_attention_heads"),
        heads,
    )
    put(
        {"distilbert": "n_layers", "gpt2": "n_layer", "openai-gpt": "n_layer"}.get(model_type, "num_hidden_layers"),
        draw(st.integers(1, 2)),
    )
    if text:
        data["vocab_size"] = draw(st.integers(20, 120))
        put(
            "n_positions" if model_type in ("gpt2", "openai-gpt") else "max_position_embeddings",
            draw(st.integers(12, 40)),
        )
    if model_type in ("bert", "roberta", "albert"):
        data["type_vocab_size"] = draw(st.integers(1, 4))
    if model_type == "albert":
        data["embedding_size"] = draw(st.integers(4, 40))
    if model_type not in ("gpt2", "openai-gpt"):
        data["hidden_dim" if model_type == "distilbert" else "intermediate_size"] = draw(st.integers(8, 100))
    if model_type == "gpt2":
        data["n_inner"] = draw(st.none() | st.integers(8, 100))
    data[_ACTIVATIONS[model_type]] = draw(st.sampled_from(["gelu", "relu", "silu"]))
    if text:
        data["tie_word_embeddings"] = draw(st.booleans())
    else:
        patch = draw(st.integers(2, 8))
        data["patch_size"] = patch
        data["image_size"] = patch * draw(st.integers(1, 4))
        data["num_channels"] = draw(st.integers(1, 3))
        data["qkv_bias"] = draw(st.booleans())
        data["pooler_output_size"] = draw(st.none() | st.integers(4, 64))
    labels = draw(st.integers(1, 6))
    if draw(st.booleans()):
        data["id2label"] = {str(i): f"l{i}" for i in range(labels)}
    else:
        data["num_labels"] = labels
    return data, draw(st.sampled_from(list(table.classes)))


@st.composite
def _mixed(draw, model_type: str) -> tuple[dict[str, Any], str]:
    """Each swept key at its base value or its sweep value, at random (the combinations the one-key sweep
    never makes), counted as a random class; a combination transformers refuses must be refused."""
    data: dict[str, Any] = {"model_type": model_type, **BASES[model_type]}
    for key, value in SWEEPS[model_type].items():
        if draw(st.booleans()):
            data[key] = value
    model_class = draw(st.sampled_from(list(TABLES[model_type].classes)))
    untied = data.get("tie_word_embeddings") is False
    assume(
        not any(
            untied and key == "tie_word_embeddings"
            for t, key, c in FROM_PRETRAINED_ONLY
            if (t, c) == (model_type, model_class)
        )
    )
    return data, model_class


@pytest.mark.parametrize("model_type", sorted(BASES))
def test_random_combinations_against_transformers(torch_and_transformers, tmp_path_factory, model_type):
    @settings(
        max_examples=10,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(case=_config(model_type) if model_type in _ACTIVATIONS else _mixed(model_type))
    def check(case):
        data, model_class = case
        _compare(*torch_and_transformers, tmp_path_factory.mktemp("combo"), data, model_class)

    check()


# ---- the tables against transformers' own --------------------------------------------------------------


@pytest.mark.parametrize("model_type", sorted(BASES))
def test_table_equals_the_transformers_configuration_class(torch_and_transformers, model_type):
    """Fields and defaults, aliases (attribute_map), AutoModel's class, and every model class of the type."""
    _, transformers = torch_and_transformers
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    table = TABLES[model_type]
    config_class = getattr(transformers, table.config_class)
    assert config_class.model_type == model_type
    common = {f.name for f in dataclasses.fields(transformers.PreTrainedConfig)}
    fields = {f.name: f.default for f in dataclasses.fields(config_class) if f.name not in common}
    assert dict(table.defaults) == fields
    # transformers' attribute_map, and any further alias its __init__ reads (BLOOM's n_embed)
    assert dict(table.aliases).items() >= config_class.attribute_map.items()
    for alias, native in table.aliases.items():
        if alias not in config_class.attribute_map:
            assert getattr(config_class(**{alias: 64}), native) == 64, (alias, native)
    assert table.base_class == MODEL_MAPPING_NAMES[model_type]
    module = importlib.import_module(config_class.__module__.replace("configuration_", "modeling_"))
    model_classes = {n for n in module.__all__ if ("For" in n or n.endswith("Model")) and "PreTrained" not in n}
    assert set(table.classes) | set(table.unsupported_classes) == model_classes
    # a file transformers 5.23 itself writes, with every key, is read without an unknown key
    full = config_class().to_dict()
    assert {
        k
        for k in full
        if k not in table.read
        and k not in table.ignored
        and k not in table.refused
        and k not in table.aliases
        and k not in COMMON_KEYS
    } == set()


def test_common_table_equals_pretrained_config(torch_and_transformers):
    _, transformers = torch_and_transformers
    from transformers import GenerationConfig

    fields = {f.name: f.default for f in dataclasses.fields(transformers.PreTrainedConfig)}
    assert fields == COMMON_DEFAULTS
    assert set(fields) <= set(COMMON_KEYS)
    generation = set(GenerationConfig._get_default_generation_params())
    assert set(_GENERATION_KEYS) | {"use_cache"} == generation


@pytest.mark.parametrize("model_type", sorted(BASES))
def test_a_file_saved_by_transformers_reads_as_its_class(torch_and_transformers, tmp_path, model_type):
    """save_pretrained's full config.json, with architectures set, counted with --hf-class auto."""
    torch, transformers = torch_and_transformers
    table = TABLES[model_type]
    config_class = getattr(transformers, table.config_class)
    for model_class in table.classes:
        config = config_class(**{k: v for k, v in BASES[model_type].items()}, architectures=[model_class])
        path = tmp_path / "config.json"
        path.write_text(config.to_json_string(use_diff=False))
        reading = load_hf_config(path, HOST, hf_class="auto")
        assert reading.model_class == model_class and reading.class_source == "architectures"
        assert _compare(torch, transformers, tmp_path, json.loads(path.read_text()), model_class) == "exact"
