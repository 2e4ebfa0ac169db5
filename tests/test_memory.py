"""Activation memory: the formula against what autograd saves, Korthikanti et al. 2022, and the peaks.

Expected figures come from the reference implementation: transformers' classes (5.23) built by
`archzoo.reference.build_reference` and run one training-mode forward pass under
``torch.autograd.graph.saved_tensors_hooks`` (`archzoo.memory.measure_activations`), at small random
configurations and several N. Korthikanti's figure is eq. 1 of Korthikanti et al. 2022 (arXiv:2205.05198).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import archzoo
from archzoo import Reference
from archzoo.formula import total

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.reference, pytest.mark.filterwarnings("ignore"), pytest.mark.sweep]

from archzoo.memory import (  # noqa: E402
    UnsupportedActivationMemory,
    activation_formula,
    inference_peak,
    korthikanti_gap,
    korthikanti_layer_bytes,
    measure_activations,
    memory_dict,
    memory_rows,
    training_peak,
)

#: the nn.ModuleList of layers in each reference class, for full recomputation
LAYER_LISTS = {
    "transformers.BertModel": ("encoder.layer",),
    "transformers.GPT2LMHeadModel": ("transformer.h",),
    "transformers.ViTForImageClassification": ("vit.layers",),
    "transformers.LlamaForCausalLM": ("model.layers",),
}


def _config(arch: str, seed: int) -> dict:
    rng = random.Random(seed)
    heads = rng.choice([2, 4])
    d = heads * rng.choice([4, 6, 8])
    layers = rng.choice([2, 3])
    if arch == "vit":
        patch = rng.choice([4, 8])
        return dict(
            image_size=patch * rng.choice([2, 3]), patch_size=patch, d_model=d, n_layers=layers, n_heads=heads,
            d_ff=rng.choice([24, 40]), num_classes=5,
        )  # fmt: skip
    config = dict(vocab_size=rng.choice([64, 97]), max_positions=32, d_model=d, n_layers=layers, n_heads=heads)
    if arch == "bert":
        config["d_ff"] = rng.choice([24, 40])
    if arch == "llama":
        config.update(d_ff=rng.choice([24, 40]), n_kv_heads=rng.choice([1, heads]))
    return config


def _report(arch: str, seed: int, seq_len: int) -> archzoo.Report:
    config = _config(arch, seed)
    return archzoo.count(arch, **config) if arch == "vit" else archzoo.count(arch, seq_len=seq_len, **config)


def _reference(report: archzoo.Report) -> Reference:
    assert report.architecture.reference is not None
    ref = report.architecture.reference(report.config)
    assert ref is not None
    return ref


def _config_of(report: archzoo.Report) -> Any:
    return report.config


CASES = [  # (dtype, attention, recompute, device)
    ("fp32", "eager", False, "meta"),
    ("bf16", "eager", False, "meta"),
    ("bf16", "eager", False, "cpu"),
    ("fp32", "fused", False, "cpu"),
    ("bf16", "fused", False, "cpu"),
    ("bf16", "eager", True, "meta"),
]


@pytest.mark.parametrize("arch", ["bert", "gpt", "vit", "llama"])
@pytest.mark.parametrize("seed, seq_len", [(1, 5), (2, 13)])
@pytest.mark.parametrize("dtype, attention, recompute, device", CASES)
def test_the_formula_is_what_autograd_saves_block_by_block(arch, seed, seq_len, dtype, attention, recompute, device):
    report = _report(arch, seed, seq_len)
    ref = _reference(report)
    measured = measure_activations(
        ref, report.seq_len, dtype=dtype, attention=attention, device=device,
        recompute=LAYER_LISTS[ref.target] if recompute else (),
    )  # fmt: skip
    formula = activation_formula(report, dtype=dtype, attention=attention, recompute=recompute, device=device)
    assert formula.bytes_at(report.seq_len) == measured.total_bytes
    by_block = measured.by_block(report.root)
    compared = {path: formula.per_copy.get(path, formula.blocks.get(path)) for path in by_block}
    assert {p: f.evaluate(N=report.seq_len) for p, f in compared.items() if f is not None} == {
        p: by_block[p] for p, f in compared.items() if f is not None
    }
    assert len([f for f in compared.values() if f is not None]) >= 6  # the layer's parts, the layer, the stack ...


def test_the_meta_device_saves_what_the_cpu_saves_in_fp32():
    report = _report("gpt", 3, 7)
    ref = _reference(report)
    on_meta, on_cpu = (measure_activations(ref, 7, device=device) for device in ("meta", "cpu"))
    assert [(s.module, s.shape, s.nbytes) for s in on_meta.saved] == [
        (s.module, s.shape, s.nbytes) for s in on_cpu.saved
    ]


def test_weights_are_not_activations():
    """Every linear layer saves its weight for the input's gradient: those saves are counted apart, not as bytes."""
    report = _report("bert", 1, 6)
    measured = measure_activations(_reference(report), 6)
    assert measured.parameter_saves >= 6 * _config_of(report).n_layers  # q, k, v, out, up, down in every layer
    assert all(s.shape != (_config_of(report).d_model, _config_of(report).d_model) for s in measured.saved)


def test_a_table_every_layer_reads_belongs_to_the_stack():
    """LLaMA's rotary cos and sin are computed once and saved by every layer's attention: one storage each."""
    report = _report("llama", 1, 9)
    measured = measure_activations(_reference(report), 9)
    shared = [s for s in measured.saved if s.module == "model.layers"]
    assert len(shared) == 2 and all(s.saves == 2 * _config_of(report).n_layers for s in shared)


@pytest.mark.parametrize("arch, recompute", [("llama", False), ("gpt", True)])
def test_one_layer_owns_what_a_stack_of_layers_shares(arch, recompute):
    """LLaMA's rotary table (and GPT-2's causal mask under recomputation) belongs to the stack when several layers
    save it, and to the one layer's attention (the layer) when there is one."""
    config = {**_config(arch, 10), "n_layers": 1}
    report = archzoo.count(arch, seq_len=6, **config)
    ref = _reference(report)
    measured = measure_activations(ref, 6, dtype="bf16", recompute=LAYER_LISTS[ref.target] if recompute else ())
    formula = activation_formula(report, dtype="bf16", recompute=recompute)
    for path, got in measured.by_block(report.root).items():
        assert formula.per_copy.get(path, formula.blocks[path]).evaluate(N=6) == got, path


# ---- refusals -----------------------------------------------------------------------------------


def test_an_implementation_the_formula_does_not_know_is_refused():
    with pytest.raises(UnsupportedActivationMemory, match=r"transformers\.MistralForCausalLM"):
        activation_formula(archzoo.count("llama", family="mistral", d_model=64, n_heads=4, n_layers=2, d_ff=96))
    with pytest.raises(UnsupportedActivationMemory, match="activation 'relu'"):
        activation_formula(archzoo.count("gpt", activation="relu", d_model=64, n_heads=4, n_layers=2))
    with pytest.raises(UnsupportedActivationMemory, match="math path"):
        activation_formula(archzoo.count("gpt", d_model=64, n_heads=4, n_layers=2), attention="fused")
    # what its head saves depends on how many end-of-sequence tokens the input holds, not on N
    with pytest.raises(UnsupportedActivationMemory, match=r"^t5: "):
        activation_formula(_t5_sequence_classifier())


def _t5_sequence_classifier():
    return archzoo.count("t5", d_model=64, n_heads=4, n_layers=2, d_ff=96, d_kv=16, head="sequence_classification")


# ---- Korthikanti et al. 2022 --------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["bert", "gpt", "vit", "llama"])
def test_korthikanti_plus_the_named_gap_is_the_exact_layer(arch):
    report = _report(arch, 4, 11)
    layer = activation_formula(report, dtype="bf16").per_copy[f"{report.root.name}.layers.layer"]
    gap = total(t.bytes for t in korthikanti_gap(report))
    assert (korthikanti_layer_bytes(report) + gap - layer).is_zero()
    N, d, h = report.seq_len, _config_of(report).d_model, _config_of(report).n_heads
    assert korthikanti_layer_bytes(report).evaluate(N=N) == 34 * N * d + 5 * h * N * N  # s b h (34 + 5 a s / h), b = 1


def _terms(report: archzoo.Report) -> dict[str, int]:
    return {t.name: t.bytes.evaluate(N=report.seq_len) for t in korthikanti_gap(report)}


def _bf16(report: archzoo.Report, **kwargs):
    return measure_activations(_reference(report), report.seq_len, dtype="bf16", **kwargs)


def test_gap_dropout_masks_and_dropout_output_appear_when_dropout_runs():
    """With dropout 0.1 GPT-2 saves, per layer, the attention mask and a separate dropout output (h·N² each), and
    the two residual masks (N·d each); here in bf16 (2 bytes), where Korthikanti's CUDA masks take 1 byte."""
    import archzoo.memory as memory

    report = _report("gpt", 5, 6)
    N, d, h, L = 6, _config_of(report).d_model, _config_of(report).n_heads, _config_of(report).n_layers
    plain = _bf16(report).total_bytes
    zero = memory._zero_dropout
    try:
        memory._zero_dropout = lambda ref: ref.model_copy(
            update={"kwargs": {**ref.kwargs, "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}}
        )
        with_dropout = _bf16(report).total_bytes
    finally:
        memory._zero_dropout = zero
    terms = _terms(report)
    assert terms["dropout masks"] == -(h * N * N + 2 * N * d) and terms["dropout output"] == -2 * h * N * N
    assert with_dropout - plain == 2 * (L * (2 * h * N * N + 2 * N * d) + N * d)  # + the embeddings' dropout


def test_gap_layernorm_statistics_are_two_fp32_numbers_a_token():
    report = _report("bert", 6, 9)
    stats = [s for s in _bf16(report).saved if "LayerNorm" in s.module and s.shape == (1, 9, 1)]
    per_layer = sum(s.nbytes for s in stats if ".layer.0." in s.module)
    assert all(s.dtype == "float32" for s in stats) and per_layer == _terms(report)["LayerNorm statistics"] == 16 * 9


def test_gap_softmax_in_fp32():
    report = _report("vit", 7, 0)
    h, N = _config_of(report).n_heads, report.seq_len
    fp32 = [s for s in _bf16(report).saved if ".layers.0.attention" in s.module and s.dtype == "float32"]
    assert sum(s.nbytes for s in fp32) == 4 * h * N * N == _terms(report)["fp32 softmax"]


def test_gap_gelu_new_saves_three_more_tensors():
    report = _report("gpt", 8, 7)
    act = [s for s in _bf16(report).saved if s.module.endswith("h.0.mlp.act")]
    d_ff = 4 * _config_of(report).d_model
    assert [s.shape for s in act] == [(1, 7, d_ff)] * 4  # the input, and three more
    assert 3 * act[0].nbytes == _terms(report)["gelu_new intermediates"]


def test_gap_gpt2_holds_its_fused_qkv_output():
    report = _report("gpt", 9, 7)
    d = _config_of(report).d_model
    attn = [s for s in _bf16(report).saved if s.module == "transformer.h.0.attn"]
    assert max(s.nbytes for s in attn) == 2 * 7 * 3 * d  # the c_attn output, held whole by the query's view
    assert _terms(report)["fused QKV output held"] == 4 * 7 * d


# ---- peaks --------------------------------------------------------------------------------------


def test_training_peak_adds_its_parts_with_their_assumptions():
    from archzoo.reference import reference_params

    report = archzoo.count("gpt", d_model=64, n_heads=4, n_layers=2, seq_len=16)
    params = reference_params(_reference(report))  # torch's count
    peak = training_peak(report)
    parts = {item.name: item.bytes for item in peak.items}
    assert parts["weights"] == 2 * params and parts["gradients"] == 2 * params
    assert parts["Adam m and v"] == 8 * params and parts["fp32 master weights"] == 4 * params
    assert parts["activations"] == activation_formula(report, dtype="bf16").bytes_at(16)
    assert peak.total == sum(parts.values()) and all(item.assumption for item in peak.items)
    assert "fp32 master weights" not in {i.name for i in training_peak(report, weights="fp32").items}


def test_inference_peak_counts_the_kv_cache_of_n_tokens():
    report = archzoo.count("llama", d_model=64, n_heads=4, n_kv_heads=2, n_layers=3, d_ff=96, seq_len=32)
    peak = inference_peak(report, dtype="bf16")
    kv = {i.name: i.bytes for i in peak.items}["KV cache"]
    assert kv == 2 * 3 * 2 * (2 * 16) * 32  # K and V, 3 layers, 2 heads of 16, 32 tokens, 2 bytes


@pytest.mark.parametrize(
    ("architecture", "options", "vocab", "d_ff"),
    [
        # vocabularies and widths from the configuration classes' defaults (DebertaV2Config, ModernBertConfig)
        ("deberta", dict(head="masked_lm"), 128_100, 3072),  # fc_in and fc_out sit in the layer itself
        ("modernbert", dict(head="masked_lm"), 50_368, 1152),  # the MLM logits come from a block named decoder
    ],
)
def test_inference_peak_reads_every_logits_and_feed_forward_block(architecture, options, vocab, d_ff):
    """The largest live activation weighs the masked-LM logits (N V) and the feed-forward's hidden tensors, whatever
    the blocks are named: it once read logits only off a block named lm_head and feed-forward widths only off
    feed_forward blocks, so DeBERTa's and ModernBERT's peaks at short N missed their N·V logits."""
    report = archzoo.count(architecture, seq_len=16, **options)
    largest = {i.name: i for i in inference_peak(report, dtype="bf16").items}["largest live activation"]
    assert f"the logits ({16 * vocab:,})" in largest.assumption, largest.assumption
    if architecture == "deberta":  # the intermediate's output and its GELU, N d_ff each
        assert f"hidden tensors ({2 * 16 * d_ff:,})" in largest.assumption, largest.assumption
    assert largest.bytes >= 2 * 16 * vocab


@pytest.mark.parametrize("head", ["model", "vision"])
def test_inference_peak_is_refused_where_layers_run_over_other_than_n_tokens(head):
    """CLIP's image tower runs over its 50 patches and class token whatever the caption's N: an estimate that
    reads every feed-forward as N tokens' worth once gave ViT-L/14@336 a 970.7 MB activation (the real largest
    tensors are its 577-token scores, about 22 MB). It is refused with the reason, not guessed."""
    report = archzoo.count("clip", head=head)
    with pytest.raises(UnsupportedActivationMemory, match="run over a number of tokens other than N"):
        inference_peak(report)


def test_the_summary_for_the_report_carries_every_figure_or_the_reason():
    report = archzoo.count("gpt", d_model=64, n_heads=4, n_layers=2, seq_len=16)
    data = memory_dict(report)
    assert data["activations"]["eager_bf16"]["bytes"] == activation_formula(report, dtype="bf16").bytes_at(16)
    assert data["activations"]["recompute_fp32"]["bytes"] == activation_formula(report, recompute=True).bytes_at(16)
    assert data["training_peak"]["total_bytes"] == training_peak(report).total
    assert data["korthikanti"]["bytes"] == 2 * (34 * 16 * 64 + 5 * 4 * 16**2)  # eq. 1 times L = 2 layers
    t5 = memory_dict(_t5_sequence_classifier())
    assert t5["activations"]["unsupported"].startswith("t5: ") and "training_peak" not in t5
    assert [label for label, _, _ in memory_rows(report)][:2] == ["inference peak (N=16)", "activations (N=16)"]


# ---- the hook: each family states what its layers save -----------------------------------------------------


def test_the_classes_the_formula_knows_are_the_ones_plugins_register(monkeypatch):
    """No list of classes in the core: a family without a registration (here GPT's, its plugin's hook answering
    nothing) is refused naming exactly the architectures the plugins registered saves for, and every registration
    names an architecture its plugin's host has."""
    from archzoo import memory
    from archzoo.host import get_host
    from archzoo.memory import registered_activation_saves

    registered = registered_activation_saves()
    assert {s.architecture for s in registered} <= set(get_host().architectures)
    architectures = ", ".join(sorted({s.architecture for s in registered}))
    monkeypatch.setattr(memory, "_family_saves", lambda report: ())
    with pytest.raises(UnsupportedActivationMemory) as refused:
        activation_formula(archzoo.count("gpt", d_model=64, n_heads=4, n_layers=2))
    assert f"archzoo knows the tensors saved for backward by the classes of {architectures} only;" in str(refused.value)


def test_a_plugin_that_registers_something_else_is_named():
    import types

    from archzoo import hookimpl
    from archzoo.errors import PluginError
    from archzoo.host import PluginHost
    from archzoo.memory import registered_activation_saves

    module = types.ModuleType("odd")
    module.register_activation_memory = hookimpl(lambda register: register({"classes": ["transformers.BertModel"]}))
    host = PluginHost(extra_plugins={"odd": module}).load()
    with pytest.raises(PluginError, match=r"^plugin 'odd': register_activation_memory registered dict, expected an "):
        registered_activation_saves(host)


@pytest.mark.parametrize("pooler_size", [None, 24])
def test_vit_model_with_its_pooler(pooler_size):
    """ViTModel with its dense + tanh pooler (the in21k checkpoints): the [CLS] view and tanh's output, at the
    pooler's own width."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(image_size=16, patch_size=8, d_model=16, n_layers=2, n_heads=2, d_ff=24, num_classes=0, pooler=True)
    for dtype in ("bf16", "fp32"):
        assert_activation_memory_matches("vit", {**config, "pooler_size": pooler_size}, dtype=dtype)


@pytest.mark.reference
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_llama_with_one_key_value_head_saves_the_keys_at_their_own_width(dtype):
    """With one key/value head, LLaMA's repeat_kv reshapes an expanded tensor whose repeated dimension has stride 0:
    a view, not a copy, so autograd saves the keys and values at h_kv d_h = d_h wide (measured by
    archzoo.memory.measure_activations; the formula once counted them at the queries' width)."""
    from archzoo.testing import assert_activation_memory_matches

    config = dict(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=1, d_ff=24)
    assert_activation_memory_matches("llama", config, 7, dtype=dtype)
