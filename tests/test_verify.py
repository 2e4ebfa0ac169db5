"""archzoo verify: an entry checked against its real implementation, in total and block by block.

Every expected figure here is read off a reference module built in this file on the meta device (the
parameters under a submodule, each tensor counted once where ``named_parameters()`` first reports it, as
``model.parameters()`` does), or, for timm, off the count pinned in the entry. archzoo's own numbers are
only ever the side being checked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import PositiveInt

from archzoo import ArchConfig, Architecture, Reference, hookimpl
from archzoo.blocks import composite, linear, with_modules
from archzoo.errors import ArchzooError, RegistryError, UnknownModelError
from archzoo.host import PluginHost, get_host
from archzoo.registry import load_registry
from archzoo.symbols import symbol
from archzoo.testing import build_model
from archzoo.verify import verify, verify_target
from fast_subset import examples
from shipped import shipped_registry

pytestmark = pytest.mark.sweep

ROOT = Path(__file__).resolve().parents[1]
REGISTRY_DIR = ROOT / "registry"
REGISTRY = shipped_registry()

#: the kinds of block whose inner parts are left unmapped: the reference fuses or renames the projections
#: (GPT-2's c_attn, torch's in_proj_weight), and a masked-LM head's decoder bias is one tensor under two
#: names, so the attention, feed-forward or head block is the finest row
#: a run of a layer_runs stack holds some layers of the shared ModuleList, so no one module holds just the run: the
#: run's layer is mapped to the list instead, copy by copy at the run's positions
INNER_UNMAPPED = {"self_attention", "cross_attention", "feed_forward", "head", "layer_runs"}


def _has_reference(entry) -> bool:
    own = entry.spec.reference
    if own is not None:
        return own.library in ("torch", "transformers")
    return entry.architecture.reference is not None and entry.architecture.reference(entry.config) is not None


BUILDABLE_IDS = [e.id for e in REGISTRY if _has_reference(e)]
TIMM_IDS = [e.id for e in REGISTRY if e.spec.reference is not None and e.spec.reference.library == "timm"]
UNBUILDABLE_IDS = [e.id for e in REGISTRY if e.id not in BUILDABLE_IDS and e.id not in TIMM_IDS]


# ---- the reference, built here -------------------------------------------------------------------


def _build(target: str, config_class: str | None, kwargs: dict, model_kwargs: dict | None = None):
    """The module on the meta device: ``target(config_class(**kwargs), **model_kwargs)`` or ``target(**kwargs)``."""
    pytest.importorskip("torch")
    library = "transformers" if target.startswith("transformers.") else "torch"
    if library == "transformers":
        pytest.importorskip("transformers")
    reference = Reference(
        library=library, target=target, config_class=config_class, kwargs=kwargs, model_kwargs=model_kwargs or {}
    )
    return build_model(reference)


def _reference_of(entry):
    """The module the entry names in 'reference:', else the one its plugin names for its configuration."""
    ref = entry.spec.reference or entry.architecture.reference(entry.config)
    return _build(ref.target, ref.config_class, ref.kwargs, ref.model_kwargs)


def _held(model, names) -> int:
    """Parameters under the named submodules or parameters, each tensor once, where PyTorch first reports it."""
    first_name = {}
    for name, parameter in model.named_parameters():
        first_name.setdefault(id(parameter), name)
    counted = {}
    for name in names:
        if name == "":
            tensors = list(model.parameters())
        else:
            try:
                tensors = list(model.get_submodule(name).parameters())
            except AttributeError:
                tensors = [model.get_parameter(name)]
        for tensor in tensors:
            where = first_name[id(tensor)]
            if name == "" or where == name or where.startswith(name + "."):
                counted[id(tensor)] = tensor.numel()
    return sum(counted.values())


def _positions(root, path: str) -> tuple[int, ...]:
    """The stack positions of the copies of the block at ``path``: those of the run of a `layer_runs` stack it is
    in (Gemma's sliding and global layers share one ModuleList), else none (copy i is the list's layer i)."""
    runs = {p: block.positions for p, _, block in root.walk() if block.positions}
    enclosing = [p for p in runs if path.startswith(p + ".")]
    return runs[max(enclosing, key=len)] if enclosing else ()


def _check_against(model, verification, root=None) -> None:
    """Every row of ``verification`` holds what the model's submodules hold, copy by copy, and matches."""
    assert verification.expected_total == sum(p.numel() for p in model.parameters())
    for row in verification.blocks:
        positions = _positions(root, row.path) if root is not None else ()
        for i in range(row.copies):
            index = positions[i] if positions else i
            names = [m.replace("<i>", str(index)) for m in row.modules]
            assert _held(model, names) == row.got, f"{row.path} copy {i}: {names}"
        assert row.ok and row.expected == row.got, row


# ---- every shipped entry --------------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
@pytest.mark.parametrize("model_id", BUILDABLE_IDS)
def test_shipped_entry_verifies_in_total_and_block_by_block(model_id):
    entry = REGISTRY.get_model(model_id)
    verification = verify(entry)
    model = _reference_of(entry)
    assert verification.ok, verification.render()
    assert verification.got_total == entry.params
    _check_against(model, verification, entry.report.root)
    mapped = {row.path for row in verification.blocks}
    # a block without parameters (CLIP's similarity product) holds no tensor to map
    top_level = [path for path, depth, block in entry.report.root.walk() if depth <= 1 and block.params.evaluate()]
    assert set(top_level) <= mapped, f"top-level blocks not mapped: {sorted(set(top_level) - mapped)}"
    kinds = {path: block.kind for path, _, block in entry.report.root.walk()}
    holds = {path: block.params.evaluate() for path, _, block in entry.report.root.walk()}
    for path, within in verification.unmapped:
        if holds.get(path) == 0:
            continue  # no tensor to map
        assert kinds.get(within) in INNER_UNMAPPED, f"{path} is not mapped (inside {within or 'nothing'})"
    # a layer row: the block directly under a repeat (a stack, or a run of a layer_runs stack)
    under_repeat = {f"{p}.{block.children[0].name}" for p, _, block in entry.report.root.walk() if block.repeat}
    repeated = [row for row in verification.blocks if row.path in under_repeat]
    assert repeated, "a layer row"
    assert verification.render().splitlines()[-1] == (
        f"match: the total and {len(verification.blocks)} blocks agree with {verification.target}"
    )


@pytest.mark.parametrize("model_id", TIMM_IDS)
def test_timm_entry_compares_its_total_with_the_pinned_count(model_id):
    entry = REGISTRY.get_model(model_id)
    pinned = yaml.safe_load(entry.path.read_text())["reference"]  # measured with timm, as the entry says
    verification = verify(entry)
    assert verification.pinned and verification.blocks == ()
    assert verification.expected_total == pinned["measured"]
    assert verification.ok
    text = verification.render()
    assert (
        f"timm is not installable here (it needs torchvision), so the count pinned in the entry, "
        f"{pinned['measured']:,}, measured with {pinned['measured_with']}, stands in for building "
        f"{pinned['target']}" in text
    )
    assert "blocks: none compared" in text
    assert verification.to_json()["reference"]["measured_with"] == pinned["measured_with"]


@pytest.mark.parametrize("model_id", UNBUILDABLE_IDS)
def test_entry_without_any_reference_says_so(model_id):
    entry = REGISTRY.get_model(model_id)
    with pytest.raises(
        ArchzooError,
        match=(
            rf"^{entry.path}: no reference implementation to verify '{model_id}' against: the entry has no "
            rf"'reference:' and the {entry.spec.architecture} plugin gives none for this configuration; if a "
            r"torch or transformers class builds it, name that class in 'reference:' \(`archzoo schema` shows "
            rf"the keys\), otherwise check the count against its formula in `archzoo show {model_id}`$"
        ),
    ):
        verify(entry)


# ---- every reference class the built-in plugins produce -------------------------------------------

_BERT = dict(vocab_size=100, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_positions=16)
_ALBERT = dict(_BERT, embedding_size=16, shared_layers=True)
_DISTILBERT = dict(_BERT, type_vocab_size=0)
_GPT = dict(vocab_size=100, d_model=32, n_layers=2, n_heads=2, max_positions=16)
_GPT1 = dict(_GPT, final_norm=False, activation="gelu")
_VIT = dict(image_size=32, patch_size=8, d_model=32, n_layers=2, n_heads=2, d_ff=64, num_classes=10)
_TRANSFORMER = dict(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=1)

#: (the class the plugin's reference names, architecture, configuration): one small model per class
CLASSES = [
    ("BertModel", "bert", _BERT),
    ("BertForMaskedLM", "bert", dict(_BERT, head="mlm")),
    ("BertForMaskedLM", "bert", dict(_BERT, head="mlm", tie_embeddings=False)),
    ("BertForPreTraining", "bert", dict(_BERT, head="pretraining")),
    ("BertForNextSentencePrediction", "bert", dict(_BERT, head="next_sentence")),
    ("BertForSequenceClassification", "bert", dict(_BERT, head="sequence_classification", num_labels=3)),
    ("BertForTokenClassification", "bert", dict(_BERT, head="token_classification")),
    ("BertForQuestionAnswering", "bert", dict(_BERT, head="question_answering")),
    ("RobertaModel", "bert", dict(_BERT, classifier_dense=True)),
    ("RobertaForMaskedLM", "bert", dict(_BERT, classifier_dense=True, head="mlm")),
    ("RobertaForSequenceClassification", "bert", dict(_BERT, classifier_dense=True, head="sequence_classification")),
    ("RobertaForTokenClassification", "bert", dict(_BERT, classifier_dense=True, head="token_classification")),
    ("RobertaForQuestionAnswering", "bert", dict(_BERT, classifier_dense=True, head="question_answering")),
    ("DistilBertModel", "bert", _DISTILBERT),
    ("DistilBertForMaskedLM", "bert", dict(_DISTILBERT, head="mlm")),
    ("DistilBertForMaskedLM", "bert", dict(_DISTILBERT, head="mlm", tie_embeddings=False)),
    (
        "DistilBertForSequenceClassification",
        "bert",
        dict(_DISTILBERT, classifier_dense=True, head="sequence_classification"),
    ),
    ("DistilBertForTokenClassification", "bert", dict(_DISTILBERT, head="token_classification")),
    ("DistilBertForQuestionAnswering", "bert", dict(_DISTILBERT, head="question_answering")),
    ("AlbertModel", "bert", _ALBERT),
    ("AlbertForMaskedLM", "bert", dict(_ALBERT, head="mlm")),
    ("AlbertForPreTraining", "bert", dict(_ALBERT, head="pretraining", num_labels=3)),
    ("AlbertForSequenceClassification", "bert", dict(_ALBERT, head="sequence_classification")),
    ("AlbertForTokenClassification", "bert", dict(_ALBERT, head="token_classification")),
    ("AlbertForQuestionAnswering", "bert", dict(_ALBERT, head="question_answering")),
    ("GPT2LMHeadModel", "gpt", _GPT),
    ("GPT2LMHeadModel", "gpt", dict(_GPT, tie_embeddings=False)),
    ("GPT2Model", "gpt", dict(_GPT, head="none")),
    ("GPT2ForSequenceClassification", "gpt", dict(_GPT, head="sequence_classification", num_labels=3)),
    ("GPT2ForTokenClassification", "gpt", dict(_GPT, head="token_classification")),
    ("GPT2ForQuestionAnswering", "gpt", dict(_GPT, head="question_answering")),
    ("OpenAIGPTLMHeadModel", "gpt", _GPT1),
    ("OpenAIGPTModel", "gpt", dict(_GPT1, head="none")),
    ("OpenAIGPTForSequenceClassification", "gpt", dict(_GPT1, head="sequence_classification")),
    ("ViTForImageClassification", "vit", _VIT),
    ("ViTModel", "vit", dict(_VIT, num_classes=0, pooler=True)),
    ("ViTModel", "vit", dict(_VIT, num_classes=0)),
    ("ViTModel", "vit", dict(_VIT, num_classes=0, pooler=True, pooler_size=8)),
    ("DeiTForImageClassificationWithTeacher", "vit", dict(_VIT, distillation_token=True)),
    ("DeiTForImageClassification", "vit", dict(_VIT, distillation_token=True, distillation_head=False)),
    ("DeiTModel", "vit", dict(_VIT, distillation_token=True, num_classes=0, pooler=True)),
    ("torch.nn.Transformer", "transformer", _TRANSFORMER),
    ("torch.nn.Transformer", "transformer", dict(_TRANSFORMER, bias=False)),
    ("Seq2SeqTransformer", "transformer", dict(_TRANSFORMER, vocab_size=50)),
    ("Seq2SeqTransformer", "transformer", dict(_TRANSFORMER, vocab_size=50, share_embeddings=False)),
    ("Seq2SeqTransformer", "transformer", dict(_TRANSFORMER, vocab_size=50, share_embeddings=False, tie_output=False)),
]


def _write_entry(folder: Path, name: str, architecture: str, config: dict, **extra) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            dict(
                architecture=architecture,
                title="A test entry",
                summary="A configuration written by the test suite.",
                year=2020,
                config=config,
                **extra,
            ),
            sort_keys=False,
        )
    )
    return path


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")
@pytest.mark.parametrize(
    ("cls", "architecture", "config"), CLASSES, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(CLASSES)]
)
def test_every_reference_class_of_the_plugins_verifies_block_by_block(tmp_path, cls, architecture, config):
    path = _write_entry(tmp_path, "small", architecture, config)
    verification = verify_target(str(path))
    assert verification.target.rpartition(".")[2] == cls.rpartition(".")[2]
    ref = (
        get_host()
        .architecture(architecture)
        .reference(get_host().architecture(architecture).config_model.model_validate(config))
    )
    _check_against(_build(ref.target, ref.config_class, ref.kwargs, ref.model_kwargs), verification)
    assert verification.ok, verification.render()
    assert not verification.notes
    kinds = {p: b.kind for p, _, b in load_registry([path]).get_model("small").report.root.walk()}
    assert all(kinds.get(within) in INNER_UNMAPPED for _, within in verification.unmapped), verification.unmapped


# ---- an entry that disagrees with its reference -----------------------------------------------------

#: BERT-base as archzoo counts it, against a reference whose kwargs say d_ff 2048 and 3 segment types
WRONG_REFERENCE = dict(
    target="transformers.BertModel",
    config_class="transformers.BertConfig",
    kwargs={"intermediate_size": 2048, "type_vocab_size": 3},
)


@pytest.mark.reference
def test_a_reference_that_disagrees_is_reported_block_by_block(tmp_path):
    path = _write_entry(tmp_path, "bert-disagrees", "bert", {}, reference=WRONG_REFERENCE)
    verification = verify_target(str(path))
    assert not verification.ok
    built = _build("transformers.BertModel", "transformers.BertConfig", WRONG_REFERENCE["kwargs"])
    default = _build("transformers.BertModel", "transformers.BertConfig", {})  # what the config {} describes
    rows = {row.path: row for row in verification.blocks}

    feed_forward = ["encoder.layer.0.intermediate", "encoder.layer.0.output.dense"]
    row = rows["bert.layers.layer.feed_forward"]
    assert (row.expected, row.got) == (_held(built, feed_forward), _held(default, feed_forward))
    assert row.difference == _held(default, feed_forward) - _held(built, feed_forward) != 0
    assert row.copies == 12 and row.mismatched_copies == () and not row.ok

    segment = rows["bert.embeddings.segment"]
    assert (segment.expected, segment.got) == (
        _held(built, ["embeddings.token_type_embeddings"]),
        _held(default, ["embeddings.token_type_embeddings"]),
    )
    for same in ("bert.embeddings.token", "bert.layers.layer.attention", "bert.pooler"):
        assert rows[same].ok
    assert verification.expected_total == sum(p.numel() for p in built.parameters())
    assert verification.got_total == sum(p.numel() for p in default.parameters())

    text = verification.render()
    ff_line = next(line for line in text.splitlines() if line.startswith("bert.layers.layer.feed_forward"))
    assert f"{row.expected:,}" in ff_line and f"{row.got:,}" in ff_line and f"{row.difference:+,}" in ff_line
    assert text.splitlines()[-1] == (
        "DIFFERS from transformers.BertModel: the total, bert, bert.embeddings, bert.embeddings.segment, "
        "bert.layers, bert.layers.layer, bert.layers.layer.feed_forward"
    )
    data = json.loads(json.dumps(verification.to_json()))
    assert data["ok"] is False and data["total"]["match"] is False
    ff = next(b for b in data["blocks"] if b["block"] == "bert.layers.layer.feed_forward")
    assert ff["difference"] == row.difference and ff["match"] is False


@pytest.mark.reference
def test_a_reference_class_without_the_mapped_submodules_is_compared_in_total_only(tmp_path):
    # BERT-base's blocks are mapped to BertModel; DistilBertModel names its layers otherwise
    reference = dict(target="transformers.DistilBertModel", config_class="transformers.DistilBertConfig", kwargs={})
    path = _write_entry(tmp_path, "bert-as-distilbert", "bert", {}, reference=reference)
    verification = verify_target(str(path))
    built = _build(reference["target"], reference["config_class"], {})
    assert verification.expected_total == sum(p.numel() for p in built.parameters())
    assert verification.blocks == () and not verification.ok
    assert verification.notes == (
        "the bert plugin maps its blocks to the submodules of transformers.BertModel; "
        "transformers.DistilBertModel lacks some of them, so only the total is compared",
    )
    blocks = [block_path for block_path, _, _ in load_registry([path]).get_model(path.stem).report.root.walk()]
    assert [block_path for block_path, _ in verification.unmapped] == blocks


# ---- a plugin's mapping, checked ------------------------------------------------------------------


class _SquareConfig(ArchConfig):
    d_model: PositiveInt = 4


def _square_host(modules) -> PluginHost:
    """A host with one architecture, a single d x d linear layer whose reference is torch.nn.Linear."""

    def build(cfg):
        d = symbol("d", cfg.d_model)
        root = composite("square", "model", [linear("proj", d, d)])
        return with_modules(root, {"square": ("",), "square.proj": modules})

    module = types.ModuleType("archzoo_square")

    @hookimpl
    def register_architectures(register):
        register(
            Architecture(
                name="square",
                title="Square",
                summary="s",
                citation="c",
                config_model=_SquareConfig,
                build=build,
                seq_len=lambda cfg: 1,
                reference=lambda cfg: Reference(
                    library="torch",
                    target="torch.nn.Linear",
                    kwargs={"in_features": cfg.d_model, "out_features": cfg.d_model},
                ),
            )
        )

    module.register_architectures = register_architectures
    return PluginHost(extra_plugins={"square": module}, entry_points=False, strict=True).load()


@pytest.mark.reference
def test_a_parameter_name_maps_a_block(tmp_path):
    path = _write_entry(tmp_path, "square", "square", {"d_model": 5})
    verification = verify_target(str(path), host=_square_host(("weight", "bias")))
    linear_module = _build("torch.nn.Linear", None, {"in_features": 5, "out_features": 5})
    assert [(row.path, row.expected) for row in verification.blocks] == [
        ("square", sum(p.numel() for p in linear_module.parameters())),
        ("square.proj", linear_module.weight.numel() + linear_module.bias.numel()),
    ]
    assert verification.ok


@pytest.mark.reference
def test_a_mapped_name_the_reference_lacks_fails_its_row(tmp_path):
    path = _write_entry(tmp_path, "square", "square", {"d_model": 5})
    verification = verify_target(str(path), host=_square_host(("weight", "scale")))
    row = verification.blocks[1]
    assert row.missing == ("scale",) and row.expected is None and not row.ok and not verification.ok
    assert "  square.proj: the reference has no submodule scale" in verification.render().splitlines()


@pytest.mark.reference
def test_a_mapping_that_is_not_a_tuple_of_names_is_the_plugins_error(tmp_path):
    """The host checks every block a plugin builds: a bad ``modules`` is refused before anything is verified."""
    path = _write_entry(tmp_path, "square", "square", {"d_model": 5})
    with pytest.raises(
        RegistryError,
        match=r"config: cannot count the parameters of this configuration: plugin "
        r"'square': build returned a bad block 'square.proj': modules is tuple, "
        r"expected a tuple of str \(the reference's submodule names\)$",
    ):
        verify_target(str(path), host=_square_host([3]))


# ---- what to verify: an id or a file ---------------------------------------------------------------


@pytest.mark.reference
def test_a_model_id_and_its_file_verify_alike(tmp_path):
    by_id = verify_target("bert-tiny", [REGISTRY_DIR])
    by_path = verify_target(str(REGISTRY_DIR / "bert" / "bert-tiny.yaml"))
    assert by_id.to_json() == by_path.to_json()
    assert by_id.model_id == "bert-tiny" and by_id.ok
    copy = tmp_path / "bert-tiny"  # an existing file is a file whatever its name
    shutil.copy(REGISTRY_DIR / "bert" / "bert-tiny.yaml", copy)
    assert verify_target(str(copy)).expected_total == by_id.expected_total


def test_an_unknown_id_names_the_closest():
    with pytest.raises(UnknownModelError, match=r"^unknown model 'bert-tiniest'; did you mean 'bert-tiny'"):
        verify_target("bert-tiniest", [REGISTRY_DIR])


def test_a_missing_file_is_a_registry_error(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(RegistryError, match=rf"^{missing}:1: no such file or folder; check the path"):
        verify_target(str(missing))


def test_an_invalid_file_lists_its_problems(tmp_path):
    path = _write_entry(tmp_path, "bad", "bert", {"n_layers": 0})
    with pytest.raises(RegistryError, match=rf"^{path}:\d+: config.n_layers: "):
        verify_target(str(path))


# ---- without torch or transformers ------------------------------------------------------------------


def _run_without(module: str, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter where importing ``module`` fails, as if it were not installed."""
    script = f"import sys\nsys.modules[{module!r}] = None\n" + code
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


_VERIFY = (
    "from archzoo.errors import ArchzooError\nfrom archzoo.verify import verify_target\n"
    "try:\n    print(verify_target({target!r}, [{registry!r}]).ok)\n"
    "except ArchzooError as exc:\n    print(exc)\n"
)


def test_without_torch_the_message_says_what_to_install():
    result = _run_without("torch", _VERIFY.format(target="bert-tiny", registry=str(REGISTRY_DIR)))
    assert result.stdout.strip() == (
        "archzoo verify builds transformers.BertModel with PyTorch, which is not installed; install the verify "
        "extra: `pip install torch==2.13.0` (the CPU build), then `pip install 'archzoo[verify]'`"
    ), result.stderr


def test_without_transformers_the_message_says_what_to_install():
    result = _run_without("transformers", _VERIFY.format(target="gpt2", registry=str(REGISTRY_DIR)))
    assert result.stdout.strip() == (
        "archzoo verify builds transformers.GPT2LMHeadModel with Hugging Face transformers, which is not "
        "installed; install the verify extra: `pip install torch==2.13.0` (the CPU build), then "
        "`pip install 'archzoo[verify]'`"
    ), result.stderr


@pytest.mark.reference
def test_a_torch_reference_needs_no_transformers():
    pytest.importorskip("torch")
    result = _run_without("transformers", _VERIFY.format(target="torch-nn-transformer", registry=str(REGISTRY_DIR)))
    assert result.stdout.strip() == "True", result.stderr


def test_importing_verify_does_not_import_torch():
    result = _run_without(
        "__no_such_module__",
        "import archzoo.verify, archzoo.registry\nprint('torch' in sys.modules, 'transformers' in sys.modules)",
    )
    assert result.stdout.strip() == "False False", result.stderr


# ---- a checkpoint's tensors: every prefix, without writing every prefix out ------------------------------

NAME_PARTS = st.sampled_from(["a", "b", "ab", "a-b", "a/b", "0", "1", "10", "", "é", "\x00", "~"])
TENSOR_NAMES = st.lists(NAME_PARTS, min_size=1, max_size=5).map(".".join)


@settings(max_examples=examples(300), deadline=None)
@example(tensors=[("a", 1), ("a.b", 2), ("a-b", 4), ("a/b", 8), ("ab", 16), ("a.b", 32)], query="a")
@example(tensors=[("a..b", 3), ("", 5)], query="")
@given(
    tensors=st.lists(st.tuples(TENSOR_NAMES, st.integers(0, 10**12)), max_size=12),
    query=TENSOR_NAMES | st.just(""),
)
def test_tensor_counts_equal_the_sum_over_every_dotted_prefix(tensors, query):
    """The sorted-names index a checkpoint is compared with answers as the plain reference does: the elements of
    the tensors at and under ``query`` (its name, or a name starting with ``query.``), summed here by scanning
    every name; and whether any tensor is there at all ("" is the whole checkpoint, and no name)."""
    from archzoo.block_match import _TensorCounts

    counts = _TensorCounts(tensors)
    under = [n for name, n in tensors if name == query or name.startswith(query + ".")]
    expected = sum(n for _, n in tensors) if query == "" else sum(under)
    assert counts.get(query, -1) == (expected if query == "" or under else -1)
    assert (query in counts) == (query != "" and bool(under))


def test_the_runs_of_a_layer_stack_match_the_layers_at_their_positions():
    """A stack whose ModuleList interleaves two kinds of layer (Gemma 2's sliding and global layers, Qwen2-MoE's
    dense and sparse ones): each run's copy i is the list's layer positions[i], compared one by one."""
    torch = pytest.importorskip("torch")
    from archzoo.block_match import compare_blocks
    from archzoo.blocks import composite, layer_runs, linear, with_modules
    from archzoo.symbols import symbol

    d = symbol("d", 4)
    narrow = composite("narrow_layer", "decoder_layer", [linear("proj", d, d)])
    wide = composite("wide_layer", "decoder_layer", [linear("proj", d, 2 * d)])
    root = composite("net", "model", [layer_runs("layers", [(narrow, symbol("L", 1)), (wide, symbol("L", 1))] * 2)])
    root = with_modules(
        root,
        {
            "net.layers": ("layers",),
            "net.layers.narrow_layers.narrow_layer": ("layers",),
            "net.layers.narrow_layers.narrow_layer.proj": ("proj",),
            "net.layers.wide_layers.wide_layer": ("layers",),
            "net.layers.wide_layers.wide_layer.proj": ("proj",),
        },
    )

    class Layer(torch.nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.proj = torch.nn.Linear(4, width)

    with torch.device("meta"):
        model = torch.nn.Module()
        model.layers = torch.nn.ModuleList([Layer(4), Layer(8), Layer(4), Layer(8)])  # narrow at 0, 2; wide at 1, 3
    comparison = compare_blocks(root, model, "test")
    rows = {row.path: row for row in comparison.blocks}
    assert all(row.ok for row in comparison.blocks), [r for r in comparison.blocks if not r.ok]
    assert rows["net.layers.wide_layers.wide_layer.proj"].copies == 2
    assert rows["net.layers.wide_layers.wide_layer.proj"].expected == 4 * 8 + 8  # torch's Linear(4, 8)
    assert comparison.expected_total == sum(p.numel() for p in model.parameters())
