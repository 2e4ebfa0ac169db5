"""Checking what a plugin's ``build`` returns: a block tree that every reader of archzoo can walk and evaluate.

`build_blocks` runs ``Architecture.build`` through the plugin guard and refuses, naming the plugin, a result that
is not a tree of `archzoo.blocks.Block` with integer formulas. Apart from the host, which loads plugins without
needing the block model: a listing that routes nothing to ``build`` imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .blocks import Block
from .formula import Poly, Symbol
from .plugin_guard import call_plugin, describe_exception, plugin_error, type_name

if TYPE_CHECKING:
    from .architecture import Architecture

__all__ = ["MAX_BLOCKS", "MAX_BLOCK_DEPTH", "build_blocks"]

#: Limits on a block tree a plugin's ``build`` returns; real architectures are a few levels and a few
#: hundred blocks deep, and every renderer walks the tree recursively.
MAX_BLOCK_DEPTH = 64
MAX_BLOCKS = 100_000

_STATIC_FORMULAS = (
    "params",
    "approx",
    "embedding_params",
    "kv_cache",
    "cross_kv_cache",
)  # numbers of the configuration
_FLOP_FORMULAS = ("flops", "attention_flops")  # may also depend on the sequence length N
_TEXT_FIELDS = ("name", "kind", "description", "tied_to")
_NONE_OPEN: frozenset[str] = frozenset()
_N_OPEN = frozenset({"N"})


def _formula_problem(poly: object, *, free: frozenset[str]) -> str | None:
    """Why ``poly`` is not a formula archzoo can evaluate with only the symbols in ``free`` left open."""
    if not isinstance(poly, Poly):
        return f"is {type_name(poly)}, expected an archzoo.Poly formula"
    terms, symbols = poly.terms, poly.symbols
    if type(terms) is not dict or type(symbols) is not dict:
        return "is a Poly whose terms or symbols are not dicts; build formulas with archzoo.formula"
    for mono, coefficient in terms.items():
        if type(coefficient) is not int:
            return f"has a coefficient of type {type_name(coefficient)}, expected int"
        if type(mono) is not tuple:
            return "has a malformed term; build formulas with archzoo.formula"
        for factor in mono:
            if type(factor) is not tuple or len(factor) != 2 or type(factor[0]) is not str:
                return "has a malformed term; build formulas with archzoo.formula"
            power = factor[1]
            if type(power) is not int or power < 1:
                return "has a malformed term; build formulas with archzoo.formula"
        for name, _ in mono:
            symbol = symbols.get(name)
            if not isinstance(symbol, Symbol):
                return f"uses symbol {name!r} without defining it"
            value = symbol.value
            if type(value) is int:
                continue
            if value is None:
                if name not in free:
                    open_ = "only N may be left open" if free else "it must depend on the configuration only"
                    return f"uses {name!r}, which has no value; {open_}"
            else:
                return f"gives symbol {name!r} the value {value!r} ({type_name(value)}), expected an int"
    return None


def _node_problem(node: Block) -> str | None:
    """What is wrong with one node of a block tree, or None."""
    for name in _TEXT_FIELDS:
        value = getattr(node, name)
        if type(value) is not str:
            return f"{name} is {type_name(value)}, expected a str"
    if type(node.shared) is not bool:
        return f"shared is {type_name(node.shared)}, expected a bool"
    if type(node.modules) is not tuple or not all(type(m) is str for m in node.modules):
        return f"modules is {type_name(node.modules)}, expected a tuple of str (the reference's submodule names)"
    if type(node.children) is not tuple:
        return f"children is {type_name(node.children)}, expected a tuple of archzoo.Block"
    for i, child in enumerate(node.children):
        if not isinstance(child, Block):
            return f"children[{i}] is {type_name(child)}, expected an archzoo.Block"
    for name in _STATIC_FORMULAS:
        formula = getattr(node, name)
        problem = _formula_problem(formula, free=_NONE_OPEN)
        if problem:
            return f"{name} {problem}"
        if formula.terms:  # a formula checked above evaluates; a count must not be negative
            value = formula.evaluate()
            if value < 0:
                return f"{name} evaluates to {value:,}, expected a count of at least 0"
    for name in _FLOP_FORMULAS:
        problem = _formula_problem(getattr(node, name), free=_N_OPEN)
        if problem:
            return f"{name} {problem}"
    if node.repeat is not None:
        problem = _formula_problem(node.repeat, free=frozenset())
        if problem:
            return f"repeat {problem}"
        if node.repeat.evaluate() < 0:
            return f"repeat evaluates to {node.repeat.evaluate():,}, expected a count of at least 0"
    if node.copies is not None:
        if node.repeat is None or node.shared:
            return "copies is set without repeat or with shared; experts store copies and run repeat of them"
        problem = _formula_problem(node.copies, free=frozenset())
        if problem:
            return f"copies {problem}"
        if not 0 <= node.repeat.evaluate() <= node.copies.evaluate():
            return (
                f"copies evaluates to {node.copies.evaluate():,} with repeat {node.repeat.evaluate():,}, "
                "expected at least as many stored copies as run ones"
            )
    return None


def _block_tree_problem(root: object) -> str | None:
    """Why ``root`` is not a block tree every reader of archzoo can walk and evaluate, or None."""
    if not isinstance(root, Block):
        return f"returned {type_name(root)}, expected an archzoo.Block"
    # (block, its path, its depth, the ids of the blocks above it): iterative, so no depth breaks it
    stack: list[tuple[Block, str, int, frozenset[int]]] = [(root, "", 0, frozenset())]
    seen = 0
    while stack:
        node, parent, depth, above = stack.pop()
        seen += 1
        if seen > MAX_BLOCKS:
            return f"returned a block tree of more than {MAX_BLOCKS:,} blocks; share a layer with archzoo.blocks.repeat"
        label = node.name if type(node.name) is str else "?"
        path = f"{parent}.{label}" if parent else label
        if depth > MAX_BLOCK_DEPTH:
            return f"returned a block tree more than {MAX_BLOCK_DEPTH} levels deep ({label!r} is at level {depth})"
        problem = _node_problem(node)
        if problem:
            return f"returned a bad block {path!r}: {problem}"
        here = above | {id(node)}
        for child in reversed(node.children):
            if id(child) in here:
                return f"returned a block tree with a cycle: {path!r} contains one of its own ancestors"
            stack.append((child, path, depth + 1, here))
    return None


def build_blocks(arch: Architecture, config: Any) -> Block:
    """`arch.build(config)` through call_plugin (what="build"), its result checked: a `Block` whose every
    node (walk it) has Poly formulas, str name/kind, children a tuple of Blocks, repeat None or Poly, and
    whose params/flops polynomials evaluate to ints (params needing only the config's symbols; flops
    needing at most N). A bad result raises PluginError naming the plugin and saying what was wrong, e.g.
    "plugin 'badbuild': build returned list, expected an archzoo.Block"."""
    plugin = arch.plugin or arch.name
    root = call_plugin(plugin, "build", arch.build, config)
    try:
        problem = _block_tree_problem(root)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # an object dressed up as a Block whose attributes misbehave
        problem = f"returned a block tree archzoo cannot read: {describe_exception(exc)}"
    if problem:
        raise plugin_error(plugin, f"build {problem}")
    return root
