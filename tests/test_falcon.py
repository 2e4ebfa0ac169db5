"""The falcon plugin against transformers: defaults, the published shapes, random small configurations over every
option, config.json files key by key, every head class, the KV cache.

Every expected figure is ``sum(p.numel() for p in model.parameters())`` of the Falcon class transformers 5.23 builds
(on the meta device, or on the CPU where values are needed), what ``torch.utils.flop_counter.FlopCounterMode``
reports for one eager forward pass of batch 1, or the elements transformers' cache holds. The checks every decoder
family makes are `family_checks.RotaryDecoderChecks'`, through archzoo's kit for plugin authors (`archzoo.testing`)
as a third-party plugin's would; this module gives Falcon's facts and its own checks.
"""

from __future__ import annotations

import json
import random

import pytest

from archzoo.cli import main
from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.report import make_report
from archzoo.testing import build_model
from family_checks import (
    DecoderFamily,
    RotaryDecoderChecks,
    assert_head_class_matches,
    changed_settings,
    counter,
    write_json,
)
from transformers_models import forward_flops, n_params

#: many cases per function: the fast subset runs each function's first case, `make test` every case
pytestmark = pytest.mark.sweep

CLASSES = {
    "lm": "FalconForCausalLM",
    "none": "FalconModel",
    "sequence_classification": "FalconForSequenceClassification",
    "token_classification": "FalconForTokenClassification",
    "question_answering": "FalconForQuestionAnswering",
}


count = counter("falcon")

BASE = dict(vocab_size=97, hidden_size=48, num_hidden_layers=2, num_attention_heads=4)


# ---- the published shapes --------------------------------------------------------------------------------

#: The shapes TII's model cards print for Falcon-7B, 40B and 180B (Layers, d_model, head_dim 64, vocabulary
#: 65,024, context 2,048: "Technical Specifications" of tiiuae/falcon-7b, -40b, -180B; Almazrouei et al. 2023,
#: arXiv:2311.16867), written with the keys of transformers' FalconConfig the Hub's falcon files use: Falcon-7B
#: multi-query with one LayerNorm per layer, 40B and 180B the new decoder architecture (8 key/value groups, the
#: "multigroup" attention of the cards) with two. The heads are d_model / 64.
PUBLISHED = {
    "falcon-7b": dict(
        hidden_size=4544, num_hidden_layers=32, num_attention_heads=71, multi_query=True, parallel_attn=True
    ),
    "falcon-40b": dict(
        hidden_size=8192, num_hidden_layers=60, num_attention_heads=128, num_kv_heads=8, new_decoder_architecture=True
    ),
    "falcon-180b": dict(
        hidden_size=14848, num_hidden_layers=80, num_attention_heads=232, num_kv_heads=8, new_decoder_architecture=True
    ),
}
_HUB_KEYS = dict(
    model_type="falcon",
    architectures=["FalconForCausalLM"],
    alibi=False,
    bias=False,
    bos_token_id=11,
    eos_token_id=11,
    vocab_size=65024,
    hidden_dropout=0.0,
    attention_dropout=0.0,
    initializer_range=0.02,
    layer_norm_epsilon=1e-05,
    torch_dtype="bfloat16",
    use_cache=True,
)


@pytest.mark.reference
@pytest.mark.parametrize("model_id", PUBLISHED)
def test_published_shapes_equal_transformers(T, host, tmp_path, model_id, capsys):
    """Each shape, read by `archzoo count --hf-config`, against the class transformers builds from the same file
    (AutoConfig), on the meta device: parameters, and FLOPs at two lengths."""
    path = write_json(tmp_path, {**_HUB_KEYS, **PUBLISHED[model_id]})
    model = build_model("FalconForCausalLM", T.AutoConfig.from_pretrained(str(path)))
    assert main(["count", "--hf-config", str(path), "--hf-class", "auto", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["params"]["total"] == n_params(model)
    reading = load_hf_config(path, host, hf_class="FalconForCausalLM")
    for n in (1, 16):
        assert make_report(reading.architecture, reading.config, n).flops == forward_flops(model, n), n


@pytest.mark.reference
@pytest.mark.parametrize("head", CLASSES)
def test_every_head_class_of_the_40b_layout(T, host, head):
    """A small model of Falcon-40B's layout (grouped key/value heads, two LayerNorms) under every head class
    transformers has for falcon: parameters and FLOPs."""
    config = dict(vocab_size=301, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, new_decoder_architecture=True)
    config |= dict(head=head, num_labels=3)
    assert_head_class_matches(T, host, "falcon", CLASSES[head], config, (3, 32))


# ---- random small configurations: parameters and FLOPs, block by block ----------------------------------


def _random_config(rng: random.Random) -> dict:
    n_heads = rng.choice([1, 2, 4, 6])
    layout = rng.choice(["multi_query", "new", "classic"])
    config = dict(
        vocab_size=rng.randint(2, 300),
        d_model=n_heads * 2 * rng.randint(1, 6),
        n_layers=rng.randint(1, 3),
        n_heads=n_heads,
        d_ff=rng.choice([None, rng.randint(1, 80)]),
        activation=rng.choice(["gelu", "relu", "silu", "gelu_new"]),
        bias=rng.random() < 0.5,
        alibi=rng.random() < 0.3,
        tie_embeddings=rng.random() < 0.7,
        head=rng.choice(list(CLASSES)),
        num_labels=rng.randint(1, 5),
    )
    if layout == "new":
        kv = rng.choice([k for k in (1, 2, 3, n_heads) if n_heads % k == 0])
        config |= dict(new_decoder_architecture=True, n_kv_heads=kv, num_norms=rng.choice([None, 1, 2]))
    elif layout == "multi_query":
        config |= dict(multi_query=True, parallel_attn=rng.random() < 0.7)
    else:
        config |= dict(multi_query=False, parallel_attn=rng.random() < 0.5)
    return config


#: one value per key the table reads, each changed alone (tests/test_hf_sweep.py reads it too)
SWEEP = dict(
    vocab_size=101,
    hidden_size=64,
    num_hidden_layers=1,
    num_attention_heads=8,
    num_kv_heads=4,
    ffn_hidden_size=33,
    max_position_embeddings=64,
    activation="relu",
    bias=True,
    new_decoder_architecture=True,
    multi_query=False,
    parallel_attn=False,
    num_ln_in_parallel_attn=1,
    alibi=True,
    tie_word_embeddings=False,
    rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0},
    num_labels=5,
)


class TestFalcon(RotaryDecoderChecks):
    FAMILY = DecoderFamily(
        architecture="falcon",
        classes=CLASSES,
        config_class="FalconConfig",
        modeling="transformers.models.falcon.modeling_falcon",
        configs=[_random_config(random.Random(seed)) for seed in range(16)],
        # multi-query, multi-head, the new decoder architecture (its keys and values cached after they are
        # broadcast to every query head), and that with ALiBi
        kv_cache=[
            dict(vocab_size=50, d_model=32, n_layers=3, n_heads=4, **layout)
            for layout in (
                dict(multi_query=True),
                dict(multi_query=False),
                dict(new_decoder_architecture=True, n_kv_heads=2),
                dict(new_decoder_architecture=True, n_kv_heads=2, alibi=True),
            )
        ],
        refused=[
            (dict(d_model=100, n_heads=16), r"n_heads: d_model 100 is not divisible by n_heads 16"),
            (dict(new_decoder_architecture=True, n_heads=8, d_model=64, n_kv_heads=3), r"n_kv_heads: n_heads 8 is not"),
            (dict(new_decoder_architecture=True, d_model=64, n_heads=8, parallel_attn=False), r"parallel_attn: "),
            (dict(num_norms=2), r"num_norms: two LayerNorms"),
            (dict(multi_query=False, d_model=64, n_heads=8, n_kv_heads=2), r"n_kv_heads: classic multi-head"),
            (dict(activation="prelu"), r"activation: "),
        ],
        base=BASE,
        # the sweep on the multi-query default unless a key says otherwise, and two layouts of the new decoder
        # architecture
        sweep=SWEEP,
        more_changes={
            "new-one-norm": dict(new_decoder_architecture=True, num_kv_heads=2, num_ln_in_parallel_attn=1),
            "new-alibi-bias": dict(
                new_decoder_architecture=True, num_kv_heads=2, alibi=True, bias=True, ffn_hidden_size=20
            ),
        },
        ignored=dict(
            hidden_dropout=0.2,
            attention_dropout=0.3,
            **changed_settings("layer_norm_epsilon"),
            pad_token_id=7,
        ),
    )


# ---- refusals of what transformers cannot run --------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.parametrize(
    "config",
    [
        dict(new_decoder_architecture=True, d_model=64, n_heads=8, parallel_attn=False),
        dict(num_norms=2),
        dict(multi_query=False, d_model=64, n_heads=8, n_kv_heads=2),
    ],
    ids=["new-sequential", "two-norms-old", "classic-grouped"],
)
def test_refused_layouts_fail_in_transformers_too(T, config):
    """The layouts refused above are ones whose forward pass transformers cannot run (checked here, so the
    refusals are not archzoo's guesses)."""
    import torch

    kwargs = dict(vocab_size=50, hidden_size=config.get("d_model", 32), num_hidden_layers=1)
    kwargs |= dict(num_attention_heads=config.get("n_heads", 4), num_kv_heads=config.get("n_kv_heads"))
    kwargs |= dict(
        new_decoder_architecture=config.get("new_decoder_architecture", False),
        multi_query=config.get("multi_query", True),
        parallel_attn=config.get("parallel_attn", True),
        num_ln_in_parallel_attn=config.get("num_norms"),
    )
    with pytest.raises(Exception):  # noqa: B017 - an AttributeError, an UnboundLocalError or a shape error
        model = build_model("FalconModel", T.FalconConfig(**kwargs), device="cpu")
        with torch.no_grad():
            model(input_ids=torch.ones(1, 3, dtype=torch.long))


def test_the_layout_changes_the_fused_projection(host):
    """(h + 2 h_kv) d_h outputs of the fused projection: d + 2 d_h for multi-query, 3 d for multi-head."""
    d, h = 64, 8
    d_h = d // h

    def qkv(**layout):
        report = count(d_model=d, n_heads=h, bias=False, **layout)
        return next(b for p, _, b in report.root.walk() if p.endswith("qkv_proj")).params.evaluate()

    assert qkv(multi_query=True) == d * (d + 2 * d_h)
    assert qkv(multi_query=False) == d * 3 * d
    assert qkv(new_decoder_architecture=True, n_kv_heads=2) == d * (h + 2 * 2) * d_h


# ---- Hugging Face config.json: every key accounted for --------------------------------------------------


@pytest.mark.reference
def test_n_embed_is_read_as_the_width(T, host, tmp_path):
    """FalconConfig takes a legacy n_embed argument for hidden_size."""
    data = {"model_type": "falcon", **BASE}
    data["n_embed"] = data.pop("hidden_size")
    path = write_json(tmp_path, data)
    assert load_hf_config(path, host).config.d_model == T.AutoConfig.from_pretrained(str(path)).hidden_size


@pytest.mark.reference
def test_a_partial_rotation_transformers_cannot_run_is_refused(T, host, tmp_path):
    """A partial rotation with a rotary type other than default fails in transformers' forward pass."""
    import torch

    rope = {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    path = write_json(tmp_path, {"model_type": "falcon", **BASE, "rope_parameters": rope})
    with pytest.raises(HFConfigError, match=r"partial_rotary_factor 0.5 with rope_type linear"):
        load_hf_config(path, host)
    model = build_model("FalconModel", T.AutoConfig.from_pretrained(str(path)), device="cpu")
    with pytest.raises(RuntimeError), torch.no_grad():
        model(input_ids=torch.ones(1, 3, dtype=torch.long))
