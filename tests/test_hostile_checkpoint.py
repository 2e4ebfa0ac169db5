"""The hostile-input corpus for checkpoints (`archzoo checkpoint`, `archzoo.checkpoint`): files crafted to be
counted wrongly, to take the terminal over, to freeze or flood, or to crash the reader. Each case ends in
bounded time with an exact refusal, an exact bounded note, or one error line, never a traceback; and the
safetensors and index readers are fuzzed (hypothesis), the failures it found kept as explicit examples.

The classes are those of the second hardening round (issue 19): wrong answers without a word (a quantised
layout no quantiser writes), terminal control from a file (escape sequences in tensor names), freezes and
floods (5,000 distinct first names; 100,000 packed tensors), tracebacks (a zero-width GPTQ tensor; numpy
missing). Every case is marked ``hostile``: ``benchmarks/hostile.py`` times each in its own process.

Files are written byte by byte from the safetensors format (an 8-byte little-endian header length, the JSON
header, the data), so the test's own header is the reference a read must reproduce exactly.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

from archzoo.checkpoint import read_checkpoint, unpack
from archzoo.errors import CheckpointError
from fast_subset import examples
from strategies import safetensors_header, sharded_index

pytestmark = pytest.mark.hostile
pytest.importorskip("safetensors")

#: bytes an element of each dtype the tests write
SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I8": 1, "U8": 1}
#: a two-layer LLaMA's config.json as transformers writes it (only the keys archzoo reads)
LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "vocab_size": 97,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "tie_word_embeddings": True,
}


def safetensors_bytes(tensors: dict[str, tuple]) -> bytes:
    """A safetensors file of ``tensors`` (name -> dtype, shape, and maybe the data's bytes; zeros without),
    laid out as the format says."""
    header: dict[str, Any] = {}
    data = b""
    for name, (dtype, shape, *content) in tensors.items():
        size = math.prod(shape) * SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + size]}
        data += content[0] if content else b"\0" * size
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data


def quant_state(shape: list[int]) -> tuple[str, tuple[int, ...], bytes]:
    """bitsandbytes' 4-bit quantisation state as Linear4bit saves it (QuantState.as_dict(packed=True): the
    fields that are no tensor, as JSON bytes in a uint8 tensor)."""
    text = json.dumps({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": shape}).encode()
    return ("U8", (len(text),), text)


def write(folder: Path, tensors: dict[str, tuple[str, tuple[int, ...]]], *, config: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(safetensors_bytes(tensors))
    if config:
        (folder / "config.json").write_text(json.dumps(LLAMA), encoding="utf-8")
    return folder / "model.safetensors"


def cli(*args: str, env: dict[str, str] | None = None, prelude: str = "") -> tuple[int, str, str]:
    """``archzoo ARGS`` in its own process (``prelude`` runs first, in Python): exit code, stdout, stderr."""
    code = f"import sys\n{prelude}\nfrom archzoo.cli import main\nsys.exit(main(sys.argv[1:]))"
    run = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    return run.returncode, run.stdout, run.stderr


# ---- wrong answers without a word: layouts no quantiser writes --------------------------------------------

GPTQ = "GPTQ: 4-bit, 8 values an int32"


def _gptq(qweight: tuple[int, ...], scales: tuple[int, ...], qzeros: tuple[int, ...]) -> dict:
    return {"l.qweight": ("I32", qweight), "l.scales": ("F16", scales), "l.qzeros": ("I32", qzeros)}


IMPOSSIBLE = [
    # (id, tensors, the refused tensor, the reason)
    (
        "gptq-3-values-an-int32",  # qzeros 8 wide for 24 outputs: 3 values an int32, 10.7 bits; once counted as 10-bit
        _gptq((8, 24), (1, 24), (1, 8)),
        "l.qweight",
        "qweight [8, 24], scales [1, 24], qzeros [1, 8]: qweight is as wide as scales (GPTQ's layout), but qzeros "
        "packs 24 values into 8 int32s, which no bit width GPTQ writes (2, 3, 4, 8) gives",
    ),
    (
        "gptq-zero-width",  # 0 outputs: the packing factor was 0 // 5, then 32 // 0 raised ZeroDivisionError
        _gptq((8, 0), (1, 0), (1, 5)),
        "l.qweight",
        "qweight [8, 0], scales [1, 0], qzeros [1, 5]: an empty dimension, from which the packing factor cannot "
        "be read",
    ),
    (
        "gptq-groups-disagree",  # two groups of scales, one of zeros: once counted as GPTQ 4-bit
        _gptq((8, 32), (2, 32), (1, 4)),
        "l.qweight",
        "qweight [8, 32], scales [2, 32], qzeros [1, 4]: 2 groups of scales but 1 of zeros; a quantiser writes one "
        "of each",
    ),
    (
        "gptq-more-groups-than-inputs",  # 8 input values in 16 groups
        _gptq((1, 32), (16, 32), (16, 4)),
        "l.qweight",
        "qweight [1, 32], scales [16, 32], qzeros [16, 4]: 16 groups for 8 input values; a group holds at least one",
    ),
    (
        "awq-3-values-an-int32",  # 24 outputs packed into 8 int32s: once counted as 10-bit AWQ
        _gptq((64, 8), (1, 24), (1, 8)),
        "l.qweight",
        "qweight [64, 8], scales [1, 24], qzeros [1, 8]: neither GPTQ's layout nor AWQ's (no bit width packs these "
        "shapes)",
    ),
    (
        "awq-zeros-packed-otherwise",
        _gptq((64, 4), (1, 32), (1, 8)),
        "l.qweight",
        "qweight [64, 4], scales [1, 32], qzeros [1, 8]: qweight packs the output into 4 int32s, qzeros into 8; AWQ "
        "packs both alike",
    ),
    (
        "gptq-zeros-not-int32",
        {"l.qweight": ("I32", (8, 32)), "l.scales": ("F16", (1, 32)), "l.qzeros": ("F16", (1, 4))},
        "l.qweight",
        "qweight [8, 32], scales [1, 32], qzeros [1, 4]: qzeros is F16 and scales F16; GPTQ and AWQ store the zeros "
        "packed in int32 and the scales as real numbers (F16, BF16 or F32)",
    ),
    (
        "nf4-more-blocks-than-values",  # 16 values in 100 blocks of absmax
        {
            "l.weight": ("U8", (8, 1)),
            "l.weight.absmax": ("F32", (100,)),
            "l.weight.quant_state.bitsandbytes__nf4": quant_state([4, 4]),
        },
        "l.weight",
        "a 4-bit weight of 16 values beside 100 absmax: bitsandbytes writes one absmax a block of 32 to 4,096 "
        "values; these shapes no quantiser writes",
    ),
    (
        "nf4-without-its-state",  # 8 bytes are 15 or 16 values: only the state says which
        {"l.weight": ("U8", (8, 1)), "l.weight.absmax": ("F32", (1,))},
        "l.weight",
        "a 4-bit weight without its quant_state.bitsandbytes__nf4 (or __fp4): two values a byte, the last maybe half "
        "full, so only the shape the state records gives the exact count",
    ),
    (
        "nf4-state-of-another-weight",
        {
            "l.weight": ("U8", (8, 1)),
            "l.weight.absmax": ("F32", (1,)),
            "l.weight.quant_state.bitsandbytes__nf4": quant_state([8, 8]),
        },
        "l.weight",
        "a 4-bit weight of 8 bytes whose state records the shape [8, 8] (64 values, 32 bytes): the state belongs to "
        "another weight",
    ),
    (
        "int8-scales-for-other-rows",
        {"l.weight": ("I8", (4, 8)), "l.SCB": ("F32", (5,))},
        "l.weight",
        "an int8 weight [4, 8] beside SCB [5]: LLM.int8 stores one scale a row, 4; these shapes no quantiser writes",
    ),
]


@pytest.mark.parametrize(
    ("tensors", "name", "reason"), [case[1:] for case in IMPOSSIBLE], ids=[c[0] for c in IMPOSSIBLE]
)
def test_a_layout_no_quantiser_writes_is_refused_not_counted(tmp_path, tensors, name, reason):
    """The packed tensor is named with the reason and counts as its own elements (the header's shape), never
    as a number of unpacked values read from shapes that no quantiser writes."""
    unpacked = unpack(read_checkpoint(write(tmp_path, tensors)))
    assert unpacked.refused == {name: reason}
    assert unpacked.layouts == {}
    assert dict(unpacked.tensors)[name] == math.prod(tensors[name][1])


def test_an_odd_count_of_4_bit_values_is_the_shape_its_state_records(tmp_path):
    """bitsandbytes packs a Linear(3, 5) weight's 15 values into 8 bytes (the last half full): the count is 15,
    torch.nn.Linear(3, 5).weight.numel(), not two values for each of the 8 bytes."""
    tensors = {
        "l.weight": ("U8", (8, 1)),
        "l.weight.absmax": ("F32", (1,)),
        "l.weight.quant_state.bitsandbytes__nf4": quant_state([5, 3]),
    }
    unpacked = unpack(read_checkpoint(write(tmp_path, tensors)))
    assert (unpacked.refused, dict(unpacked.tensors)) == ({}, {"l.weight": 5 * 3})


def test_a_possible_layout_is_still_counted(tmp_path):
    """The control of the cases above: AutoGPTQ's 4-bit QuantLinear(in 64, out 32, group 32) saves qweight
    (64·4/32, 32), scales and qzeros (64/32 groups, 32 and 32·4/32): 64 × 32 = 2,048 values, one group each."""
    unpacked = unpack(read_checkpoint(write(tmp_path, _gptq((8, 32), (2, 32), (2, 4)))))
    assert (unpacked.refused, unpacked.layouts, dict(unpacked.tensors)) == ({}, {"l.weight": GPTQ}, {"l.weight": 2048})


def test_a_zero_width_gptq_tensor_is_one_line_in_the_cli(tmp_path):
    write(tmp_path, _gptq((8, 0), (1, 0), (1, 5)))
    code, out, err = cli("checkpoint", str(tmp_path / "model.safetensors"))
    assert (code, "Traceback" in err) == (0, False), err
    assert (
        "  l.qweight: packed, not unpacked: qweight [8, 0], scales [1, 0], qzeros [1, 5]: an empty dimension, from "
        "which the packing factor cannot be read; the totals cannot agree\n" in out
    )


# ---- terminal control from a file ------------------------------------------------------------------------

#: a window title, a screen clear, a forged line, a bell and a right-to-left override, in tensor names
ESCAPES = ["\x1b]0;pwned\x07a.weight", "\x1b[2J\x1b[Hb.weight", "c\nverdict: match.weight", "d\u202ee.weight"]


def test_tensor_names_reach_the_terminal_escaped(tmp_path):
    """Compared with a configuration, the names no block maps are listed: shown escaped, no byte of a control
    sequence reaches the terminal, and no name starts a line of its own."""
    write(tmp_path, {name: ("F32", (2,)) for name in ESCAPES}, config=True)
    code, out, err = cli("checkpoint", str(tmp_path))
    assert code == 1 and not err, err
    assert not any(c in out for c in "\x1b\x07\u202e")
    assert not any(line.startswith("verdict") for line in out.splitlines())
    assert (
        "note: 4 tensors no block maps (\\x1b[2J\\x1b[Hb.weight, \\x1b]0;pwned\\x07a.weight, c\\x0averdict: "
        "match.weight and 1 more)" in out
    )


def test_tensor_names_in_an_error_are_escaped(tmp_path):
    """An index and its shard that disagree: the message names the tensors, escaped, on one line."""
    (tmp_path / "model-1.safetensors").write_bytes(safetensors_bytes({ESCAPES[0]: ("F32", (1,))}))
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {ESCAPES[1]: "model-1.safetensors"}}), encoding="utf-8"
    )
    code, out, err = cli("checkpoint", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == (
        f"archzoo: error: {tmp_path / 'model.safetensors.index.json'}: weight_map lists 1 tensors model-1.safetensors "
        "does not hold (\\x1b[2J\\x1b[Hb.weight) and omits 1 tensors model-1.safetensors holds "
        "(\\x1b]0;pwned\\x07a.weight); the index and its shards disagree: download them again, or re-save the model\n"
    )


# ---- freezes and floods ----------------------------------------------------------------------------------


def test_thousands_of_distinct_first_names_are_matched_in_n_log_n(tmp_path):
    """5,000 tensors named layer0.weight ... layer4999.weight: each first name was once tried as the prefix of
    a wrapping class, every try comparing all 5,000 again (93 s); benchmarks/hostile.py times it now."""
    write(tmp_path, {f"layer{i}.weight": ("F32", (1,)) for i in range(5000)}, config=True)
    code, out, err = cli("checkpoint", str(tmp_path))
    assert code == 1 and not err, err
    assert "total: reference 5,000, archzoo 18,624: differs by +13,624" in out  # 5,000 one-element tensors
    assert "note: 5,000 tensors no block maps (layer0.weight, layer1.weight, layer10.weight and 4,997 more)" in out


def test_a_hundred_thousand_packed_tensors_make_one_note(tmp_path):
    """100,000 int32 qweights without scales: one note line for the one reason (once one line each, 22 MB)."""
    write(tmp_path, {f"x{i}.qweight": ("I32", (1, 1)) for i in range(100_000)}, config=True)
    code, out, err = cli("checkpoint", str(tmp_path))
    assert code == 1 and not err, err
    assert len(out) < 10_000, len(out)
    assert (
        "note: 100,000 tensors (x0.qweight, x1.qweight, x10.qweight and 99,997 more): packed, not unpacked: a "
        "qweight without its 2-d scales and qzeros: the packing factor cannot be read from the shapes; the totals "
        "cannot agree" in " ".join(out.split())
    )


def test_packed_tensors_refused_for_many_reasons_are_noted_eight_reasons_at_most(tmp_path):
    tensors = {f"x{i}.qweight": ("I32", (1, 1, i + 1)) for i in range(20)}  # 3-d, each its own shape and reason
    write(tmp_path, tensors, config=True)
    code, out, _ = cli("checkpoint", str(tmp_path))
    assert code == 1
    notes = [line for line in out.splitlines() if "packed, not unpacked" in line or "more packed tensors" in line]
    assert len(notes) == 9
    assert notes[-1] == (
        "note: 12 more packed tensors not unpacked, for 12 other reasons (--json lists each tensor with its reason)"
    )
    _, out, _ = cli("checkpoint", str(tmp_path), "--json")
    assert len(json.loads(out)["refused"]) == 20


# ---- tracebacks ------------------------------------------------------------------------------------------


def test_numpy_missing_is_one_line_saying_what_to_install(tmp_path):
    write(tmp_path, {"a.weight": ("F32", (2, 2))})
    code, out, err = cli("checkpoint", str(tmp_path / "model.safetensors"), prelude="sys.modules['numpy'] = None")
    assert (code, out) == (1, "")
    assert err == (
        "archzoo: error: reading checkpoints needs numpy, which safetensors reads headers with but does not install: "
        'pip install "archzoo[checkpoint]" (or pip install numpy)\n'
    )


# ---- fuzzing the readers ---------------------------------------------------------------------------------


def _expected(header: dict[str, Any]) -> dict[str, tuple[str, tuple[int, ...]]]:
    return {name: (t["dtype"], tuple(t["shape"])) for name, t in header.items() if name != "__metadata__"}


def _one_clean_line(message: str) -> None:
    assert "\n" not in message and "\x1b" not in message and "Traceback" not in message, message


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(
    header_and_bytes=(
        {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
        b'\x08\x00\x00\x00\x00\x00\x00\x00{"a": 1}',
    )
)
@given(header_and_bytes=safetensors_header())
def test_any_safetensors_header_is_read_exactly_or_refused_in_one_line(tmp_path, header_and_bytes):
    """Whatever the header holds, the reader returns exactly the tensors it lists (names, dtypes, shapes, and
    so the element count) or refuses the file with one CheckpointError line; no other exception."""
    header, data = header_and_bytes
    path = tmp_path / "model.safetensors"
    path.write_bytes(data)
    try:
        checkpoint = read_checkpoint(path)
    except CheckpointError as exc:
        _one_clean_line(str(exc))
        return
    got = {t.name: (t.dtype, t.shape) for t in checkpoint.tensors}
    assert got == _expected(header)
    assert checkpoint.elements == sum(math.prod(shape) for _, shape in got.values())


def _valid(index: Any, files: dict[str, dict[str, Any]]) -> bool:
    """Whether the index is one the reader must take: a weight_map of names to shard file names beside it,
    each shard there and holding exactly the tensors the map gives it."""
    if not isinstance(index, dict) or not isinstance(index.get("weight_map"), dict):
        return False
    weight_map = index["weight_map"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        return False
    for shard in set(weight_map.values()):
        listed = {name for name, file in weight_map.items() if file == shard}
        if "/" in shard or "\\" in shard or shard in ("", ".", "..") or shard not in files:
            return False
        if set(files[shard]) != listed:
            return False
    return True


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(index_and_files=({"weight_map": {"x": "a\\b"}}, {}))
@example(index_and_files=({"weight_map": {}, "metadata": "x"}, {}))
@given(index_and_files=sharded_index())
def test_any_sharded_index_is_read_exactly_or_refused_in_one_line(tmp_path_factory, index_and_files):
    """A sharded checkpoint is read only when the index and every shard it names agree, and then holds exactly
    the shards' tensors; anything else is one CheckpointError line."""
    index, files = index_and_files
    folder = tmp_path_factory.mktemp("sharded")
    for shard, tensors in files.items():
        (folder / shard).write_bytes(safetensors_bytes({k: (d, tuple(s)) for k, (d, s) in tensors.items()}))
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    try:
        checkpoint = read_checkpoint(folder)
    except CheckpointError as exc:
        _one_clean_line(str(exc))
        assert not _valid(index, files), str(exc)
        return
    assert _valid(index, files)
    expected = {
        name: (dtype, tuple(shape))
        for shard in set(index["weight_map"].values())
        for name, (dtype, shape) in files[shard].items()
    }
    assert {t.name: (t.dtype, t.shape) for t in checkpoint.tensors} == expected


def test_without_a_configuration_the_listing_is_escaped_and_bounded(tmp_path):
    """archzoo checkpoint with no configuration lists the file's tensors by dtype and what it could not unpack:
    100,000 refused packed tensors are one line, and a name's escape sequence reaches the terminal escaped."""
    tensors = {f"x{i}.qweight": ("I32", (1, 1)) for i in range(100_000)}
    tensors[ESCAPES[0].replace("a.weight", "a.qweight")] = ("I32", (1, 2, 3))  # its own reason: named alone
    write(tmp_path, tensors)
    code, out, err = cli("checkpoint", str(tmp_path))
    assert code == 0, err
    assert len(out) < 10_000, len(out)
    assert not any(c in out for c in "\x1b\x07")
    assert "100,000 tensors (x0.qweight, x1.qweight, x10.qweight and 99,997 more): packed, not unpacked" in out
    assert "\\x1b]0;pwned\\x07a.qweight: packed, not unpacked" in out
