"""Checkpoints read from their headers: element counts and dtypes against what transformers saved.

Each checkpoint here is written by transformers' ``save_pretrained`` (or safetensors' own ``save_file``)
from a small model built on the CPU; the expected figures are that model's
``sum(p.numel() for p in model.parameters())`` and the dtypes it was saved in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from archzoo.checkpoint import read_checkpoint
from archzoo.errors import CheckpointError

# safetensors comes with transformers and the checkpoint extra: on CI a skip here fails the run
pytestmark = pytest.mark.reference
safetensors = pytest.importorskip("safetensors")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A two-layer LLaMA with a tied head, saved whole and in shards; and its parameter count."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    config = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    root = tmp_path_factory.mktemp("checkpoints")
    model.save_pretrained(root / "whole")
    model.save_pretrained(root / "sharded", max_shard_size="20KB")
    model.to(torch.bfloat16).save_pretrained(root / "bf16")
    return root, sum(p.numel() for p in model.parameters()), len(list(model.parameters()))


def test_a_whole_checkpoint_holds_the_models_parameters_once(llama):
    root, params, tensors = llama
    checkpoint = read_checkpoint(root / "whole")
    assert checkpoint.files == ("model.safetensors",)
    # the tied head is saved once, so the elements are exactly PyTorch's parameter count
    assert (checkpoint.elements, len(checkpoint.tensors)) == (params, tensors)
    assert checkpoint.by_dtype() == {"F32": (tensors, params)}
    assert checkpoint.bytes() == 4 * params
    assert checkpoint.packed() == ()


def test_a_sharded_checkpoint_reads_like_the_whole_one(llama):
    root, params, _ = llama
    shards = sorted(p.name for p in (root / "sharded").glob("*.safetensors"))
    assert len(shards) > 1
    for given in (root / "sharded", root / "sharded" / "model.safetensors.index.json"):
        checkpoint = read_checkpoint(given)
        assert checkpoint.files == tuple(shards)
        assert checkpoint.tensors == tuple(
            t.__class__(t.name, t.dtype, t.shape, checkpoint.tensors[i].file)
            for i, t in enumerate(read_checkpoint(root / "whole").tensors)
        )
        assert checkpoint.elements == params


def test_dtypes_are_counted_as_saved(llama):
    root, params, tensors = llama
    assert read_checkpoint(root / "bf16").by_dtype() == {"BF16": (tensors, params)}
    assert read_checkpoint(root / "bf16").bytes() == 2 * params


def test_integer_tensors_are_flagged_as_packed(tmp_path):
    """GPTQ stores 4-bit weights eight to an int32: 16 x 4 elements hold a 16 x 32 matrix."""
    np = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    save_file(
        {
            "layer.qweight": np.zeros((16, 4), dtype=np.int32),
            "layer.scales": np.zeros((1, 32), dtype=np.float16),
            "norm.weight": np.zeros((32,), dtype=np.float16),
        },
        str(tmp_path / "model.safetensors"),
    )
    checkpoint = read_checkpoint(tmp_path)
    assert [t.name for t in checkpoint.packed()] == ["layer.qweight"]
    assert checkpoint.by_dtype() == {"F16": (2, 64), "I32": (1, 64)}


def test_reading_a_checkpoint_imports_no_torch(llama):
    root, _, _ = llama
    code = (
        "import sys; from archzoo.checkpoint import read_checkpoint; "
        f"c = read_checkpoint({str(root / 'sharded')!r}); "
        "print(c.elements, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(llama[1]), "False"]


def _index(folder: Path) -> dict:
    return json.loads((folder / "model.safetensors.index.json").read_text())


def test_an_index_that_disagrees_with_its_shards_is_refused(llama, tmp_path):
    import shutil

    root, _, _ = llama
    folder = tmp_path / "copy"
    shutil.copytree(root / "sharded", folder)
    index = _index(folder)
    name, shard = next(iter(index["weight_map"].items()))
    index["weight_map"]["model.ghost.weight"] = shard
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(
        CheckpointError, match=rf"weight_map lists 1 tensors {shard} does not hold \(model.ghost.weight\)"
    ):
        read_checkpoint(folder)
    del index["weight_map"]["model.ghost.weight"], index["weight_map"][name]
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=rf"weight_map omits 1 tensors {shard} holds \({name}\)"):
        read_checkpoint(folder)


@pytest.mark.parametrize(
    ("weight_map", "message"),
    [
        ({"a": "../outside.safetensors"}, r"names the shard '../outside.safetensors', outside the index's folder"),
        ({"a": "/etc/passwd"}, r"names the shard '/etc/passwd', outside the index's folder"),
        (["a"], r"weight_map: expected an object mapping each tensor name to its shard file"),
        ({"a": 3}, r"weight_map: expected an object mapping each tensor name to its shard file"),
        ({"a": "missing.safetensors"}, r"missing.safetensors: no such file"),
    ],
)
def test_a_bad_index_is_refused_with_its_reason(tmp_path, weight_map, message):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(tmp_path)


def test_what_is_not_a_checkpoint_is_refused(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(CheckpointError, match=r"model.safetensors: not a safetensors file \(.*\); archzoo reads"):
        read_checkpoint(tmp_path)
    (tmp_path / "model.safetensors.index.json").write_text("{")
    with pytest.raises(CheckpointError, match=r"index.json:1: not valid JSON"):
        read_checkpoint(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointError, match=r"no model.safetensors.index.json or model.safetensors in this folder"):
        read_checkpoint(empty)


# ---- a checkpoint against archzoo's count ---------------------------------------------------------------


def _checkpoint_cli(*args: str) -> tuple[int, str, str]:
    run = subprocess.run(
        [sys.executable, "-m", "archzoo.cli", "checkpoint", *args], capture_output=True, text=True, timeout=120
    )
    return run.returncode, run.stdout, run.stderr


def test_a_checkpoint_beside_its_config_matches_block_by_block(llama):
    """transformers saved the tied LLaMA with its config.json: every tensor lands in its block, the tied head
    holds nothing of its own, and the totals agree (18,624 = PyTorch's parameter count)."""
    root, params, _ = llama
    code, out, err = _checkpoint_cli(str(root / "sharded"))
    assert code == 0, out + err
    assert f"configuration: {root / 'sharded' / 'config.json'} as LlamaForCausalLM" in out
    assert f"total: reference {params:,}, archzoo {params:,}: match" in out
    assert "match: the total and 17 blocks agree with the checkpoint" in out
    code, out, _ = _checkpoint_cli(str(root / "whole"), "--json")
    data = json.loads(out)
    assert data["elements"] == params and data["comparison"]["ok"] is True
    head = next(row for row in data["comparison"]["blocks"] if row["block"] == "llama.lm_head")
    assert (head["expected"], head["got"]) == (0, 0)


def test_a_tied_weight_stored_twice_and_a_buffer_are_named(llama, tmp_path):
    """The same checkpoint with the tied head's tensor saved again and a rotary buffer added: the totals
    differ by exactly those tensors' elements, and the notes say why."""
    import shutil

    from safetensors.numpy import load_file, save_file

    root, params, _ = llama
    folder = tmp_path / "twice"
    folder.mkdir()
    shutil.copy(root / "whole" / "config.json", folder / "config.json")
    tensors = load_file(str(root / "whole" / "model.safetensors"))
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"].copy()  # 97 x 32
    tensors["model.rotary_emb.inv_freq"] = tensors["model.norm.weight"][:4].copy()
    save_file(tensors, str(folder / "model.safetensors"))
    code, out, _ = _checkpoint_cli(str(folder))
    assert code == 1
    assert f"total: reference {params + 97 * 32 + 4:,}, archzoo {params:,}: differs by {-(97 * 32 + 4):+,}" in out
    assert "llama.lm_head: the checkpoint stores 3,104 elements for a weight the model ties to token" in out
    assert "1 tensors no block maps (model.rotary_emb.inv_freq)" in out
    assert "DIFFERS from the checkpoint: the total, llama, llama.lm_head" in out


def test_a_checkpoint_against_another_configuration_differs(llama):
    root, _, _ = llama
    code, out, _ = _checkpoint_cli(str(root / "whole"), "--model", "tinyllama-1.1b")
    assert code == 1
    assert "configuration: registry entry tinyllama-1.1b" in out
    assert "archzoo 1,100,048,384: differs" in out  # LlamaForCausalLM for TinyLlama-1.1B, transformers 5.23


def test_without_a_configuration_the_tensors_are_counted_by_dtype(llama, tmp_path):
    import shutil

    root, params, tensors = llama
    shutil.copy(root / "bf16" / "model.safetensors", tmp_path / "model.safetensors")
    code, out, err = _checkpoint_cli(str(tmp_path / "model.safetensors"))
    assert code == 0
    assert out.splitlines()[1] == f"  BF16: {tensors:,} tensors, {params:,} elements"
    assert "give --model ID or --hf-config FILE" in err
    code, _, err = _checkpoint_cli(str(tmp_path / "model.safetensors"), "--hf-class", "LlamaModel")
    assert code == 1 and "--hf-class goes with --hf-config" in err


def test_a_sharded_checkpoint_in_a_download_cache_reads_through_its_links(llama, tmp_path):
    """Hugging Face's cache keeps each file as a blob and links it from the snapshot folder
    (snapshots/REV/model-00001-of-00004.safetensors -> ../../blobs/SHA): the links are followed."""
    root, params, _ = llama
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "rev"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    for i, source in enumerate(sorted((root / "sharded").iterdir())):
        blob = blobs / f"sha{i}"
        blob.write_bytes(source.read_bytes())
        (snapshot / source.name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    assert read_checkpoint(snapshot).elements == params


# 20 s of CPU: the llama plugin still walks its 300,000,000 layers while building the block tree and its
# reference map (sliding_layers, _builds, _reference_family): over the ~10 s a fast-subset test may take
@pytest.mark.slow
def test_a_config_with_absurdly_many_layers_is_compared_without_enumerating_them(llama, tmp_path):
    """The layer count comes from a file: 300,000,000 layers against a 2-layer checkpoint reports the first
    copy the checkpoint lacks, promptly, instead of naming three hundred million."""
    import shutil

    root, _, _ = llama
    folder = tmp_path / "big"
    shutil.copytree(root / "whole", folder)
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 300_000_000
    (folder / "config.json").write_text(json.dumps(config))
    code, out, _ = _checkpoint_cli(str(folder))
    assert code == 1
    assert "llama.layers.layer: the reference has no submodule model.layers.2\n" in out
    assert "model.layers.3" not in out


# ---- quantised layouts and prefixes -------------------------------------------------------------------------


def _quantised(llama, tmp_path, layout: str, keep=lambda name: True) -> Path:
    """The tied LLaMA's checkpoint with every linear weight of its layers replaced by the tensors a quantiser
    saves for it (shapes as AutoGPTQ's and AutoAWQ's QuantLinear and bitsandbytes' Linear4bit/Linear8bitLt
    save them, 4-bit, one group), beside its config.json."""
    import shutil

    np = pytest.importorskip("numpy")
    from safetensors.numpy import load_file, save_file

    root, _, _ = llama
    folder = tmp_path / layout
    folder.mkdir()
    shutil.copy(root / "whole" / "config.json", folder / "config.json")
    tensors = load_file(str(root / "whole" / "model.safetensors"))
    for name in [n for n in tensors if ".layers." in n and n.endswith("proj.weight") and keep(n)]:
        out, inp = tensors.pop(name).shape  # torch's Linear weight: (out_features, in_features)
        layer = name[: -len(".weight")]
        if layout == "gptq":  # input dimension packed: 8 four-bit values an int32
            tensors[layer + ".qweight"] = np.zeros((inp // 8, out), np.int32)
            tensors[layer + ".qzeros"] = np.zeros((1, out // 8), np.int32)
            tensors[layer + ".scales"] = np.zeros((1, out), np.float16)
            tensors[layer + ".g_idx"] = np.zeros((inp,), np.int32)
        elif layout == "awq":  # output dimension packed
            tensors[layer + ".qweight"] = np.zeros((inp, out // 8), np.int32)
            tensors[layer + ".qzeros"] = np.zeros((1, out // 8), np.int32)
            tensors[layer + ".scales"] = np.zeros((1, out), np.float16)
        elif layout == "nf4":  # two 4-bit values a byte, flattened
            tensors[name] = np.zeros((out * inp // 2, 1), np.uint8)
            tensors[name + ".absmax"] = np.zeros((out * inp // 64,), np.float32)
            tensors[name + ".quant_map"] = np.zeros((16,), np.float32)
            # bitsandbytes' QuantState.as_dict(packed=True): the non-tensor fields as JSON bytes
            state = {"quant_type": "nf4", "blocksize": 64, "dtype": "float32", "shape": [out, inp]}
            tensors[name + ".quant_state.bitsandbytes__nf4"] = np.frombuffer(json.dumps(state).encode(), np.uint8)
        elif layout == "int8":
            tensors[name] = np.zeros((out, inp), np.int8)
            tensors[layer + ".SCB"] = np.zeros((out,), np.float32)
        elif layout == "bare":  # an int32 qweight with nothing to say how it packs
            tensors[layer + ".qweight"] = np.zeros((inp // 8, out), np.int32)
    save_file(tensors, str(folder / "model.safetensors"))
    return folder


@pytest.mark.parametrize(
    ("layout", "shown"),
    [
        ("gptq", "GPTQ: 4-bit, 8 values an int32"),
        ("awq", "AWQ: 4-bit, 8 values an int32"),
        ("nf4", "bitsandbytes 4-bit: two values a byte"),
        ("int8", "bitsandbytes 8-bit (LLM.int8): one value a byte"),
    ],
)
def test_quantised_weights_count_unpacked(llama, tmp_path, layout, shown):
    """Unpacked, the quantised checkpoint holds PyTorch's parameter count again, block by block; the scales,
    zeros and state beside each weight are not parameters."""
    _, params, _ = llama
    folder = _quantised(llama, tmp_path, layout)
    code, out, err = _checkpoint_cli(str(folder))
    assert code == 0, out + err
    assert f"total: reference {params:,}, archzoo {params:,}: match" in out
    assert "14 quantised weights (model.layers.0.mlp.down_proj.weight, " in out and shown in out
    code, out, _ = _checkpoint_cli(str(folder), "--json")
    data = json.loads(out)
    assert data["parameters"] == params and len(data["unpacked"]) == 14
    assert data["elements"] != params and data["refused"] == {}


def test_a_quantised_checkpoint_alone_shows_its_unpacked_count(llama, tmp_path):
    """With no configuration to compare with, the text output still gives the parameters the packed tensors
    hold: PyTorch's count of the model the checkpoint was saved from."""
    _, params, _ = llama
    folder = _quantised(llama, tmp_path, "gptq")
    (folder / "config.json").unlink()
    code, out, err = _checkpoint_cli(str(folder / "model.safetensors"))
    assert code == 0, out + err
    assert (
        f"parameters: {params:,} (14 quantised weights counted unpacked, 42 quantisation side tensors left out)" in out
    )


def test_a_packed_weight_no_layout_explains_is_refused_with_the_reason(llama, tmp_path):
    folder = _quantised(llama, tmp_path, "bare", keep=lambda name: name == "model.layers.0.self_attn.q_proj.weight")
    code, out, _ = _checkpoint_cli(str(folder))
    assert code == 1
    assert (
        "model.layers.0.self_attn.q_proj.qweight: packed, not unpacked: a qweight without its 2-d scales and "
        "qzeros: the packing factor cannot be read from the shapes; the totals cannot agree"
    ) in " ".join(out.split())


def test_names_saved_from_the_base_class_map_onto_the_blocks(llama, tmp_path):
    """LlamaModel saves its tensors without LlamaForCausalLM's 'model.' prefix (the head is tied: nothing
    else differs): they are mapped with it, and the totals agree."""
    import shutil

    from safetensors.numpy import load_file, save_file

    root, params, _ = llama
    folder = tmp_path / "base"
    folder.mkdir()
    shutil.copy(root / "whole" / "config.json", folder / "config.json")
    tensors = load_file(str(root / "whole" / "model.safetensors"))
    save_file({k.removeprefix("model."): v for k, v in tensors.items()}, str(folder / "model.safetensors"))
    code, out, err = _checkpoint_cli(str(folder))
    assert code == 0, out + err
    assert "the tensor names lack the class's 'model.' prefix (saved from the base class): mapped with it" in " ".join(
        out.split()
    )
    assert f"total: reference {params:,}, archzoo {params:,}: match" in out


def test_names_saved_from_a_wrapping_class_map_onto_the_base_blocks(tmp_path):
    """BertForMaskedLM saves BertModel's tensors under 'bert.', and its head under 'cls.': against BertModel
    the body maps without the prefix, and the head is named as what no block maps."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37
    )
    torch.manual_seed(0)
    model = transformers.BertForMaskedLM(config)
    model.save_pretrained(tmp_path / "mlm")
    body = sum(p.numel() for p in model.bert.parameters())
    code, out, _ = _checkpoint_cli(
        str(tmp_path / "mlm"), "--hf-config", str(tmp_path / "mlm" / "config.json"), "--hf-class", "BertModel"
    )
    text = " ".join(out.split())
    assert code == 1  # the head's tensors count in the checkpoint only, and BertModel's pooler is not saved
    assert "carry a 'bert.' prefix the class lacks (saved from a class that wraps it): mapped without it" in text
    assert "5 tensors no block maps (cls.predictions.bias, " in text
    embeddings = sum(p.numel() for p in model.bert.embeddings.parameters())
    assert f"bert.embeddings embeddings {embeddings:,} {embeddings:,} match" in text
    layers = sum(p.numel() for p in model.bert.encoder.parameters())
    assert f"bert.layers encoder.layer {layers:,} {layers:,} match" in text
    assert body == embeddings + layers  # no pooler: BertForMaskedLM builds BertModel without one
    assert "bert.pooler pooler missing" in text
