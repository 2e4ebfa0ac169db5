"""Building references from their description: a class a plugin defines is named by its dotted target.

The encoder-decoder plugin's reference with a vocabulary is its own ``Seq2SeqTransformer``. Its
parameters are checked here against the same parts put together from ``torch.nn`` in this test
(``nn.Transformer``, ``nn.Embedding``, ``nn.Linear``, tied as Vaswani et al. 2017, Sec. 3.4 ties them),
so the class is what its description says, independently of archzoo's counts.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from archzoo import Reference
from archzoo.host import PluginHost

_TRANSFORMER = dict(
    d_model=24, nhead=3, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=40, activation="relu", bias=True
)


def _torch_parts(vocab_size: int, share_embeddings: bool, tie_output: bool) -> int:
    """``sum(p.numel() for p in parameters())`` of torch.nn's parts, tied weights counted once."""
    torch = pytest.importorskip("torch")
    from torch import nn

    with torch.device("meta"):
        parts = nn.ModuleDict(
            {"transformer": nn.Transformer(**_TRANSFORMER), "source": nn.Embedding(vocab_size, _TRANSFORMER["d_model"])}
        )
        parts["target"] = parts["source"] if share_embeddings else nn.Embedding(vocab_size, _TRANSFORMER["d_model"])
        parts["projection"] = nn.Linear(_TRANSFORMER["d_model"], vocab_size, bias=False)
        if tie_output:
            parts["projection"].weight = parts["target"].weight
    return sum(p.numel() for p in parts.parameters())


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
@pytest.mark.parametrize("share_embeddings, tie_output", [(True, True), (False, True), (True, False), (False, False)])
def test_a_class_a_plugin_defines_is_built_from_its_dotted_target(share_embeddings, tie_output):
    from archzoo.reference import build_reference, reference_params

    ref = Reference(
        library="archzoo",
        target="archzoo_transformer.Seq2SeqTransformer",
        kwargs={**_TRANSFORMER, "vocab_size": 50, "share_embeddings": share_embeddings, "tie_output": tie_output},
        inputs="seq2seq_token_ids",
    )
    model = build_reference(ref)
    assert type(model).__name__ == "Seq2SeqTransformer" and type(model).__module__ == "archzoo_transformer"
    assert next(model.parameters()).device.type == "meta" and not model.training
    assert reference_params(ref) == _torch_parts(50, share_embeddings, tie_output)


def test_the_transformer_plugin_names_its_own_class():
    arch = PluginHost(only=["transformer"]).load().architecture("transformer")
    ref = arch.reference(arch.config_model(vocab_size=100))
    assert (ref.library, ref.target) == ("archzoo", "archzoo_transformer.Seq2SeqTransformer")
    assert "from archzoo_transformer import Seq2SeqTransformer\n" in ref.code()


def test_importing_the_plugin_and_describing_its_reference_needs_no_torch():
    code = (
        "import sys\n"
        "import archzoo_transformer, archzoo.reference\n"
        "cfg = archzoo_transformer.TransformerConfig(vocab_size=100)\n"
        "archzoo_transformer.ARCHITECTURE.reference(cfg).code()\n"
        "assert 'Seq2SeqTransformer' not in vars(archzoo_transformer)\n"
        "loaded = sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
def test_the_code_shown_for_the_reference_runs_and_prints_its_count():
    pytest.importorskip("torch")
    arch = PluginHost(only=["transformer"]).load().architecture("transformer")
    config = arch.config_model(
        d_model=24, n_heads=3, d_ff=40, n_encoder_layers=2, n_decoder_layers=1, vocab_size=50, share_embeddings=False
    )
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", arch.reference(config).code()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == _torch_parts(50, share_embeddings=False, tie_output=True)


@pytest.mark.reference
def test_a_cpu_reference_too_large_for_real_weights_is_refused_before_it_is_built():
    """Mixtral 8x7B's reference runs on the CPU (routing reads values): 46,702,792,704 parameters
    (MixtralForCausalLM, transformers 5.23, meta device) would need 187 GB, so it is refused, not allocated."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import archzoo
    from archzoo.errors import ArchzooError
    from archzoo.reference import MAX_CPU_PARAMS, reference_flops

    arch = archzoo.get_host().architecture("moe")
    ref = arch.reference(arch.config_model())
    assert ref.device == "cpu"
    with pytest.raises(ArchzooError, match=r"46,702,792,704 parameters, more than the 100,000,000 archzoo allocates"):
        reference_flops(ref, 4)
    assert MAX_CPU_PARAMS == 100_000_000


@pytest.mark.reference
def test_building_a_cpu_reference_leaves_the_callers_random_state_alone():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import archzoo
    from archzoo.reference import build_reference

    arch = archzoo.get_host().architecture("moe")
    small = arch.config_model(
        vocab_size=50,
        d_model=16,
        n_layers=1,
        n_heads=2,
        n_kv_heads=1,
        n_experts=2,
        top_k=1,
        d_ff_expert=8,
        max_positions=8,
    )
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_reference(arch.reference(small), "cpu")
    assert torch.equal(torch.rand(3), expected)


def test_a_training_steps_loss_is_the_sum_of_the_main_output():
    """logits where the class returns them; else every ``*_logits`` output (a pre-training head's two, question
    answering's start and end: what the class's own loss reads); else the last hidden state."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from transformers.modeling_outputs import BaseModelOutput, CausalLMOutput, QuestionAnsweringModelOutput

    from archzoo.reference import training_loss

    ones = torch.ones(2, 3)
    assert training_loss(CausalLMOutput(logits=ones, hidden_states=(3 * ones,))).item() == 6
    assert training_loss(QuestionAnsweringModelOutput(start_logits=ones, end_logits=2 * ones)).item() == 18
    assert training_loss(BaseModelOutput(last_hidden_state=5 * ones)).item() == 30
    assert training_loss(4 * ones).item() == 24


def test_a_training_step_loss_reads_no_router_logits_and_images_take_the_model_s_own_size():
    """A mixture of experts asked for its router logits returns them as a tuple, one tensor per layer: the loss is
    the last hidden state, as MixtralModel's own forward makes no loss of them. An image reference whose kwargs
    name no size runs at its configuration class's own (ViTConfig's 224 px, 3 channels), read off the model."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from archzoo.reference import build_reference, reference_inputs, training_loss

    config = transformers.MixtralConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, output_router_logits=True,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.MixtralModel(config)
    output = model(input_ids=torch.zeros(1, 4, dtype=torch.long))
    assert isinstance(output.router_logits, tuple)
    assert torch.equal(training_loss(output), output.last_hidden_state.sum())

    ref = Reference(
        library="transformers", target="transformers.ViTModel", config_class="transformers.ViTConfig",
        kwargs={"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16},
        inputs="image",
    )  # fmt: skip
    (pixels,), _ = reference_inputs(ref, 0, build_reference(ref))
    defaults = transformers.ViTConfig()
    assert tuple(pixels.shape) == (1, defaults.num_channels, defaults.image_size, defaults.image_size)


def test_a_plugin_names_its_own_inputs_and_the_forward_pass_takes_them(tmp_path, monkeypatch):
    """A family whose inputs are not token ids (Whisper's mel frames, CLIP's image and caption) names its own
    function in `Reference.inputs`. Expected: torch.nn.Linear(8, 3) on a (1, N, 8) input is 2·N·8·3 FLOPs
    (one matmul, FlopCounterMode's 2·m·n·k)."""
    from archzoo.reference import reference_flops

    (tmp_path / "own_inputs_plugin.py").write_text(
        "import torch\n\n"
        "def inputs(model, seq_len, device):\n"
        "    return (torch.zeros(1, seq_len, model.in_features, device=device),), {}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ref = Reference(
        library="torch",
        target="torch.nn.Linear",
        kwargs={"in_features": 8, "out_features": 3, "bias": False},
        inputs="own_inputs_plugin.inputs",
    )
    assert reference_flops(ref, 5) == 2 * 5 * 8 * 3


@pytest.mark.parametrize("inputs", ["", "whisper", "archzoo_whisper.", "a b.c", "1x.inputs"])
def test_inputs_that_are_neither_a_kind_nor_a_dotted_name_are_refused(inputs):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="inputs"):
        Reference(library="torch", target="torch.nn.Linear", inputs=inputs)
