"""Checkpoints read from their headers: every tensor's name, dtype and shape, with no weight loaded and no torch.

A safetensors file starts with a JSON header listing its tensors; the ``safetensors`` library reads just
that. A sharded checkpoint adds ``model.safetensors.index.json``, whose ``weight_map`` names the shard
holding each tensor. `read_checkpoint` takes either file, or the folder holding them, and returns a
`Checkpoint`: the tensors, their element counts by dtype, and the integer tensors whose element count is
not a parameter count (quantised weights are packed: GPTQ's ``int32`` ``qweight`` holds eight 4-bit
values per element).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from .errors import CheckpointError
from .files import decode_utf8, read_user_bytes

if TYPE_CHECKING:
    from .architecture import ArchConfig, Architecture
    from .blocks import Block
    from .verify import Verification

__all__ = ["INDEX_NAME", "SINGLE_NAME", "Checkpoint", "Tensor", "compare_checkpoint", "read_checkpoint"]

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
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file; give a .safetensors file, an index, or their folder")
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
            tensors = []
            for name in f.keys():  # noqa: SIM118 (a safe_open handle is not a dict)
                piece = f.get_slice(name)
                tensors.append(Tensor(name, piece.get_dtype(), tuple(piece.get_shape()), shown))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(
            f"{path}: not a safetensors file ({' '.join(str(exc).split())[:200]}); "
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
                f"{path}: weight_map names the shard {shard!r}, outside the index's folder; "
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
    return ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")


def as_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """The checkpoint's figures as plain data (``archzoo checkpoint --json``)."""
    return {
        "source": checkpoint.source,
        "files": list(checkpoint.files),
        "tensors": len(checkpoint.tensors),
        "elements": checkpoint.elements,
        "bytes": checkpoint.bytes(),
        "by_dtype": {dtype: {"tensors": n, "elements": e} for dtype, (n, e) in checkpoint.by_dtype().items()},
        "packed": [{"name": t.name, "dtype": t.dtype, "shape": list(t.shape)} for t in checkpoint.packed()],
    }


# ---- a checkpoint against archzoo's count -----------------------------------------------------------------


def compare_checkpoint(checkpoint: Checkpoint, architecture: Architecture, config: ArchConfig) -> Verification:
    """``checkpoint``'s tensors against archzoo's count of ``architecture`` with ``config``: the total, and each
    block that names its submodules (`archzoo.Block.modules`, as the reference class names them, which is how
    transformers names the tensors it saves). The notes say why the totals can differ: integer tensors that
    pack quantised weights, tensors no block maps (buffers a checkpoint may carry), a tied weight stored twice."""
    from .report import make_report
    from .verify import Verification, compare_blocks_to_tensors

    report = make_report(architecture, config)
    comparison = compare_blocks_to_tensors(
        report.root, ((t.name, t.numel) for t in checkpoint.tensors), architecture.plugin or architecture.name
    )
    notes = [f"{dtype}: {n:,} tensors, {elements:,} elements" for dtype, (n, elements) in checkpoint.by_dtype().items()]
    packed = checkpoint.packed()
    if packed:
        notes.append(
            f"{len(packed):,} integer tensors ({_names([t.name for t in packed])}): quantised weights are packed, so "
            "their elements are not parameters and the totals cannot agree"
        )
    mapped = [m for row in comparison.blocks for m in row.modules if m and "<i>" not in m]
    mapped_copies = [m.split("<i>")[0] for row in comparison.blocks for m in row.modules if "<i>" in m]
    loose = [
        t.name
        for t in checkpoint.tensors
        if not any(t.name == m or t.name.startswith(m + ".") for m in mapped)
        and not any(t.name.startswith(prefix) for prefix in mapped_copies)
    ]
    if loose and comparison.blocks:
        notes.append(
            f"{len(loose):,} tensors no block maps ({_names(loose)}): buffers or weights of another class; "
            "they count in the checkpoint's total only"
        )
    rows = []
    for row in comparison.blocks:
        block = _block(report.root, row.path)
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
        expected_total=checkpoint.elements,
        got_total=report.params,
        blocks=tuple(rows),
        unmapped=comparison.unmapped,
        notes=tuple(notes),
        reference={"files": list(checkpoint.files), "architecture": architecture.name},
    )


def _block(root: Block, path: str) -> Block | None:
    return next((visit.block for visit in root.visits() if visit.path == path), None)
