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
from functools import cached_property
from typing import Any

from .architecture import MAX_SIZE, ArchConfig, Architecture, size_text
from .blocks import Block, BlockVisit, active_params, windowed_decode, windows
from .errors import ConfigError
from .figures import UNITS, check_units, count_in_units, human_bytes, human_count, in_units
from .formula import Poly
from .host import build_blocks, call_plugin
from .report_json import SCHEMA, blocks_dict, flops_dict, report_dict, visit_dict

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
            "flops": None if self.flops is None else count_in_units(self.flops, units),
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
            # the key that holds the positions, where one does (max_positions; Whisper's max_target_positions)
            keys = [key for key, value in config if "positions" in key and type(value) is int and value == longest]
            if not keys:  # a bound the family sets for a reason of its own, which its seq_len_note says
                note = call_plugin(arch.plugin, "seq_len_note", arch.seq_len_note, config)
                raise ConfigError(
                    f"{name} {seq_len}: longer than {longest:,}, the longest N this configuration is counted at "
                    f"({note}); give a shorter {name}"
                )
            more = f"raise {keys[0]}" if len(keys) == 1 else "give the configuration more positions"
            raise ConfigError(
                f"{name} {seq_len}: longer than the {longest:,} positions this configuration has; "
                f"{more} or give a shorter {name}"
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
        return self.decode_formula(context).evaluate(N=context, S=context if source is None else source)

    @cached_property
    def windows(self) -> tuple[BlockVisit, ...]:
        """The tree's sliding-window attention blocks (`archzoo.blocks.windows`), outermost only."""
        return windows(self.root)

    def decode_of(self, visit: BlockVisit, context: int) -> Poly:
        """The decode step's formula at ``context`` for the copies of one block: ``visit.decode_flops``, except
        that a sliding-window block attends to ``W`` keys once the context passes ``W``
        (`archzoo.blocks.windowed_decode`), so that block's part reads ``W`` instead of ``N``."""
        formula = visit.decode_flops
        for windowed in self.windows:
            window = windowed.block.window
            if visit.path == windowed.path or visit.path.startswith(windowed.path + "."):  # at or under it
                return windowed_decode(formula, window, context)
            if windowed.path.startswith(visit.path + "."):  # one of the blocks under this one
                formula = formula - windowed.decode_flops + windowed_decode(windowed.decode_flops, window, context)
        return formula

    def decode_windows(self, context: int) -> list[int]:
        """The sliding windows ``W < context``: those whose layers' decode step at ``context`` reads ``W`` keys."""
        widths = {window.evaluate() for v in self.windows if (window := v.block.window) is not None}
        return sorted(w for w in widths if w < context)

    def decode_formula(self, context: int) -> Poly:
        """The whole decode step's formula at ``context`` (`decode_of` the root)."""
        return self.decode_of(next(self.root.visits()), context)

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

    def _tree_heads(self) -> int | None:
        """The query heads the first self-attention block records (`Block.heads`), or None."""
        for visit in self.root.visits():
            if visit.block.kind == "self_attention" and visit.block.heads is not None:
                return visit.block.heads.evaluate()
        return None

    @cached_property
    def layers_beyond_n(self) -> bool:
        """Whether some layers run over a number of tokens N does not set: a feed-forward whose FLOPs are not
        N tokens' worth (CLIP's image tower over its patches, Whisper's encoder over 30 s of frames). Rules and
        estimates that take every layer to run over N tokens do not describe such a model."""
        for visit in self.root.visits():
            if visit.block.kind == "feed_forward":
                flops = visit.block.flops
                if flops.evaluate(N=2) != 2 * flops.evaluate(N=1):
                    return True
        return False

    def approximations(self) -> list[Approximation]:
        """The usual rules for a training step's FLOPs, each with its error against the exact figure:
        ``6·params·tokens``, ``6·non-embedding params·tokens`` (Kaplan et al. 2020), and Hoffmann et al.
        2022's Appendix F formula from the report's symbols (omitted, with the reason, where the
        architecture lacks what it needs)."""
        n, exact = self.seq_len, self.training_flops
        beyond = (
            "it takes every parameter to see the N tokens, and some of this model's layers run over a number of "
            "tokens N does not set (an image's patches, a fixed span of audio frames)"
            if self.layers_beyond_n
            else ""
        )
        out = [
            Approximation("6·params·tokens", "6·P·N", KAPLAN, None if beyond else 6 * self.params * n, exact, beyond),
            Approximation(
                "6·non-embedding params·tokens",
                "6·P_ne·N",
                KAPLAN,
                None if beyond else 6 * self.non_embedding * n,
                exact,
                beyond,
            ),
        ]
        values = self._symbol_values()
        heads = values.get("h") or self._tree_heads() or getattr(self.config, "n_heads", None)
        width = values["h"] * values["d_h"] if "h" in values and "d_h" in values else None
        width = width or self._first_width("self_attention", "out_proj")
        d_ff = values.get("d_ff") or self._first_width("feed_forward", "fc_out")
        formula = "3·(2·N·V·d + L·(2·3·N·d·(d_h·h) + 2·N²·(d_h·h) + 3·h·N² + 2·N²·(d_h·h) + 2·N·(d_h·h)·d + 2·N·2·d·d_ff) + 2·N·d·V)"
        missing = ""
        stacks = [name for name in values if name == "L" or name.startswith("L_")]  # L, or L_e and L_d, or L and L_v
        runs = any(visit.block.kind == "layer_runs" for visit in self.root.visits())
        # one stack of layers: L, or the one layer count there is (a vision tower's L_v); a stack of runs may name
        # one count per run (Gemma 2's L_s and L_g), and its L (DeepSeek's MoE layers) is the formula's
        stack = "L" if "L" in values else stacks[0] if len(stacks) == 1 else None
        if stack is None or (len(stacks) > 1 and not runs):
            missing = (
                "it describes one stack of L alike layers (this model's stack is runs of different layers)"
                if runs
                else "it describes one stack of layers (this model has " + " and ".join(stacks) + ")"
                if stacks
                else "it needs the number of layers L, which this architecture does not give"
            )
        elif "V" not in values:
            missing = "it needs a vocabulary (embeddings and final logits): this model has none"
        elif self.active_params != self.params:
            missing = "it describes dense layers: a mixture of experts' router and k-of-E experts are not in it"
        elif not (heads and width and d_ff):
            missing = "it needs heads, the attention width and d_ff, which this architecture does not give"
        flops = None
        if not missing:
            assert stack is not None  # for the type checker: checked just above
            L, V, d = values[stack], values["V"], values["d"]
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

    def kv_cache_elements_held(self, tokens: int) -> int:
        """Key/value elements transformers' DynamicCache holds after a forward pass of ``tokens`` tokens: every
        token's in each layer, except in a layer that masks by a sliding window of ``W``, which keeps only the last
        ``W - 1`` (DynamicSlidingWindowLayer); the step reading the next token then attends to ``W`` keys there."""
        held = self.kv_cache_elements_per_token * tokens
        for visit in self.windows:
            assert visit.block.window is not None  # `windows` visits only the blocks with a window
            dropped = max(0, tokens - (visit.block.window.evaluate() - 1))
            held -= (visit.executed * visit.block.kv_cache).evaluate() * dropped
        return held

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
            polys.append(self.decode_formula(self.seq_len))
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

    # the JSON export lives in archzoo.report_json; these keep the methods callers use
    def visit_dict(self, visit: BlockVisit, units: str = "flops") -> dict[str, Any]:
        """`archzoo.report_json.visit_dict` of this report."""
        return visit_dict(self, visit, units)

    def blocks_dict(self, units: str = "flops") -> dict[str, Any]:
        """`archzoo.report_json.blocks_dict` of this report."""
        return blocks_dict(self, units)

    def flops_dict(self, units: str = "flops") -> dict[str, Any]:
        """`archzoo.report_json.flops_dict` of this report."""
        return flops_dict(self, units)

    def to_dict(self, units: str = "flops") -> dict[str, Any]:
        """The report as JSON (``archzoo.report/1``): `archzoo.report_json.report_dict`."""
        return report_dict(self, units)


def make_report(
    arch: Architecture, config: ArchConfig, seq_len: int | None = None, *, seq_len_name: str = "seq_len"
) -> Report:
    """Build the architecture's block tree for ``config`` and evaluate it at ``seq_len`` (checked by
    `check_seq_len`, whose errors call it ``seq_len_name``; None: the configuration's own length)."""
    n = check_seq_len(arch, config, seq_len, name=seq_len_name)
    return Report(arch, config, build_blocks(arch, config), n)
