"""Every plugin against its reference implementation, over a spread of small configurations.

For each configuration, ``report.architecture.reference(report.config)`` names the real module
(torch.nn.Transformer, a transformers model, or archzoo's own torch.nn.Transformer wrapper); it is built
on the meta device by ``archzoo.reference`` and its parameter count and forward FLOPs must equal
archzoo's exactly. The configurations are deliberately not the defaults: odd widths (d_model 96 with
3 heads), one to three layers, biases off, custom vocabularies, and every plugin option that has a
reference. Models are tiny and live on the meta device, so the whole file runs in seconds.

These tests are marked ``reference`` and run whenever torch and transformers are installed (the
``verify`` extra); they are skipped only when one of them is missing.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import archzoo
from archzoo.host import get_host

#: sequence lengths the FLOPs are checked at (token models; a ViT's length is fixed by its image)
SEQ_LENS = (7, 16)

# torch.nn.Transformer warns on construction that its nested-tensor fast path is off (batch_first=False);
# it has no bearing on a count.
pytestmark = [pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning"), pytest.mark.sweep]

# Small building-block sizes shared by the cases below.
BERT = dict(vocab_size=97, d_model=96, n_heads=3, n_layers=2, d_ff=160, max_positions=40)
ALBERT = dict(BERT, n_layers=3, embedding_size=32, shared_layers=True)
GPT = dict(vocab_size=101, max_positions=32, d_model=96, n_heads=3, n_layers=2)
VIT = dict(image_size=32, patch_size=8, d_model=96, n_heads=3, n_layers=2, d_ff=160)
TRANSFORMER = dict(d_model=96, n_heads=3, d_ff=160, n_encoder_layers=2, n_decoder_layers=2)

CASES = [
    # ---- bert: BertModel / BertForMaskedLM / BertForPreTraining / DistilBert* / Albert* ----------------
    pytest.param("bert", dict(BERT), id="bert-pooler"),
    pytest.param("bert", dict(BERT, pooler=False), id="bert-no-pooler"),
    pytest.param("bert", dict(BERT, n_layers=1, type_vocab_size=1), id="bert-1-layer-type-vocab-1"),
    pytest.param("bert", dict(BERT, n_layers=3, type_vocab_size=3), id="bert-3-layers-type-vocab-3"),
    pytest.param("bert", dict(BERT, activation="relu", n_heads=1), id="bert-relu-1-head"),
    pytest.param("bert", dict(BERT, head="mlm", pooler=False), id="bert-mlm"),
    pytest.param("bert", dict(BERT, head="mlm", pooler=False, type_vocab_size=3), id="bert-mlm-type-vocab-3"),
    pytest.param("bert", dict(BERT, head="pretraining"), id="bert-pretraining"),
    pytest.param(
        "bert",
        dict(BERT, head="pretraining", type_vocab_size=1, activation="silu"),
        id="bert-pretraining-type-vocab-1-silu",
    ),
    pytest.param("bert", dict(BERT, type_vocab_size=0, pooler=False), id="distilbert"),
    pytest.param(
        "bert", dict(BERT, type_vocab_size=0, pooler=False, n_layers=1, activation="relu"), id="distilbert-1-layer-relu"
    ),
    pytest.param("bert", dict(BERT, type_vocab_size=0, pooler=False, head="mlm"), id="distilbert-mlm"),
    pytest.param("bert", dict(ALBERT), id="albert"),
    pytest.param(
        "bert", dict(ALBERT, n_layers=1, type_vocab_size=1, activation="gelu_new"), id="albert-1-layer-type-vocab-1"
    ),
    pytest.param("bert", dict(ALBERT, type_vocab_size=3, embedding_size=128), id="albert-wide-embeddings"),
    pytest.param("bert", dict(ALBERT, head="mlm", pooler=False), id="albert-mlm"),
    pytest.param("bert", dict(ALBERT, head="pretraining"), id="albert-pretraining"),
    pytest.param("bert", dict(ALBERT, pooler=False), id="albert-no-pooler"),
    # ---- gpt: GPT2Model / GPT2LMHeadModel / OpenAIGPTModel / OpenAIGPTLMHeadModel ----------------------
    pytest.param("gpt", dict(GPT), id="gpt2-lm"),
    pytest.param("gpt", dict(GPT, head="none"), id="gpt2-no-head"),
    pytest.param("gpt", dict(GPT, n_layers=1, d_ff=200), id="gpt2-1-layer-d_ff"),
    pytest.param("gpt", dict(GPT, tie_embeddings=False), id="gpt2-untied"),
    pytest.param(
        "gpt",
        dict(GPT, tie_embeddings=False, head="none", activation="gelu_pytorch_tanh"),
        id="gpt2-untied-no-head-gelu-tanh",
    ),
    pytest.param("gpt", dict(GPT, d_head=32), id="gpt2-explicit-d_head"),
    pytest.param("gpt", dict(GPT, n_layers=3, head="none", activation="relu"), id="gpt2-3-layers-relu"),
    pytest.param("gpt", dict(GPT, activation="quick_gelu", n_heads=1), id="gpt2-quick-gelu-1-head"),
    pytest.param("gpt", dict(GPT, n_layers=3, d_ff=64, activation="tanh"), id="gpt2-narrow-mlp-tanh"),
    pytest.param("gpt", dict(GPT, final_norm=False, activation="gelu", head="none"), id="openai-gpt-no-head"),
    pytest.param("gpt", dict(GPT, final_norm=False, activation="gelu"), id="openai-gpt-lm"),
    pytest.param(
        "gpt", dict(GPT, final_norm=False, activation="relu", tie_embeddings=False), id="openai-gpt-untied-relu"
    ),
    pytest.param(
        "gpt", dict(GPT, final_norm=False, activation="silu", head="none", d_ff=384), id="openai-gpt-silu-d_ff-4d"
    ),
    # ---- vit: ViTModel / ViTForImageClassification / DeiTModel / DeiTForImageClassificationWithTeacher --
    pytest.param("vit", dict(VIT, num_classes=10), id="vit-10-classes"),
    pytest.param("vit", dict(VIT, num_classes=0, patch_size=4, n_layers=1), id="vit-patch4-no-head"),
    pytest.param("vit", dict(VIT, num_classes=0, patch_size=16, pooler=True), id="vit-patch16-pooler"),
    pytest.param("vit", dict(VIT, num_classes=10, patch_size=32, n_layers=1), id="vit-one-patch"),
    pytest.param(
        "vit", dict(VIT, num_classes=10, image_size=30, patch_size=10, activation="gelu_new"), id="vit-30px-patch10"
    ),
    pytest.param("vit", dict(VIT, num_classes=10, qkv_bias=False), id="vit-no-qkv-bias"),
    pytest.param("vit", dict(VIT, num_classes=10, distillation_token=True), id="deit-10-classes"),
    pytest.param("vit", dict(VIT, num_classes=0, distillation_token=True), id="deit-no-head"),
    pytest.param("vit", dict(VIT, num_classes=0, distillation_token=True, pooler=True), id="deit-pooler"),
    pytest.param(
        "vit",
        dict(VIT, num_classes=10, channels=1, distillation_token=True, qkv_bias=False, n_layers=1),
        id="deit-1-channel-no-qkv-bias",
    ),
    pytest.param(
        "vit",
        dict(
            image_size=28,
            patch_size=7,
            channels=1,
            d_model=64,
            n_heads=4,
            n_layers=3,
            d_ff=128,
            num_classes=10,
            activation="relu",
        ),
        id="vit-mnist-like",
    ),
    # ---- transformer: torch.nn.Transformer, and archzoo's Seq2SeqTransformer wrapper with embeddings ---
    pytest.param("transformer", dict(TRANSFORMER, n_decoder_layers=1), id="transformer-2-1"),
    pytest.param(
        "transformer",
        dict(TRANSFORMER, n_encoder_layers=1, n_decoder_layers=3, bias=False),
        id="transformer-1-3-no-bias",
    ),
    pytest.param(
        "transformer",
        dict(TRANSFORMER, n_encoder_layers=1, n_decoder_layers=1, activation="gelu"),
        id="transformer-gelu",
    ),
    pytest.param("transformer", dict(TRANSFORMER, vocab_size=101), id="transformer-vocab-shared-tied"),
    pytest.param(
        "transformer", dict(TRANSFORMER, vocab_size=101, share_embeddings=False), id="transformer-vocab-separate-tied"
    ),
    pytest.param(
        "transformer", dict(TRANSFORMER, vocab_size=101, tie_output=False), id="transformer-vocab-shared-untied"
    ),
    pytest.param(
        "transformer",
        dict(TRANSFORMER, vocab_size=101, share_embeddings=False, tie_output=False, bias=False),
        id="transformer-vocab-separate-untied-no-bias",
    ),
    pytest.param(
        "transformer",
        dict(
            TRANSFORMER,
            n_heads=1,
            d_ff=64,
            n_encoder_layers=3,
            n_decoder_layers=1,
            vocab_size=50,
            bias=False,
            activation="gelu",
            share_embeddings=False,
        ),
        id="transformer-3-1-1-head-vocab-gelu",
    ),
]


@pytest.fixture
def measure():
    """``archzoo.reference``'s measuring functions; skips only when torch or transformers is missing."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from archzoo.reference import reference_flops, reference_params

    return reference_params, reference_flops


def _reference(arch: str, config: dict):
    report = archzoo.count(arch, **config)
    ref = report.architecture.reference(report.config)
    assert ref is not None, f"{arch} {config}: chosen as a configuration with a reference, but reference() is None"
    return report, ref


def _seq_lens(arch: str, report) -> tuple[int, ...]:
    return (report.seq_len,) if arch == "vit" else SEQ_LENS


@pytest.mark.reference
@pytest.mark.parametrize("arch, config", CASES)
def test_params_match_reference(arch, config, measure):
    reference_params, _ = measure
    report, ref = _reference(arch, config)
    measured = reference_params(ref)
    assert report.params == measured, (
        f"{arch} {config}: archzoo {report.params:,} params, {ref.target} {measured:,} "
        f"(archzoo - reference = {report.params - measured:+,})"
    )


@pytest.mark.reference
@pytest.mark.parametrize("arch, config", CASES)
def test_flops_match_reference(arch, config, measure):
    _, reference_flops = measure
    report, ref = _reference(arch, config)
    for n in _seq_lens(arch, report):
        at_n = report if arch == "vit" else archzoo.count(arch, seq_len=n, **config)
        assert at_n.seq_len == n
        measured = reference_flops(ref, n)
        assert at_n.flops == measured, (
            f"{arch} {config} at N={n}: archzoo {at_n.flops:,} FLOPs, {ref.target} {measured:,} "
            f"(archzoo - reference = {at_n.flops - measured:+,})"
        )
        assert at_n.flops_at(n)[0] == measured


def test_vit_sequence_length_is_the_token_count():
    """The ViT cases above measure at report.seq_len: patches, plus the class and distillation tokens."""
    assert archzoo.count("vit", **VIT).seq_len == (32 // 8) ** 2 + 1
    assert archzoo.count("vit", **dict(VIT, distillation_token=True)).seq_len == (32 // 8) ** 2 + 2


def test_no_reference_where_the_reference_cannot_express_the_config():
    """Configs no reference module builds get None, never a reference that would crash or miscount."""
    # AlbertForMaskedLM has no pooler; transformers' OpenAI GPT accepts only relu, silu, gelu and swish.
    for arch, config in [("bert", dict(ALBERT, head="mlm", pooler=True)), ("gpt", dict(GPT, final_norm=False))]:
        report = archzoo.count(arch, **config)
        assert report.architecture.reference(report.config) is None


# ---- counting needs no torch ----------------------------------------------------------------------


@pytest.mark.parametrize("arch", sorted(get_host().architectures))
def test_count_imports_no_torch(arch):
    """Counting, the report's dict and the reference's description never import torch or transformers."""
    code = (
        "import archzoo, sys\n"
        f"report = archzoo.count({arch!r})\n"
        "report.params, report.flops, report.to_dict()\n"
        "report.architecture.reference(report.config).code()\n"
        "import archzoo.reference\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers', 'timm'})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_count_bert_imports_no_torch_as_documented():
    """The exact one-liner from the documentation."""
    result = subprocess.run(
        [sys.executable, "-c", "import archzoo,sys; archzoo.count('bert'); assert 'torch' not in sys.modules"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
