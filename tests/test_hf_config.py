"""Hugging Face config.json files: read as the base model, checked against AutoModel.from_config."""

import json

import pytest

from archzoo.errors import HFConfigError
from archzoo.hf_config import read_hf_config
from archzoo.host import PluginHost
from archzoo.report import make_report

# Partial configs: keys left out must take transformers' defaults for that model type.
CASES = {
    "bert": {"model_type": "bert", "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 512},
    "roberta": {"model_type": "roberta", "vocab_size": 1000, "max_position_embeddings": 130, "type_vocab_size": 1,
                "num_hidden_layers": 1},
    "distilbert": {"model_type": "distilbert", "dim": 96, "n_heads": 3, "hidden_dim": 200, "n_layers": 2},
    "albert": {"model_type": "albert", "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024,
               "embedding_size": 64, "num_hidden_layers": 3},
    "gpt2": {"model_type": "gpt2", "n_embd": 96, "n_layer": 2, "n_head": 4},
    "openai-gpt": {"model_type": "openai-gpt", "n_layer": 1},
    "vit": {"model_type": "vit", "image_size": 32, "patch_size": 8, "hidden_size": 64, "num_attention_heads": 4,
            "intermediate_size": 128, "num_hidden_layers": 2},
    "deit": {"model_type": "deit", "image_size": 48, "patch_size": 16, "hidden_size": 60, "num_attention_heads": 3,
             "intermediate_size": 100, "num_hidden_layers": 1},
    "bert-defaults": {"model_type": "bert"},
}


def _write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.reference
@pytest.mark.parametrize("case", sorted(CASES))
def test_base_model_count_matches_automodel(tmp_path, case):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    data = CASES[case]
    arch, config = read_hf_config(_write(tmp_path, data), PluginHost().load())
    ours = make_report(arch, config).params
    hf_config = transformers.AutoConfig.for_model(**data)
    with torch.device("meta"):
        model = transformers.AutoModel.from_config(hf_config)
    assert ours == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "content, message",
    [
        ({"model_type": "t5"}, r"config\.json: model_type: 't5' is not supported \(supported: albert, bert, deit, distilbert, gpt2, openai-gpt, roberta, vit\)"),
        ({"hidden_size": 8}, r"config\.json: model_type: missing"),
        ("{not json", r"config\.json:1: not valid JSON"),
        ([1, 2], r"config\.json: expected a JSON object"),
        ({"model_type": "bert", "hidden_act": "swooshy"}, r"hidden_act|activation: unknown activation 'swooshy'"),
        ({"model_type": "bert", "hidden_size": 100, "num_attention_heads": 3}, r"n_heads: d_model 100 is not divisible by n_heads 3"),
        ({"model_type": "albert", "num_hidden_groups": 2}, r"num_hidden_groups: 2 is not supported"),
    ],
)
def test_bad_configs_are_clear_errors(tmp_path, content, message):
    with pytest.raises(HFConfigError, match=message):
        read_hf_config(_write(tmp_path, content), PluginHost().load())


def test_missing_file(tmp_path):
    with pytest.raises(HFConfigError, match=r"nope\.json: cannot read the file"):
        read_hf_config(tmp_path / "nope.json", PluginHost().load())
