"""The published acceptance table: archzoo's counts against figures measured on the real implementations.

Every expected figure below is a literal, measured once on the real module and pinned here with its
source. Two kinds of test read the table:

* the plain tests compare archzoo's count with the literal; they need neither torch nor transformers;
* the ``reference`` tests rebuild the real module, with torch / transformers code written out here
  (not through ``archzoo.reference``, so the check is independent of archzoo's own reference
  machinery), and compare it with the same literal. They are skipped only when torch or
  transformers is not installed.

Conventions of the measurements: modules are built on the meta device; parameters are
``sum(p.numel() for p in model.parameters())`` (a tied weight once); FLOPs are what
``torch.utils.flop_counter.FlopCounterMode`` reports for one forward pass of batch 1 with eager
attention.
"""

from __future__ import annotations

import pytest

import archzoo
from archzoo.architecture import Reference
from archzoo.testing import build_model

# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------


def find_block(report, path: str):
    """The block at ``path`` (e.g. ``transformer.encoder.layers.layer.self_attention``) in the report's tree."""
    for block_path, _depth, block in report.root.walk():
        if block_path == path:
            return block
    paths = [p for p, _, _ in report.root.walk()]
    raise AssertionError(f"no block at {path!r}; the tree has: {paths}")


def _torch():
    return pytest.importorskip("torch")


def _transformers():
    _torch()
    return pytest.importorskip("transformers")


def n_params(model) -> int:
    """What PyTorch reports: ``parameters()`` yields a tied tensor once."""
    return sum(p.numel() for p in model.parameters())


def on_meta(target: str, **kwargs):
    """The torch module ``target(**kwargs)`` on the meta device (no memory, no weight initialisation), built by the
    kit (`archzoo.testing.build_model`)."""
    _torch()
    return build_model(Reference(library="torch", target=target, kwargs=kwargs))


def count_flops(model, *args, train: bool = False, **kwargs) -> int:
    """Forward FLOPs of one call under FlopCounterMode, without autograd."""
    torch = _torch()
    from torch.utils.flop_counter import FlopCounterMode

    model.train(train)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return counter.get_total_flops()


def hf_model(model_class: str, config_class: str, model_kwargs: dict | None = None, **config_kwargs):
    """A transformers model built on the meta device, with eager attention (so the attention products are counted)."""
    _transformers()
    reference = Reference(
        library="transformers",
        target=f"transformers.{model_class}",
        config_class=f"transformers.{config_class}",
        kwargs=config_kwargs,
        model_kwargs=model_kwargs or {},
    )
    return build_model(reference)


def token_ids(n: int):
    torch = _torch()
    return torch.zeros(1, n, dtype=torch.long, device="meta")


# ---------------------------------------------------------------------------------------------------
# torch.nn: attention, encoder / decoder layers, whole Transformers
# ---------------------------------------------------------------------------------------------------

ATTENTION_PATH = "transformer.encoder.layers.layer.self_attention"
ENCODER_LAYER_PATH = "transformer.encoder.layers.layer"
DECODER_LAYER_PATH = "transformer.decoder.layers.layer"

# torch 2.13 torch.nn.MultiheadAttention(512, 8), meta device
MHA_512_8 = 1_050_624
# torch 2.13 torch.nn.TransformerEncoderLayer(512, 8), meta device
ENCODER_LAYER_512_8 = 3_152_384
# torch 2.13 torch.nn.TransformerDecoderLayer(512, 8), meta device
DECODER_LAYER_512_8 = 4_204_032
# leading-order part of the same layers: their weight matrices only, 12 d^2 and 16 d^2 at d = 512
ENCODER_LAYER_512_8_APPROX = 3_145_728
DECODER_LAYER_512_8_APPROX = 4_194_304


def test_multihead_attention_params():
    report = archzoo.count("transformer")
    block = find_block(report, ATTENTION_PATH)
    assert block.kind == "self_attention"
    assert block.params.evaluate() == MHA_512_8


@pytest.mark.parametrize(
    "path, kind, params, approx",
    [
        (ENCODER_LAYER_PATH, "encoder_layer", ENCODER_LAYER_512_8, ENCODER_LAYER_512_8_APPROX),
        (DECODER_LAYER_PATH, "decoder_layer", DECODER_LAYER_512_8, DECODER_LAYER_512_8_APPROX),
    ],
)
def test_layer_params(path, kind, params, approx):
    block = find_block(archzoo.count("transformer"), path)
    assert block.kind == kind
    assert block.params.evaluate() == params
    assert block.approx.evaluate() == approx


@pytest.mark.reference
def test_multihead_attention_params_reference():
    assert n_params(on_meta("torch.nn.MultiheadAttention", embed_dim=512, num_heads=8)) == MHA_512_8


@pytest.mark.reference
def test_encoder_decoder_layer_params_reference():
    assert n_params(on_meta("torch.nn.TransformerEncoderLayer", d_model=512, nhead=8)) == ENCODER_LAYER_512_8
    assert n_params(on_meta("torch.nn.TransformerDecoderLayer", d_model=512, nhead=8)) == DECODER_LAYER_512_8


# (id, archzoo config, literal, the real module's constructor arguments)
TORCH_TRANSFORMERS = [
    # torch 2.13 torch.nn.Transformer(), meta device
    pytest.param({}, 44_140_544, {}, id="Transformer()"),
    # torch 2.13 torch.nn.Transformer(bias=False), meta device
    pytest.param({"bias": False}, 44_056_576, {"bias": False}, id="Transformer(bias=False)"),
    # torch 2.13 torch.nn.Transformer(1024, 16, 6, 6, 4096), meta device (the paper's "big" model)
    pytest.param(
        {"d_model": 1024, "n_heads": 16, "d_ff": 4096},
        176_361_472,
        {"d_model": 1024, "nhead": 16, "num_encoder_layers": 6, "num_decoder_layers": 6, "dim_feedforward": 4096},
        id="Transformer(1024,16,6,6,4096)",
    ),
]


@pytest.mark.parametrize("config, expected, torch_kwargs", TORCH_TRANSFORMERS)
def test_torch_transformer_params(config, expected, torch_kwargs):
    assert archzoo.count("transformer", **config).params == expected


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")  # batch_first=False; no bearing
@pytest.mark.parametrize("config, expected, torch_kwargs", TORCH_TRANSFORMERS)
def test_torch_transformer_params_reference(config, expected, torch_kwargs):
    assert n_params(on_meta("torch.nn.Transformer", **torch_kwargs)) == expected


# ---------------------------------------------------------------------------------------------------
# transformers: BERT family, GPT family, ViT
# ---------------------------------------------------------------------------------------------------

BERT_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)

# (archzoo architecture, archzoo config, literal, transformers model class, config class, config kwargs, model kwargs)
HF_PARAMS = [
    # transformers 5.23 BertModel(BertConfig()) (= bert-base-uncased), meta device
    pytest.param("bert", {}, 109_482_240, "BertModel", "BertConfig", {}, {}, id="bert-base"),
    # transformers 5.23 BertModel(BertConfig(), add_pooling_layer=False), meta device
    pytest.param(
        "bert",
        {"pooler": False},
        108_891_648,
        "BertModel",
        "BertConfig",
        {},
        {"add_pooling_layer": False},
        id="bert-base-no-pooler",
    ),
    # transformers 5.23 BertModel(BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
    # intermediate_size=4096)) (= bert-large-uncased), meta device
    pytest.param(
        "bert",
        {"d_model": 1024, "n_layers": 24, "n_heads": 16, "d_ff": 4096},
        335_141_888,
        "BertModel",
        "BertConfig",
        BERT_LARGE,
        {},
        id="bert-large",
    ),
    # transformers 5.23 BertForMaskedLM(BertConfig()), meta device (decoder weight and bias tied)
    pytest.param(
        "bert",
        {"head": "mlm", "pooler": False},
        109_514_298,
        "BertForMaskedLM",
        "BertConfig",
        {},
        {},
        id="bert-base-mlm",
    ),
    # transformers 5.23 BertForPreTraining(BertConfig()), meta device
    pytest.param(
        "bert",
        {"head": "pretraining"},
        110_106_428,
        "BertForPreTraining",
        "BertConfig",
        {},
        {},
        id="bert-base-pretraining",
    ),
    # transformers 5.23 RobertaModel(RobertaConfig(vocab_size=50265, max_position_embeddings=514,
    # type_vocab_size=1)) (= roberta-base), meta device
    pytest.param(
        "bert",
        {"vocab_size": 50265, "max_positions": 514, "type_vocab_size": 1},
        124_645_632,
        "RobertaModel",
        "RobertaConfig",
        {"vocab_size": 50265, "max_position_embeddings": 514, "type_vocab_size": 1},
        {},
        id="roberta-base",
    ),
    # transformers 5.23 DistilBertModel(DistilBertConfig()) (= distilbert-base-uncased), meta device
    pytest.param(
        "bert",
        {"type_vocab_size": 0, "pooler": False, "n_layers": 6},
        66_362_880,
        "DistilBertModel",
        "DistilBertConfig",
        {},
        {},
        id="distilbert-base",
    ),
    # transformers 5.23 GPT2Model(GPT2Config()) (= gpt2), meta device
    pytest.param("gpt", {"head": "none"}, 124_439_808, "GPT2Model", "GPT2Config", {}, {}, id="gpt2"),
    # transformers 5.23 GPT2Model(GPT2Config(n_embd=1024, n_layer=24, n_head=16)) (= gpt2-medium), meta device
    pytest.param(
        "gpt",
        {"head": "none", "d_model": 1024, "n_layers": 24, "n_heads": 16},
        354_823_168,
        "GPT2Model",
        "GPT2Config",
        {"n_embd": 1024, "n_layer": 24, "n_head": 16},
        {},
        id="gpt2-medium",
    ),
    # transformers 5.23 GPT2Model(GPT2Config(n_embd=1280, n_layer=36, n_head=20)) (= gpt2-large), meta device
    pytest.param(
        "gpt",
        {"head": "none", "d_model": 1280, "n_layers": 36, "n_heads": 20},
        774_030_080,
        "GPT2Model",
        "GPT2Config",
        {"n_embd": 1280, "n_layer": 36, "n_head": 20},
        {},
        id="gpt2-large",
    ),
    # transformers 5.23 GPT2Model(GPT2Config(n_embd=1600, n_layer=48, n_head=25)) (= gpt2-xl), meta device
    pytest.param(
        "gpt",
        {"head": "none", "d_model": 1600, "n_layers": 48, "n_heads": 25},
        1_557_611_200,
        "GPT2Model",
        "GPT2Config",
        {"n_embd": 1600, "n_layer": 48, "n_head": 25},
        {},
        id="gpt2-xl",
    ),
    # transformers 5.23 GPT2LMHeadModel(GPT2Config()), meta device: the LM head is tied, so the same count as gpt2
    pytest.param("gpt", {"head": "lm"}, 124_439_808, "GPT2LMHeadModel", "GPT2Config", {}, {}, id="gpt2-lm-head"),
    # transformers 5.23 GPT2LMHeadModel(GPT2Config(n_embd=1600, n_layer=48, n_head=25)), meta device
    pytest.param(
        "gpt",
        {"head": "lm", "d_model": 1600, "n_layers": 48, "n_heads": 25},
        1_557_611_200,
        "GPT2LMHeadModel",
        "GPT2Config",
        {"n_embd": 1600, "n_layer": 48, "n_head": 25},
        {},
        id="gpt2-xl-lm-head",
    ),
    # transformers 5.23 OpenAIGPTModel(OpenAIGPTConfig()) (= openai-gpt), meta device
    pytest.param(
        "gpt",
        {"vocab_size": 40478, "max_positions": 512, "final_norm": False, "activation": "gelu", "head": "none"},
        116_534_784,
        "OpenAIGPTModel",
        "OpenAIGPTConfig",
        {},
        {},
        id="openai-gpt",
    ),
    # transformers 5.23 ViTModel(ViTConfig()) (= google/vit-base-patch16-224 with its pooler), meta device
    pytest.param(
        "vit",
        {"num_classes": 0, "pooler": True},
        86_389_248,
        "ViTModel",
        "ViTConfig",
        {},
        {},
        id="vit-base-patch16-224",
    ),
    # transformers 5.23 ViTForImageClassification(ViTConfig(num_labels=1000)), meta device
    pytest.param(
        "vit",
        {"num_classes": 1000},
        86_567_656,
        "ViTForImageClassification",
        "ViTConfig",
        {"num_labels": 1000},
        {},
        id="vit-base-patch16-224-classifier",
    ),
]


@pytest.mark.parametrize("arch, config, expected, model_class, config_class, config_kwargs, model_kwargs", HF_PARAMS)
def test_transformers_params(arch, config, expected, model_class, config_class, config_kwargs, model_kwargs):
    assert archzoo.count(arch, **config).params == expected


@pytest.mark.reference
@pytest.mark.parametrize("arch, config, expected, model_class, config_class, config_kwargs, model_kwargs", HF_PARAMS)
def test_transformers_params_reference(arch, config, expected, model_class, config_class, config_kwargs, model_kwargs):
    model = hf_model(model_class, config_class, model_kwargs, **config_kwargs)
    assert n_params(model) == expected


def test_gpt2_lm_head_is_free_when_tied():
    """With tied embeddings the LM head adds no parameters, only FLOPs."""
    for size in (
        {},
        {"d_model": 1024, "n_layers": 24, "n_heads": 16},
        {"d_model": 1280, "n_layers": 36, "n_heads": 20},
        {"d_model": 1600, "n_layers": 48, "n_heads": 25},
    ):
        assert archzoo.count("gpt", head="lm", **size).params == archzoo.count("gpt", head="none", **size).params


# ---------------------------------------------------------------------------------------------------
# timm: pinned literals only (timm needs torchvision and is not installed; archzoo is compared alone)
# ---------------------------------------------------------------------------------------------------

TIMM = [
    # measured with timm 1.0: timm.create_model("vit_base_patch16_224", num_classes=5), meta device
    pytest.param({"num_classes": 5}, 85_802_501, id="vit_base_patch16_224-5"),
    # measured with timm 1.0: timm.create_model("vit_base_patch16_224", num_classes=1000), meta device
    pytest.param({"num_classes": 1000}, 86_567_656, id="vit_base_patch16_224-1000"),
    # measured with timm 1.0: timm.create_model("vit_huge_patch14_224", num_classes=5), meta device
    pytest.param(
        {"num_classes": 5, "patch_size": 14, "d_model": 1280, "n_layers": 32, "n_heads": 16, "d_ff": 5120},
        630_771_205,
        id="vit_huge_patch14_224-5",
    ),
    # measured with timm 1.0: timm.create_model("deit_base_distilled_patch16_224"), meta device
    pytest.param({"distillation_token": True}, 87_338_192, id="deit_base_distilled_patch16_224"),
]


@pytest.mark.parametrize("config, expected", TIMM)
def test_timm_params(config, expected):
    assert archzoo.count("vit", **config).params == expected


# ---------------------------------------------------------------------------------------------------
# FLOPs (FlopCounterMode, batch 1, eager attention)
# ---------------------------------------------------------------------------------------------------

# torch 2.13 TransformerEncoderLayer(512, 8), input (128, 1, 512), FlopCounterMode, eager forward
# (meta device, or CPU in train mode): the attention products are counted
ENCODER_LAYER_FLOPS_EAGER_N128 = 838_860_800
# torch 2.13 TransformerEncoderLayer(512, 8), input (128, 1, 512) real CPU tensors, eval mode, torch.no_grad():
# the fused inference fast path, whose SDPA attention products FlopCounterMode counts as zero
ENCODER_LAYER_FLOPS_FUSED_N128 = 805_306_368


def _encoder_layer_block():
    return find_block(archzoo.count("transformer", seq_len=128), ENCODER_LAYER_PATH)


def test_encoder_layer_flops():
    block = _encoder_layer_block()
    assert block.flops.evaluate(N=128) == ENCODER_LAYER_FLOPS_EAGER_N128
    # the fused kernel's figure is the eager one less the attention products
    assert block.flops.evaluate(N=128) - block.attention_flops.evaluate(N=128) == ENCODER_LAYER_FLOPS_FUSED_N128


@pytest.mark.reference
def test_encoder_layer_flops_eager_reference():
    torch = _torch()
    block = _encoder_layer_block()
    layer = on_meta("torch.nn.TransformerEncoderLayer", d_model=512, nhead=8)
    x = torch.zeros(128, 1, 512, device="meta")  # batch_first=False: (sequence, batch, d)
    measured = count_flops(layer, x)  # eval mode; the meta device never takes the fused path
    assert measured == ENCODER_LAYER_FLOPS_EAGER_N128
    assert measured == block.flops.evaluate(N=128)


@pytest.mark.reference
def test_encoder_layer_flops_eager_train_mode_reference():
    torch = _torch()
    # CPU, train mode with the default dropout 0.1: attention dropout keeps scaled_dot_product_attention on
    # its math path (bmm, counted). With dropout=0.0 even train mode picks the fused CPU kernel, and
    # FlopCounterMode reports the fused figure, ENCODER_LAYER_FLOPS_FUSED_N128.
    layer = torch.nn.TransformerEncoderLayer(512, 8)
    measured = count_flops(layer, torch.zeros(128, 1, 512), train=True)
    assert measured == ENCODER_LAYER_FLOPS_EAGER_N128
    assert measured == _encoder_layer_block().flops.evaluate(N=128)


@pytest.mark.reference
def test_encoder_layer_flops_fused_reference():
    torch = _torch()
    block = _encoder_layer_block()
    layer = torch.nn.TransformerEncoderLayer(512, 8)  # real CPU tensors
    measured = count_flops(layer, torch.zeros(128, 1, 512))  # eval mode under no_grad: the fused fast path
    assert measured == ENCODER_LAYER_FLOPS_FUSED_N128
    assert measured == block.flops.evaluate(N=128) - block.attention_flops.evaluate(N=128)


# (archzoo architecture, archzoo config, seq_len, literal, transformers model class, config class)
HF_FLOPS = [
    # transformers 5.23 BertModel(BertConfig()), eager attention, input_ids (1, 128), FlopCounterMode, meta device
    pytest.param("bert", {}, 128, 22_348_431_360, "BertModel", "BertConfig", id="bert-base-N128"),
    # transformers 5.23 BertModel(BertConfig()), eager attention, input_ids (1, 512), FlopCounterMode, meta device
    pytest.param("bert", {}, 512, 96_637_943_808, "BertModel", "BertConfig", id="bert-base-N512"),
    # transformers 5.23 GPT2Model(GPT2Config()), eager attention, input_ids (1, 1024), FlopCounterMode, meta device
    pytest.param("gpt", {"head": "none"}, 1024, 212_600_881_152, "GPT2Model", "GPT2Config", id="gpt2-N1024"),
    # transformers 5.23 GPT2LMHeadModel(GPT2Config()), eager attention, input_ids (1, 1024), FlopCounterMode, meta
    pytest.param(
        "gpt", {"head": "lm"}, 1024, 291_648_307_200, "GPT2LMHeadModel", "GPT2Config", id="gpt2-lm-head-N1024"
    ),
]


@pytest.mark.parametrize("arch, config, seq_len, expected, model_class, config_class", HF_FLOPS)
def test_transformers_flops(arch, config, seq_len, expected, model_class, config_class):
    report = archzoo.count(arch, seq_len=seq_len, **config)
    assert report.flops == expected
    assert report.flops_at(seq_len)[0] == expected


@pytest.mark.reference
@pytest.mark.parametrize("arch, config, seq_len, expected, model_class, config_class", HF_FLOPS)
def test_transformers_flops_reference(arch, config, seq_len, expected, model_class, config_class):
    model = hf_model(model_class, config_class)
    assert model.config._attn_implementation == "eager"
    assert count_flops(model, input_ids=token_ids(seq_len)) == expected
