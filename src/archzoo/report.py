"""Reports: a model's block tree evaluated into counts, FLOPs and memory, with the formulas behind them.

`make_report` is the one place a configuration becomes numbers; the CLI, the registry and the site
all read `Report`. Its `to_dict` is the documented JSON schema (``archzoo.report/1``).

FLOPs come in four phases, each read off the one block tree (`archzoo.blocks`): one forward pass, one
training step (forward and backward), and the two calls of generation with a key/value cache (prefill of
the prompt, one decode step). ``units="macs"`` halves every FLOP figure and formula and says so: a
multiply-accumulate is two FLOPs, and archzoo counts only matmul-class work, where that is exact.
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
from .memory import memory_dict

__all__ = [
    "DTYPE_BITS",
    "SCHEMA",
    "UNITS",
    "Approximation",
    "Report",
    "check_seq_len",
    "check_units",
    "human_bytes",
    "human_count",
    "in_units",
    "make_report",
]

SCHEMA = "archzoo.report/1"

#: What FLOP figures are given in: FLOPs (the default), or multiply-accumulates (every figure halved).
UNITS = ("flops", "macs")

#: Why an architecture has no prefill or decode figures: no causal self-attention, so nothing is cached.
NOT_GENERATIVE = (
    "an encoder only: no causal self-attention, so no key/value cache, no prefill and no decode step "
    "(every token is read in one forward pass)"
)

#: Why a model with causal self-attention has no prefill or decode figures: its class is not run that way.
NO_CACHE = (
    "its class does not run generation's cached calls (it keeps no key/value cache, or its head reads the whole "
    "sequence), so no prefill and no decode step: every call reads the whole sequence in one forward pass"
)

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


def check_units(units: str) -> str:
    """``units`` checked: ``flops`` or ``macs``."""
    if units not in UNITS:
        raise ConfigError(f"units {units!r}: expected one of {', '.join(UNITS)} (macs halves every FLOP figure)")
    return units


def in_units(flops: Poly, units: str) -> Poly:
    """A FLOP formula in ``units``: as it is, or halved into multiply-accumulates. archzoo's FLOPs are all
    matmul-class (``2 x`` the multiply-accumulates), so every coefficient is even and the halving exact."""
    if check_units(units) == "flops":
        return flops
    odd = [c for c in flops.terms.values() if c % 2]
    if odd:  # not a count of multiply-accumulates: a formula that counts other work
        raise ValueError(f"{flops.text()}: an odd coefficient ({odd[0]}) cannot be halved into MACs")
    return Poly({m: c // 2 for m, c in flops.terms.items()}, flops.symbols)


def _count(flops: int | float, units: str) -> int | float:
    """A FLOP figure in ``units`` (an approximation's odd figure halves to a float)."""
    if check_units(units) == "flops":
        return flops
    return flops // 2 if isinstance(flops, int) and flops % 2 == 0 else flops / 2


@dataclass(frozen=True)
class Approximation:
    """A published rule of thumb for a training step's FLOPs, beside the exact figure.

    ``flops`` is None where the rule needs something the architecture does not have, and ``omitted`` says
    what; ``error`` is ``(approximation - exact) / exact``."""

    name: str
    formula: str
    source: str
    flops: int | None
    exact: int
    omitted: str = ""

    @property
    def error(self) -> float | None:
        return None if self.flops is None or not self.exact else (self.flops - self.exact) / self.exact

    def to_dict(self, units: str = "flops") -> dict[str, Any]:
        return {
            "name": self.name,
            "formula": self.formula,
            "source": self.source,
            "flops": None if self.flops is None else _count(self.flops, units),
            "relative_error": self.error,
            "omitted": self.omitted or None,
        }


KAPLAN = "Kaplan et al. 2020, Scaling Laws for Neural Language Models (arXiv:2001.08361), Section 2.1: C ≈ 6 N"
HOFFMANN = (
    "Hoffmann et al. 2022, Training Compute-Optimal Large Language Models (arXiv:2203.15556), Appendix F "
    "(FLOPs computation): embeddings, attention (QKV, logits, softmax, AV, output), dense block, final logits; "
    "backward 2x forward"
)


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

    # ---- FLOPs beyond one forward pass ---------------------------------------------------------
    @property
    def training_formula(self) -> Poly:
        """One training step: the forward pass and its backward (`archzoo.blocks`, ``backward_flops``)."""
        return self.root.flops + self.root.backward_flops

    @property
    def backward_flops(self) -> int:
        return self.root.backward_flops.evaluate(N=self.seq_len)

    @property
    def training_flops(self) -> int:
        """FLOPs of one training step of batch 1 at N tokens: forward and backward."""
        return self.training_formula.evaluate(N=self.seq_len)

    @property
    def generative(self) -> bool:
        """Whether the model generates with a key/value cache: it has causal self-attention."""
        return not self.root.kv_cache.is_zero()

    @property
    def prefill_flops(self) -> int | None:
        """Generation's first call over N prompt (an encoder-decoder: source) tokens; None for an encoder."""
        return self.root.prefill_flops.evaluate(N=self.seq_len) if self.generative else None

    @property
    def decode_flops(self) -> int | None:
        """One cached decode step at context N (source N for an encoder-decoder); None for an encoder."""
        return self.decode_at(self.seq_len) if self.generative else None

    def decode_at(self, context: int, source: int | None = None) -> int:
        """One cached decode step: the one reading position ``context`` (``context - 1`` tokens cached), an
        encoder-decoder's cross-attention over ``source`` source tokens (default: ``context``)."""
        return self.root.decode_flops.evaluate(N=context, S=context if source is None else source)

    @property
    def generation_note(self) -> str | None:
        """Why prefill and decode are None, or None when they are given."""
        if self.generative:
            return None
        causal = any(v.block.kind == "self_attention" and "causal" in v.block.description for v in self.root.visits())
        return NO_CACHE if causal else NOT_GENERATIVE

    def _symbol_values(self) -> dict[str, int]:
        return {s["name"]: s["value"] for s in self.symbols()}

    def _first_width(self, kind: str, leaf: str) -> int | None:
        """The input width of the first ``kind`` block's ``leaf`` linear, read off its FLOPs for one token."""
        d = self._symbol_values().get("d")
        for visit in self.root.visits():
            if visit.block.kind == kind and d:
                for child in visit.block.children:
                    if child.name == leaf:
                        return child.flops.evaluate(N=1) // (2 * d)
        return None

    def approximations(self) -> list[Approximation]:
        """The usual rules for a training step's FLOPs, each with its error against the exact figure:
        ``6·params·tokens``, ``6·non-embedding params·tokens`` (Kaplan et al. 2020), and Hoffmann et al.
        2022's Appendix F formula from the report's symbols (omitted, with the reason, where the
        architecture lacks what it needs)."""
        n, exact = self.seq_len, self.training_flops
        out = [
            Approximation("6·params·tokens", "6·P·N", KAPLAN, 6 * self.params * n, exact),
            Approximation("6·non-embedding params·tokens", "6·P_ne·N", KAPLAN, 6 * self.non_embedding * n, exact),
        ]
        values = self._symbol_values()
        heads = values.get("h") or getattr(self.config, "n_heads", None)
        width = values["h"] * values["d_h"] if "h" in values and "d_h" in values else None
        width = width or self._first_width("self_attention", "out_proj")
        d_ff = values.get("d_ff") or self._first_width("feed_forward", "fc_out")
        formula = "3·(2·N·V·d + L·(2·3·N·d·(d_h·h) + 2·N²·(d_h·h) + 3·h·N² + 2·N²·(d_h·h) + 2·N·(d_h·h)·d + 2·N·2·d·d_ff) + 2·N·d·V)"
        missing = ""
        if "L" not in values:
            missing = "it describes one stack of L layers (this model has an encoder and a decoder)"
        elif "V" not in values:
            missing = "it needs a vocabulary (embeddings and final logits): this model has none"
        elif self.active_params != self.params:
            missing = "it describes dense layers: a mixture of experts' router and k-of-E experts are not in it"
        elif not (heads and width and d_ff):
            missing = "it needs heads, the attention width and d_ff, which this architecture does not give"
        flops = None
        if not missing:
            L, V, d = values["L"], values["V"], values["d"]
            assert heads and width and d_ff  # for the type checker: checked just above
            layer = (
                2 * 3 * n * d * width
                + 2 * n * n * width
                + 3 * heads * n * n
                + 2 * n * n * width
                + 2 * n * width * d
                + 2 * n * 2 * d * d_ff
            )
            flops = 3 * (2 * n * V * d + L * layer + 2 * n * d * V)
        out.append(Approximation("Hoffmann et al. 2022, Appendix F", formula, HOFFMANN, flops, exact, missing))
        return out

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
        polys = [self.root.params, self.root.flops, self.root.kv_cache, self.root.cross_kv_cache]
        if self.generative:
            polys.append(self.root.decode_flops)
        for poly in polys:
            for s in poly.used_symbols():
                seen.setdefault(s.name, s)
        return [
            {
                "name": s.name,
                "latex": s.tex(),
                "value": s.value if s.name not in ("N", "S") else self.seq_len,
                "meaning": s.meaning,
                "definition": s.definition,
            }
            for s in seen.values()
        ]

    def visit_dict(self, visit: BlockVisit, units: str = "flops") -> dict[str, Any]:
        """One block of the tree as JSON, without its children: ``params`` for all its stored copies and
        ``params_each`` for one, ``flops`` (and ``training_flops``) for all its executed copies (`BlockVisit`),
        in ``units``."""
        block = visit.block
        n = self.seq_len
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
            "flops": in_units(visit.flops, units).evaluate(N=n),
            "training_flops": in_units(visit.training_flops, units).evaluate(N=n),
            "formula": _formula(visit.params),
            "formula_each": _formula(block.params),
            "flops_formula": _formula(in_units(visit.flops, units)),
        }
        if self.generative:
            out["prefill_flops"] = in_units(visit.prefill_flops, units).evaluate(N=n)
            out["decode_flops"] = in_units(visit.decode_flops, units).evaluate(N=n, S=n)
        if block.repeat is not None:
            out["repeat"] = block.repeat.evaluate()
            out["shared"] = block.shared
            if block.copies is not None:
                out["copies"] = block.copies.evaluate()
        if block.tied_to:
            out["tied_to"] = block.tied_to
        return out

    def blocks_dict(self, units: str = "flops") -> dict[str, Any]:
        """The block tree as nested JSON objects, each with its ``children``, read off `Block.visits`."""
        open_: list[dict[str, Any]] = []  # the blocks above the current one, by depth
        for visit in self.root.visits():
            out = {**self.visit_dict(visit, units), "children": []}
            del open_[visit.depth :]
            if open_:
                open_[-1]["children"].append(out)
            open_.append(out)
        return open_[0]

    def flops_dict(self, units: str = "flops") -> dict[str, Any]:
        """The ``flops`` section of `to_dict`, in ``units`` (``flops`` or ``macs``: every figure and formula
        halved; ``units`` says which)."""
        n = self.seq_len
        rest = self.root.flops - self.root.attention_flops

        def figure(poly: Poly, **free: int) -> int:
            return in_units(poly, units).evaluate(N=n, **free)

        prefill = self.root.prefill_flops if self.generative else None
        decode = self.root.decode_flops if self.generative else None
        return {
            "units": units,
            "seq_len": n,
            "forward": figure(self.root.flops),
            "attention": figure(self.root.attention_flops),
            "other": figure(rest),
            "formula": _formula(in_units(self.root.flops, units)),
            "attention_formula": _formula(in_units(self.root.attention_flops, units)),
            "other_formula": _formula(in_units(rest, units)),
            "complexity": self.root.flops.complexity(),
            "attention_overtakes_at": self.attention_overtakes_at,
            "backward": figure(self.root.backward_flops),
            "training": figure(self.training_formula),
            "training_formula": _formula(in_units(self.training_formula, units)),
            "training_approximations": [a.to_dict(units) for a in self.approximations()],
            "prefill": None if prefill is None else figure(prefill),
            "prefill_formula": None if prefill is None else _formula(in_units(prefill, units)),
            "decode": None if decode is None else figure(decode, S=n),
            "decode_formula": None if decode is None else _formula(in_units(decode, units)),
            "generation_note": self.generation_note,
        }

    def to_dict(self, units: str = "flops") -> dict[str, Any]:
        """The report as JSON (``archzoo.report/1``); FLOP figures in ``units`` (``flops`` or ``macs``)."""
        check_units(units)
        kv = self.kv_cache_elements_per_token
        cross_kv = self.cross_kv_cache_elements_per_source_token
        return {
            "schema": SCHEMA,
            "units": units,
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
            "flops": self.flops_dict(units),
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
                "step": memory_dict(self),  # activations (eager, fused, recomputed), Korthikanti, both peaks
            },
            "symbols": self.symbols(),
            "blocks": self.blocks_dict(units),
        }


def make_report(
    arch: Architecture, config: ArchConfig, seq_len: int | None = None, *, seq_len_name: str = "seq_len"
) -> Report:
    """Build the architecture's block tree for ``config`` and evaluate it at ``seq_len`` (checked by
    `check_seq_len`, whose errors call it ``seq_len_name``; None: the configuration's own length)."""
    n = check_seq_len(arch, config, seq_len, name=seq_len_name)
    return Report(arch, config, build_blocks(arch, config), n)
