"""Reports: a model's block tree evaluated into counts, FLOPs and memory, with the formulas behind them.

`make_report` is the one place a configuration becomes numbers; the CLI, the registry and the site
all read `Report`. Its `to_dict` is the documented JSON schema (``archzoo.report/1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from functools import cached_property
from typing import Any

from .architecture import MAX_SIZE, ArchConfig, Architecture, size_text
from .blocks import Block, BlockVisit, active_params
from .errors import ConfigError
from .formula import Poly
from .host import build_blocks, call_plugin

__all__ = ["DTYPE_BITS", "SCHEMA", "Report", "check_seq_len", "human_bytes", "human_count", "make_report"]

SCHEMA = "archzoo.report/1"

#: Bits per parameter for the weight sizes a report lists.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "int8": 8, "int4": 4}


def human_count(n: int | float) -> str:
    """``109482240`` -> ``109.5M``; ``1557611200`` -> ``1.56B``; ``999999999`` -> ``1.00B``.

    Rounded once, half up, from the exact value: three significant digits below 10, else one decimal.
    """
    value = Decimal(n)
    if abs(value) >= 10**15:
        return f"{value:.3E}"
    units = (("T", 12), ("B", 9), ("M", 6), ("K", 3))
    for i, (unit, exponent) in enumerate(units):
        scaled = value.scaleb(-exponent)
        if abs(scaled) < 1:
            continue
        digits = Decimal("0.01") if abs(scaled) < 10 else Decimal("0.1")
        shown = scaled.quantize(digits, ROUND_HALF_UP)
        if abs(shown) >= 10 and digits == Decimal("0.01"):  # 9.996 -> 10.0, not 10.00
            shown = scaled.quantize(Decimal("0.1"), ROUND_HALF_UP)
        if abs(shown) >= 1000 and i:  # 999.96M -> 1.00B
            bigger, big_exponent = units[i - 1]
            return f"{value.scaleb(-big_exponent).quantize(Decimal('0.01'), ROUND_HALF_UP)}{bigger}"
        return f"{shown}{unit}"
    return f"{value:.0f}"


def human_bytes(n: int | float) -> str:
    """Decimal units, as disk and download sizes are quoted: ``437.9 MB``."""
    value = Decimal(n)
    for unit, exponent in (("TB", 12), ("GB", 9), ("MB", 6), ("kB", 3)):
        if value >= Decimal(10) ** exponent:
            return f"{value.scaleb(-exponent).quantize(Decimal('0.1'), ROUND_HALF_UP):,} {unit}"
    return f"{value:.0f} B"


def _formula(poly: Poly) -> dict[str, str]:
    return {"text": poly.text(), "latex": poly.latex(), "substituted": poly.text(substitute=True)}


def attention_overtakes_at(attention: Poly, rest: Poly) -> int | None:
    """The smallest N at which the attention products cost more FLOPs than everything else.

    Attention is ``a N²`` and the rest ``b N + c`` (a, b, c ≥ 0); the answer is found by doubling and then
    bisecting on exact integers, so it takes a few dozen evaluations whatever the sizes.
    """
    if attention.is_zero() or attention.degree_in("N") != 2 or rest.degree_in("N") > 1:
        return None
    if attention.evaluate(N=1) <= 0:
        return None

    def overtakes(n: int) -> bool:
        return attention.evaluate(N=n) > rest.evaluate(N=n)

    high = 1
    while not overtakes(high):
        high *= 2
    low = high // 2  # overtakes(low) is false, or low == 0
    while high - low > 1:
        middle = (low + high) // 2
        if overtakes(middle):
            high = middle
        else:
            low = middle
    return high


def check_seq_len(arch: Architecture, config: ArchConfig, seq_len: Any, *, name: str = "seq_len") -> int:
    """The sequence length a report evaluates at: ``seq_len`` checked, or the configuration's own.

    One check for the Python API, the CLI and the site: a positive integer within `MAX_SIZE`, the fixed N
    of an architecture whose N is set by its configuration (image tokens), and no longer than the
    positions the configuration has. ``name`` is how the caller calls it (``--seq-len`` on the CLI).
    """
    default = call_plugin(arch.plugin, "seq_len", arch.seq_len, config)
    if seq_len is None:
        return default
    if isinstance(seq_len, bool) or not isinstance(seq_len, int):
        raise ConfigError(f"{name}: expected a positive integer, got {type(seq_len).__name__} {seq_len!r}")
    if seq_len == default:  # the configuration's own N (an image's patches may number beyond MAX_SIZE)
        return default
    if seq_len < 1:
        raise ConfigError(f"{name} {seq_len}: must be at least 1 (the number of tokens of one forward pass)")
    if seq_len > MAX_SIZE:
        raise ConfigError(f"{name} {size_text(seq_len)}: larger than archzoo's limit for a size, {MAX_SIZE:,}")
    if arch.seq_len_fixed and seq_len != default:
        note = call_plugin(arch.plugin, "seq_len_note", arch.seq_len_note, config)
        raise ConfigError(
            f"{name} {seq_len}: {arch.name} always runs at N = {default} ({note}); change the configuration instead"
        )
    if arch.max_seq_len is not None:
        longest = call_plugin(arch.plugin, "max_seq_len", arch.max_seq_len, config)
        if seq_len > longest:
            raise ConfigError(
                f"{name} {seq_len}: longer than the {longest:,} positions this configuration has; "
                f"raise max_positions or give a shorter {name}"
            )
    return seq_len


@dataclass(frozen=True)
class Report:
    """A configuration of an architecture, evaluated."""

    architecture: Architecture
    config: ArchConfig
    root: Block
    seq_len: int

    # ---- parameters ----------------------------------------------------------------------------
    @property
    def params(self) -> int:
        return self.root.params.evaluate()

    @property
    def approx(self) -> int:
        return self.root.approx.evaluate()

    @cached_property
    def active_formula(self) -> Poly:
        """The parameters one token uses in one forward pass (`archzoo.blocks.active_params`)."""
        return active_params(self.root)

    @property
    def active_params(self) -> int:
        """What one token uses of the parameters: the total for a dense model, ``k`` of ``E`` experts."""
        return self.active_formula.evaluate()

    @property
    def embedding_params(self) -> int:
        return self.root.embedding_params.evaluate()

    @property
    def non_embedding(self) -> int:
        return self.params - self.embedding_params

    # ---- FLOPs ---------------------------------------------------------------------------------
    @property
    def flops(self) -> int:
        return self.root.flops.evaluate(N=self.seq_len)

    @property
    def attention_flops(self) -> int:
        return self.root.attention_flops.evaluate(N=self.seq_len)

    def flops_at(self, seq_len: int) -> tuple[int, int]:
        """``(total, attention)`` forward FLOPs at another sequence length."""
        return self.root.flops.evaluate(N=seq_len), self.root.attention_flops.evaluate(N=seq_len)

    @property
    def attention_overtakes_at(self) -> int | None:
        return attention_overtakes_at(self.root.attention_flops, self.root.flops - self.root.attention_flops)

    # ---- memory --------------------------------------------------------------------------------
    def weight_bytes(self) -> dict[str, int]:
        """Bytes of the weights alone in each dtype (int4 packs two parameters a byte, rounded up)."""
        return {dtype: -(-self.params * bits // 8) for dtype, bits in DTYPE_BITS.items()}

    @property
    def kv_cache_elements_per_token(self) -> int:
        """Key/value elements causal self-attention caches per token (all layers)."""
        return self.root.kv_cache.evaluate()

    @property
    def cross_kv_cache_elements_per_source_token(self) -> int:
        """Key/value elements cross-attention caches per source token (an encoder-decoder's decoder)."""
        return self.root.cross_kv_cache.evaluate()

    def training_bytes_adam(self) -> dict[str, int]:
        """Weights, gradients and Adam's two moments, per parameter; activations are not included.

        fp32: 4 (weights) + 4 (gradients) + 8 (Adam m and v) = 16 bytes per parameter.
        mixed precision: 2 (bf16 weights) + 2 (bf16 gradients) + 4 (fp32 master copy) + 8 (m and v) = 16.
        """
        return {"fp32": 16 * self.params, "mixed_bf16": 16 * self.params}

    # ---- output --------------------------------------------------------------------------------
    def symbols(self) -> list[dict[str, Any]]:
        seen: dict[str, Any] = {}
        for poly in (self.root.params, self.root.flops, self.root.kv_cache, self.root.cross_kv_cache):
            for s in poly.used_symbols():
                seen.setdefault(s.name, s)
        return [
            {
                "name": s.name,
                "latex": s.tex(),
                "value": s.value if s.name != "N" else self.seq_len,
                "meaning": s.meaning,
                "definition": s.definition,
            }
            for s in seen.values()
        ]

    def visit_dict(self, visit: BlockVisit) -> dict[str, Any]:
        """One block of the tree as JSON, without its children: ``params`` for all its stored copies and
        ``params_each`` for one, ``flops`` for all its executed copies (`BlockVisit`)."""
        block = visit.block
        out: dict[str, Any] = {
            "name": block.name,
            "path": visit.path,
            "kind": block.kind,
            "description": block.description,
            "stored": visit.stored.evaluate(),
            "executed": visit.executed.evaluate(),
            "params": visit.params.evaluate(),
            "params_each": block.params.evaluate(),
            "approx": visit.approx.evaluate(),
            "flops": visit.flops.evaluate(N=self.seq_len),
            "formula": _formula(visit.params),
            "formula_each": _formula(block.params),
            "flops_formula": _formula(visit.flops),
        }
        if block.repeat is not None:
            out["repeat"] = block.repeat.evaluate()
            out["shared"] = block.shared
            if block.copies is not None:
                out["copies"] = block.copies.evaluate()
        if block.tied_to:
            out["tied_to"] = block.tied_to
        return out

    def blocks_dict(self) -> dict[str, Any]:
        """The block tree as nested JSON objects, each with its ``children``, read off `Block.visits`."""
        open_: list[dict[str, Any]] = []  # the blocks above the current one, by depth
        for visit in self.root.visits():
            out = {**self.visit_dict(visit), "children": []}
            del open_[visit.depth :]
            if open_:
                open_[-1]["children"].append(out)
            open_.append(out)
        return open_[0]

    def to_dict(self) -> dict[str, Any]:
        rest = self.root.flops - self.root.attention_flops
        kv = self.kv_cache_elements_per_token
        cross_kv = self.cross_kv_cache_elements_per_source_token
        return {
            "schema": SCHEMA,
            "architecture": self.architecture.name,
            "config": self.config.model_dump(mode="json"),
            "params": {
                "total": self.params,
                "approx": self.approx,
                "non_embedding": self.non_embedding,
                "embedding": self.embedding_params,
                "active": self.active_params,
                "formula": _formula(self.root.params),
                "active_formula": _formula(self.active_formula),
                "approx_formula": _formula(self.root.approx),
            },
            "flops": {
                "seq_len": self.seq_len,
                "forward": self.flops,
                "attention": self.attention_flops,
                "other": self.flops - self.attention_flops,
                "formula": _formula(self.root.flops),
                "attention_formula": _formula(self.root.attention_flops),
                "other_formula": _formula(rest),
                "complexity": self.root.flops.complexity(),
                "attention_overtakes_at": self.attention_overtakes_at,
            },
            "memory": {
                "weights_bytes": self.weight_bytes(),
                "kv_cache_bytes_per_token": ({"fp32": 4 * kv, "fp16": 2 * kv} if kv else None),
                "kv_cache_formula": _formula(self.root.kv_cache) if kv else None,
                "kv_cache": {
                    "elements_per_token": kv,
                    "cross_elements_per_source_token": cross_kv,
                    "cross_formula": _formula(self.root.cross_kv_cache) if cross_kv else None,
                },
                "training_bytes_adam": self.training_bytes_adam(),
            },
            "symbols": self.symbols(),
            "blocks": self.blocks_dict(),
        }


def make_report(
    arch: Architecture, config: ArchConfig, seq_len: int | None = None, *, seq_len_name: str = "seq_len"
) -> Report:
    """Build the architecture's block tree for ``config`` and evaluate it at ``seq_len`` (checked by
    `check_seq_len`, whose errors call it ``seq_len_name``; None: the configuration's own length)."""
    n = check_seq_len(arch, config, seq_len, name=seq_len_name)
    return Report(arch, config, build_blocks(arch, config), n)
