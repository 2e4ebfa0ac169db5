"""Checkpoints read from their headers: every tensor's name, dtype and shape, with no weight loaded and no torch.

A safetensors file starts with a JSON header listing its tensors; the ``safetensors`` library reads just
that. A sharded checkpoint adds ``model.safetensors.index.json``, whose ``weight_map`` names the shard
holding each tensor. `read_checkpoint` takes either file, or the folder holding them, and returns a
`Checkpoint`: the tensors, their element counts by dtype, and the integer tensors whose element count is
not a parameter count (quantised weights are packed: GPTQ's ``int32`` ``qweight`` holds eight 4-bit
values per element).

`unpack` recognises the packed layouts that can be read from the header alone and counts what they hold:
GPTQ and AWQ (``qweight`` beside ``qzeros`` and ``scales``: the packing factor is a ratio of their shapes),
bitsandbytes 4-bit (a ``uint8`` ``weight`` beside its ``weight.absmax``: two values a byte, the exact count
the shape its ``quant_state`` records, a few hundred bytes of JSON and the one tensor whose data is read) and 8-bit
(an ``int8`` ``weight`` beside its ``SCB``: one value a byte); their side tensors (scales, zeros, group
indices, quantisation state) are not parameters. A packed tensor it cannot read, or whose shapes no
quantiser writes (a packing factor that is no bit width, scales and zeros of different group counts, more
groups than values), is named with the reason instead of counted.

Names in a checkpoint are anyone's text: every message and note shows them through `terminal.printable`,
and the notes about many tensors are bounded (a few names, then how many more), however many there are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from .block_match import BlockComparison, blocks_found, compare_blocks_to_tensors, find_block, unmapped_tensors
from .errors import CheckpointError
from .files import decode_utf8, read_user_bytes
from .report import make_report
from .terminal import printable
from .verification import Verification

if TYPE_CHECKING:
    from .architecture import ArchConfig, Architecture

__all__ = [
    "INDEX_NAME",
    "SINGLE_NAME",
    "Checkpoint",
    "Tensor",
    "Unpacked",
    "compare_checkpoint",
    "read_checkpoint",
    "unpack",
]

#: the names transformers' ``save_pretrained`` gives a checkpoint, sharded or not
INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
#: an index lists one line per tensor; the largest published ones (hundreds of experts) stay far below this
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: safetensors' dtype names whose elements are integers or bits, not real numbers: packed, when quantised
INTEGER_DTYPES = frozenset({"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F4", "F6_E2M3", "F6_E3M2"})
#: bytes per element of each dtype safetensors knows (sub-byte types as fractions)
DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "F8_E8M0": 1,
    "U16": 2,
    "I16": 2,
    "F16": 2,
    "BF16": 2,
    "U32": 4,
    "I32": 4,
    "F32": 4,
    "U64": 8,
    "I64": 8,
    "F64": 8,
    "F4": 0.5,
    "F6_E2M3": 0.75,
    "F6_E3M2": 0.75,
}


@dataclass(frozen=True)
class Tensor:
    """One tensor as the header describes it; ``file`` is the shard holding it, as the index names it."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str
    #: the bytes of a bitsandbytes 4-bit quantisation state (`QUANT_STATE`), the one tensor whose data is read
    content: bytes | None = None

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def packed(self) -> bool:
        """An integer tensor: when it holds quantised weights, its elements are not parameters."""
        return self.dtype in INTEGER_DTYPES


@dataclass(frozen=True)
class Checkpoint:
    """The tensors of one checkpoint, in the order of their names, and the files they were read from."""

    source: str
    files: tuple[str, ...]
    tensors: tuple[Tensor, ...]
    metadata: dict[str, str]

    @property
    def elements(self) -> int:
        """Every element of every tensor: the parameter count when nothing is packed, tied or a buffer."""
        return sum(t.numel for t in self.tensors)

    def by_dtype(self) -> dict[str, tuple[int, int]]:
        """dtype -> (tensors, elements), largest first."""
        out: dict[str, tuple[int, int]] = {}
        for t in self.tensors:
            count, elements = out.get(t.dtype, (0, 0))
            out[t.dtype] = (count + 1, elements + t.numel)
        return dict(sorted(out.items(), key=lambda item: -item[1][1]))

    def bytes(self) -> int:
        """The tensors' size on disk (the header excluded)."""
        return math.ceil(sum(t.numel * DTYPE_BYTES.get(t.dtype, 0) for t in self.tensors))

    def packed(self) -> tuple[Tensor, ...]:
        return tuple(t for t in self.tensors if t.packed)


def read_checkpoint(path: Path) -> Checkpoint:
    """The checkpoint at ``path``: a ``.safetensors`` file, a ``model.safetensors.index.json``, or a folder
    holding one of them. Raises `CheckpointError` saying which file is wrong and how."""
    path = Path(path)
    if path.is_dir():
        for name in (INDEX_NAME, SINGLE_NAME):
            if (path / name).is_file():
                return read_checkpoint(path / name)
        found = sorted(p.name for p in path.glob("*.safetensors"))
        if len(found) == 1:
            return read_checkpoint(path / found[0])
        raise CheckpointError(
            f"{path}: no {INDEX_NAME} or {SINGLE_NAME} in this folder"
            + (f", and {len(found)} other .safetensors files: name one of them" if found else "")
            + "; give the path of a .safetensors file or of a sharded checkpoint's index"
        )
    if path.name.endswith(".json"):
        return _read_index(path)
    tensors, metadata = _read_file(path, path.name)
    return Checkpoint(str(path), (path.name,), tuple(sorted(tensors, key=lambda t: t.name)), metadata)


def _read_file(path: Path, shown: str) -> tuple[list[Tensor], dict[str, str]]:
    """The tensors one safetensors file's header lists (no data is read)."""
    try:
        from safetensors import SafetensorError, safe_open
    except ImportError:
        raise CheckpointError(
            'reading checkpoints needs the safetensors library: pip install "archzoo[checkpoint]"'
        ) from None
    try:
        import numpy  # noqa: F401 (safe_open(framework="numpy") imports it on every file, and safetensors does not install it)
    except ImportError:
        raise CheckpointError(
            "reading checkpoints needs numpy, which safetensors reads headers with but does not install: "
            'pip install "archzoo[checkpoint]" (or pip install numpy)'
        ) from None
    if not path.is_file():
        raise CheckpointError(
            f"{printable(str(path))}: no such file; give a .safetensors file, an index, or their folder"
        )
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
            tensors = []
            for name in f.keys():  # noqa: SIM118 (a safe_open handle is not a dict)
                piece = f.get_slice(name)
                dtype, shape = piece.get_dtype(), tuple(piece.get_shape())
                content = None
                if QUANT_STATE in name and dtype == "U8" and len(shape) == 1 and shape[0] <= MAX_STATE_BYTES:
                    content = bytes(f.get_tensor(name).tobytes())
                tensors.append(Tensor(name, dtype, shape, shown, content))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(
            f"{printable(str(path))}: not a safetensors file ({printable(' '.join(str(exc).split())[:200])}); "
            "archzoo reads .safetensors checkpoints only (convert a .bin/.pt with transformers' save_pretrained)"
        ) from None
    return tensors, metadata


def _read_index(path: Path) -> Checkpoint:
    """A sharded checkpoint: its index's ``weight_map``, and every shard it names, each checked against it."""
    text = decode_utf8(read_user_bytes(path, CheckpointError, limit=MAX_INDEX_BYTES), str(path), CheckpointError)
    try:
        index = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise CheckpointError(f"{path}{where}: not valid JSON ({exc}); a sharded checkpoint's index is JSON") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        raise CheckpointError(
            f'{path}: weight_map: expected an object mapping each tensor name to its shard file, such as {{"lm_head.weight": '
            '"model-00002-of-00002.safetensors"}; is this a model.safetensors.index.json?'
        )
    folder = path.parent
    by_shard: dict[str, set[str]] = {}
    for name, file in weight_map.items():
        by_shard.setdefault(file, set()).add(name)
    shards = sorted(by_shard)
    tensors: list[Tensor] = []
    for shard in shards:
        # judged as written, not resolved: a download cache links each shard to a blob stored elsewhere
        written = PurePath(shard)
        if written.is_absolute() or ".." in written.parts or written.name != shard:
            raise CheckpointError(
                f"{path}: weight_map names the shard '{printable(shard)}', outside the index's folder; "
                "shards are file names beside the index"
            )
        found, _ = _read_file(folder / shard, shard)
        _check_shard(path, shard, by_shard[shard], (t.name for t in found))
        tensors.extend(found)
    metadata = index.get("metadata") if isinstance(index.get("metadata"), dict) else {}
    return Checkpoint(
        str(path),
        tuple(shards),
        tuple(sorted(tensors, key=lambda t: t.name)),
        {str(k): str(v) for k, v in (metadata or {}).items()},
    )


def _check_shard(index: Path, shard: str, listed: set[str], names: Iterable[str]) -> None:
    held = set(names)
    missing, extra = sorted(listed - held), sorted(held - listed)
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"lists {len(missing):,} tensors {shard} does not hold ({_names(missing)})")
        if extra:
            problems.append(f"omits {len(extra):,} tensors {shard} holds ({_names(extra)})")
        raise CheckpointError(
            f"{index}: weight_map {' and '.join(problems)}; the index and its shards disagree: "
            "download them again, or re-save the model"
        )


def _names(names: list[str]) -> str:
    """The first three names, as the terminal may show them, and how many more."""
    return ", ".join(printable(name) for name in names[:3]) + (
        f" and {len(names) - 3:,} more" if len(names) > 3 else ""
    )


# ---- quantised tensors ------------------------------------------------------------------------------------

#: bitsandbytes 4-bit saves the weight's shape, as JSON bytes, in ``NAME.weight.quant_state.bitsandbytes__nf4``
#: (or ``__fp4``): the one place the count of an odd number of values (the last byte half full) is written
QUANT_STATE = ".quant_state.bitsandbytes__"
#: such a state is a few hundred bytes of JSON; a larger one is not read
MAX_STATE_BYTES = 4096

#: GPTQ's and AWQ's side tensors beside a ``qweight``, and bitsandbytes 4-bit's after a ``weight.``: not parameters
GPTQ_SIDE = ("qzeros", "scales", "g_idx")
BNB_SIDE = ("absmax", "quant_map", "nested_absmax", "nested_quant_map")


def _bnb_state_of(name: str) -> str:
    """The weight a bitsandbytes 4-bit state tensor belongs to (``x.weight.absmax`` -> ``x.weight``), or ""."""
    if ".weight.quant_state." in name:
        return name.split(".weight.quant_state.", 1)[0] + ".weight"
    head, _, leaf = name.rpartition(".")
    return head if leaf in BNB_SIDE and head.endswith("weight") else ""


@dataclass(frozen=True)
class Unpacked:
    """A checkpoint's tensors with quantised weights counted as the parameters they hold: ``tensors`` as
    (name, parameters), the packed weight under the name of the weight it replaces; ``layouts`` names each
    unpacked weight's layout; ``side`` the tensors that are quantisation state; ``refused`` the packed
    tensors no layout explains, each with the reason."""

    tensors: tuple[tuple[str, int], ...]
    layouts: dict[str, str]
    side: tuple[str, ...]
    refused: dict[str, str]

    @property
    def parameters(self) -> int:
        return sum(n for _, n in self.tensors)


def unpack(checkpoint: Checkpoint) -> Unpacked:
    """``checkpoint``'s tensors with each recognised quantised weight counted unpacked (see the module's
    docstring for the layouts) and the quantisation side tensors set apart."""
    by_name = {t.name: t for t in checkpoint.tensors}
    out: list[tuple[str, int]] = []
    layouts: dict[str, str] = {}
    side: list[str] = []
    refused: dict[str, str] = {}
    for t in checkpoint.tensors:
        layer, _, leaf = t.name.rpartition(".")
        prefix = layer + "." if layer else ""
        if (
            (leaf in GPTQ_SIDE and prefix + "qweight" in by_name)
            or _bnb_state_of(t.name) in by_name
            or (leaf == "SCB" and prefix + "weight" in by_name)
            or (leaf == "weight_format" and prefix + "SCB" in by_name)
        ):
            side.append(t.name)
        elif leaf == "qweight":
            found = _gptq(t, by_name.get(prefix + "qzeros"), by_name.get(prefix + "scales"))
            if isinstance(found, str):
                refused[t.name] = found
                out.append((t.name, t.numel))
            else:
                layouts[prefix + "weight"], count = found
                out.append((prefix + "weight", count))
        elif leaf == "weight" and t.dtype == "U8" and t.name + ".absmax" in by_name:
            state = next(
                (
                    by_name[t.name + QUANT_STATE + kind]
                    for kind in ("nf4", "fp4")
                    if t.name + QUANT_STATE + kind in by_name
                ),
                None,
            )
            values = _bnb4(t, by_name[t.name + ".absmax"], state)
            if isinstance(values, str):
                refused[t.name] = values
                out.append((t.name, t.numel))
            else:
                layouts[t.name] = "bitsandbytes 4-bit: two values a byte"
                out.append((t.name, values))
        elif leaf == "weight" and t.dtype == "I8" and prefix + "SCB" in by_name:
            scb = by_name[prefix + "SCB"]
            if len(t.shape) == 2 and scb.shape != t.shape[:1]:
                refused[t.name] = (
                    f"an int8 weight {list(t.shape)} beside SCB {list(scb.shape)}: LLM.int8 stores one scale a row, "
                    f"{t.shape[0]:,}; these shapes no quantiser writes"
                )
                out.append((t.name, t.numel))
            else:
                layouts[t.name] = "bitsandbytes 8-bit (LLM.int8): one value a byte"
                out.append((t.name, t.numel))
        else:
            if t.packed and leaf in ("weight", "qweight"):
                refused[t.name] = (
                    f"an {t.dtype} weight without the side tensors of a known layout (GPTQ/AWQ qzeros and scales, "
                    "bitsandbytes absmax or SCB): how many values each element holds cannot be read from the header"
                )
            out.append((t.name, t.numel))
    return Unpacked(tuple(out), layouts, tuple(side), refused)


#: The bit widths GPTQ packs into int32 (AutoGPTQ's QuantLinear: 2, 4 and 8 bits, eight 4-bit values an int32;
#: 3 bits as 32 values in three int32s) and AWQ (the widths that divide 32: AutoAWQ writes 4).
GPTQ_BITS = (2, 3, 4, 8)
AWQ_BITS = (2, 4, 8)
#: bitsandbytes quantises 4-bit weights in blocks of 32 to 4,096 values, one absmax a block
BNB_BLOCKS = tuple(2**k for k in range(5, 13))
#: the dtypes quantisers store scales in
SCALE_DTYPES = frozenset({"F16", "BF16", "F32"})


def _gptq(qweight: Tensor, qzeros: Tensor | None, scales: Tensor | None) -> tuple[str, int] | str:
    """The layout and unpacked count of a GPTQ or AWQ ``qweight``, or why it cannot be read.

    GPTQ packs the input dimension: qweight (in·bits/32, out), scales (groups, out), qzeros (groups,
    out·bits/32). AWQ packs the output dimension: qweight (in, out·bits/32), scales (groups, out), qzeros
    (groups, out·bits/32). Shapes no quantiser writes are refused, never counted: a packing factor that is
    no bit width, scales and zeros of different group counts, more groups than input values, an empty
    dimension (where the packing cannot be read), scales that are not real numbers or zeros not int32."""
    if qweight.dtype != "I32" or len(qweight.shape) != 2:
        return f"a {qweight.dtype} qweight of shape {list(qweight.shape)}: GPTQ and AWQ pack into 2-d int32"
    if scales is None or qzeros is None or len(scales.shape) != 2 or len(qzeros.shape) != 2:
        return "a qweight without its 2-d scales and qzeros: the packing factor cannot be read from the shapes"
    shapes = f"qweight {list(qweight.shape)}, scales {list(scales.shape)}, qzeros {list(qzeros.shape)}"
    if qzeros.dtype != "I32" or scales.dtype not in SCALE_DTYPES:
        return (
            f"{shapes}: qzeros is {qzeros.dtype} and scales {scales.dtype}; GPTQ and AWQ store the zeros packed "
            "in int32 and the scales as real numbers (F16, BF16 or F32)"
        )
    rows, cols = qweight.shape
    groups, out = scales.shape
    zero_groups, zero_cols = qzeros.shape
    if 0 in (rows, cols, groups, out, zero_groups, zero_cols):
        return f"{shapes}: an empty dimension, from which the packing factor cannot be read"
    if zero_groups != groups:
        return f"{shapes}: {groups:,} groups of scales but {zero_groups:,} of zeros; a quantiser writes one of each"
    if cols == out:  # GPTQ: the input dimension is packed, qzeros packs the output one the same way
        for bits in GPTQ_BITS:
            if zero_cols * 32 == out * bits and rows * 32 % bits == 0:
                inputs = rows * 32 // bits
                if groups > inputs:
                    return f"{shapes}: {groups:,} groups for {inputs:,} input values; a group holds at least one"
                per = f"{32 // bits} values an int32" if 32 % bits == 0 else f"32 values in {bits} int32s"
                return f"GPTQ: {bits}-bit, {per}", inputs * out
        return (
            f"{shapes}: qweight is as wide as scales (GPTQ's layout), but qzeros packs {out:,} values into "
            f"{zero_cols:,} int32s, which no bit width GPTQ writes ({', '.join(map(str, GPTQ_BITS))}) gives"
        )
    for bits in AWQ_BITS:
        if cols * 32 == out * bits:  # AWQ: the output dimension is packed, in qweight and qzeros alike
            if zero_cols != cols:
                return f"{shapes}: qweight packs the output into {cols:,} int32s, qzeros into {zero_cols:,}; AWQ packs both alike"
            if groups > rows:
                return f"{shapes}: {groups:,} groups for {rows:,} input values; a group holds at least one"
            return f"AWQ: {bits}-bit, {32 // bits} values an int32", rows * out
    return f"{shapes}: neither GPTQ's layout nor AWQ's (no bit width packs these shapes)"


def _bnb4(weight: Tensor, absmax: Tensor, state: Tensor | None) -> int | str:
    """The values a bitsandbytes 4-bit ``weight`` holds, or why they cannot be counted exactly: two a byte,
    the last byte half full when the count is odd, so the count is the product of the shape its quantisation
    state records; that shape must fill the weight's bytes, and ``absmax`` hold one scale a block of 32 to
    4,096 of them."""
    if state is None or state.content is None:
        return (
            "a 4-bit weight without its quant_state.bitsandbytes__nf4 (or __fp4): two values a byte, the last "
            "maybe half full, so only the shape the state records gives the exact count"
        )
    try:
        recorded = json.loads(state.content.decode("utf-8")).get("shape")
    except (UnicodeDecodeError, ValueError, AttributeError, RecursionError):
        recorded = None
    if not (
        isinstance(recorded, list) and all(type(n) is int and 0 <= n < 2**40 for n in recorded) and len(recorded) <= 8
    ):
        return f"{printable(state.name)} holds no shape (JSON with a list of sizes): the exact count cannot be read"
    values, blocks = math.prod(recorded), absmax.numel
    if (values + 1) // 2 != weight.numel:
        return (
            f"a 4-bit weight of {weight.numel:,} bytes whose state records the shape {recorded} ({values:,} values, "
            f"{(values + 1) // 2:,} bytes): the state belongs to another weight"
        )
    if not any(-(-values // size) == blocks for size in BNB_BLOCKS):
        return (
            f"a 4-bit weight of {values:,} values beside {blocks:,} absmax: bitsandbytes writes one absmax a block "
            f"of {BNB_BLOCKS[0]} to {BNB_BLOCKS[-1]:,} values; these shapes no quantiser writes"
        )
    return values


def as_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's figures as plain data (``archzoo checkpoint --json``)."""
    unpacked = unpack(checkpoint)
    return {
        "source": checkpoint.source,
        "files": list(checkpoint.files),
        "tensors": len(checkpoint.tensors),
        "elements": checkpoint.elements,
        "bytes": checkpoint.bytes(),
        "by_dtype": {dtype: {"tensors": n, "elements": e} for dtype, (n, e) in checkpoint.by_dtype().items()},
        "packed": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape)} for t in checkpoint.packed()],
        # quantised weights counted unpacked, their side tensors left out, what could not be unpacked and why
        "parameters": unpacked.parameters,
        "unpacked": unpacked.layouts,
        "quantisation_side_tensors": list(unpacked.side),
        "refused": unpacked.refused,
    }


# ---- a checkpoint against archzoo's count -----------------------------------------------------------------


def compare_checkpoint(checkpoint: Checkpoint, architecture: Architecture, config: ArchConfig) -> Verification:
    """``checkpoint``'s tensors against archzoo's count of ``architecture`` with ``config``: the total, and each
    block that names its submodules (`archzoo.Block.modules`, as the reference class names them, which is how
    transformers names the tensors it saves). Quantised weights count unpacked (`unpack`), and names saved from
    the base class (no ``model.`` or ``bert.`` prefix) or from a head class (a prefix the base class lacks) are
    mapped onto the blocks. The notes say why the totals can differ: packed tensors no layout explains, tensors
    no block maps (buffers a checkpoint may carry), a tied weight stored twice."""
    report = make_report(architecture, config)
    plugin = architecture.plugin or architecture.name
    unpacked = unpack(checkpoint)
    notes = [f"{dtype}: {n:,} tensors, {elements:,} elements" for dtype, (n, elements) in checkpoint.by_dtype().items()]
    if unpacked.layouts:
        for layout in sorted(set(unpacked.layouts.values())):
            names = [name for name, shown in unpacked.layouts.items() if shown == layout]
            notes.append(f"{len(names):,} quantised weights ({_names(names)}) counted unpacked: {layout}")
    if unpacked.side:
        notes.append(
            f"{len(unpacked.side):,} quantisation side tensors ({_names(list(unpacked.side))}): scales, zeros and "
            "state, not parameters; left out of the checkpoint's total"
        )
    notes += refused_lines(unpacked.refused)
    tensors, renamed = unpacked.tensors, ""
    comparison = compare_blocks_to_tensors(report.root, tensors, plugin)
    loose = unmapped_tensors([name for name, _ in tensors], comparison)
    if loose and comparison.blocks:
        # a renaming is taken when more blocks find their submodules under it: not merely fewer loose tensors,
        # which any prefix of one block's module ('embeddings.') would give by putting all of them there
        found = blocks_found(comparison)
        for candidate, how in _prefix_variants(tensors, comparison):
            tried = compare_blocks_to_tensors(report.root, candidate, plugin)
            if blocks_found(tried) > found:
                tensors, comparison, renamed, found = candidate, tried, how, blocks_found(tried)
                loose = unmapped_tensors([name for name, _ in candidate], tried)
    if renamed:
        notes.append(renamed)
    if loose and comparison.blocks:
        notes.append(
            f"{len(loose):,} tensors no block maps ({_names(loose)}): buffers or weights of another class; "
            "they count in the checkpoint's total only"
        )
    rows = []
    for row in comparison.blocks:
        block = find_block(report.root, row.path)
        if block is not None and block.tied_to and row.missing and row.got == 0:
            row = replace(row, expected=0, missing=())  # a tied weight saved once, under the tensor it shares
        rows.append(row)
        if block is not None and block.tied_to and row.expected:
            notes.append(
                f"{row.path}: the checkpoint stores {row.expected:,} elements for a weight the model ties to "
                f"{block.tied_to}: the same tensor saved twice (PyTorch counts it once)"
            )
    return Verification(
        model_id="checkpoint",
        path=checkpoint.source,
        target="the checkpoint",
        how=f"{len(checkpoint.tensors):,} tensors in {len(checkpoint.files)} file(s), read from their headers",
        expected_total=unpacked.parameters,
        got_total=report.params,
        blocks=tuple(rows),
        unmapped=comparison.unmapped,
        notes=tuple(notes),
        reference={"files": list(checkpoint.files), "architecture": architecture.name},
    )


#: how many reasons the notes give one line each (every refused tensor is in --json's "refused")
MAX_REASONS = 8


def refused_lines(refused: dict[str, str]) -> list[str]:
    """One line a reason why packed tensors were not unpacked, naming the tensor (or the first three and how
    many more), for at most `MAX_REASONS` reasons and one line for the rest: a bounded text however many
    tensors a checkpoint holds."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in refused.items():
        by_reason.setdefault(reason, []).append(name)
    lines = []
    for reason, names in list(by_reason.items())[:MAX_REASONS]:
        which = printable(names[0]) if len(names) == 1 else f"{len(names):,} tensors ({_names(names)})"
        lines.append(f"{which}: packed, not unpacked: {printable(reason)}; the totals cannot agree")
    rest = list(by_reason.values())[MAX_REASONS:]
    if rest:
        lines.append(
            f"{sum(map(len, rest)):,} more packed tensors not unpacked, for {len(rest):,} other reasons "
            "(--json lists each tensor with its reason)"
        )
    return lines


#: how many wrapping prefixes are tried (the ones under which most tensor names would find a submodule)
MAX_WRAPPERS = 8


def _prefix_variants(
    tensors: tuple[tuple[str, int], ...], comparison: BlockComparison
) -> Iterable[tuple[tuple[tuple[str, int], ...], str]]:
    """The tensors renamed as if saved from the base class (a prefix the class has, added: ``model.``,
    ``bert.``) or from a head class (a prefix it lacks, dropped), each with the note that says so.

    The prefixes to add are the class's own, a handful. A prefix to drop is tried only when names under it
    would start like one of the class's submodules, and only the `MAX_WRAPPERS` under which most names would:
    each try compares every tensor again, and a checkpoint of thousands of distinct first names
    (``layer0.weight``, ``layer1.weight``, ...) would otherwise be compared thousands of times."""
    modules = [m for row in comparison.blocks for m in row.modules if m]
    firsts = {m.split(".", 1)[0] for m in modules if "." in m}
    starts = {m.split(".", 1)[0] for m in modules}
    heads: dict[str, int] = {}
    for name, _ in tensors:
        head, dot, rest = name.partition(".")
        if dot:
            heads.setdefault(head, 0)
            if rest.split(".", 1)[0] in starts:
                heads[head] += 1
    for prefix in sorted(firsts - set(heads)):
        yield (
            tuple((f"{prefix}.{name}", n) for name, n in tensors),
            f"the tensor names lack the class's {printable(prefix + '.')!r} prefix (saved from the base class): mapped with it",
        )
    wrappers = sorted(
        (prefix for prefix, hits in heads.items() if hits and prefix not in firsts), key=lambda p: -heads[p]
    )
    for prefix in sorted(wrappers[:MAX_WRAPPERS]):
        cut = len(prefix) + 1
        yield (
            tuple((name[cut:] if name.startswith(prefix + ".") else name, n) for name, n in tensors),
            f"the tensor names carry a {printable(prefix + '.')!r} prefix the class lacks (saved from a class that "
            "wraps it): mapped without it",
        )
