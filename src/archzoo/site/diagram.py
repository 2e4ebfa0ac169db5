"""A model's block diagram as mermaid flowchart text, drawn from its block tree.

The model, its stacks, its repeated layers and its mixtures of experts open into subgraphs; every
other block is one node labelled with its parameters, read off the tree's one walk (`Block.visits`):
all of them where the model stores one set, one copy's ("each") inside a repeat or a set of experts.
Siblings are chained in the order the tree lists them, which is the order of the forward pass, except
that a stack with cross-attention (a decoder) takes the input of the stack before it, whose output
feeds its cross-attention ("memory"). A tied weight is drawn as a dotted link to the tensor it reuses.
Block names are plain text (`_label`).
"""

from __future__ import annotations

import re

from ..blocks import Block, BlockVisit
from ..report import human_count

__all__ = ["mermaid"]

_OPEN = ("model", "stack", "mixture_of_experts")


#: Characters a label keeps as they are; every other one (quotes, ``<``, ``&``, ``#``, backticks, ``%%``
#: directives, brackets, non-ASCII) is written as mermaid's entity code ``#NNN;``.
_LABEL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,-()/+")
#: Shown as U+FFFD: control characters (but tab and line breaks, shown as spaces), DEL, lone surrogates.
_UNSHOWABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")
_SPACES = re.compile("[\t\n\r\x85\u2028\u2029]")


def _label(text: str) -> str:
    """Text (a block name from a plugin) as the inside of a quoted mermaid label, shown literally.

    Mermaid renders labels as HTML after turning ``#NNN;`` into ``&#NNN;``, so an encoded character is
    shown as itself and can neither end the label, start markup or a directive, nor spell an entity.
    One exception: mermaid reads ``$$...$$`` as math once entities are decoded (and its tiny build prints
    an error instead), so two ``$`` in a row are kept apart by an invisible word joiner (U+2060).
    """
    text = _UNSHOWABLE.sub("\ufffd", _SPACES.sub(" ", str(text)))
    out = []
    for before, c in zip(" " + text, text, strict=False):
        if c == "$" and before == "$":
            out.append("#8288;")
        out.append(c if c in _LABEL_SAFE else f"#{ord(c)};")
    return "".join(out)


def mermaid(root: Block, *, direction: str = "TB") -> str:
    """Flowchart source for ``root``: ``flowchart TB`` followed by nodes, subgraphs and links."""
    lines = [f"flowchart {direction}"]
    links: list[str] = []
    node_ids: dict[str, str] = {}  # block path (below the root) -> node or subgraph id
    cross_nodes: list[str] = []  # cross-attention nodes, in drawing order
    counter = iter(range(1_000_000))

    def new_id(prefix: str) -> str:
        return f"{prefix}{next(counter)}"

    visits: dict[str, BlockVisit] = {}  # block path below the root -> its visit
    for visit in root.visits():
        visits[visit.path.partition(".")[2]] = visit

    def params_text(path: str) -> str:
        visit = visits[path]
        value = visit.params_each.evaluate()
        each = " each" if visit.stored.evaluate() > 1 else ""
        return f"{human_count(value)} params{each}" if value else "no params"

    def copies_title(block: Block) -> str:
        n = block.repeat.evaluate() if block.repeat is not None else 1
        if block.copies is not None:
            return f"{_label(block.name)}, {n:,} of {block.copies.evaluate():,} per token"
        return f"{_label(block.name)} × {n:,}" + (" (shared weights)" if block.shared else "")

    def emit(block: Block, path: str, indent: str) -> tuple[str, str]:
        """Write ``block``; return the ids of the first and last node of its flow."""
        if block.repeat is not None or block.kind in _OPEN:
            sub = new_id("s")
            node_ids[path] = sub
            if block.repeat is not None:
                title = copies_title(block)
                inner = block.children[0] if len(block.children) == 1 and block.children[0].children else block
                children = inner.children if inner is not block else block.children
                prefix = f"{path}.{inner.name}" if inner is not block else path
            else:
                title = _label(block.name)
                children = block.children
                prefix = path
            lines.append(f'{indent}subgraph {sub}["{title}"]')
            lines.append(f"{indent}  direction {direction}")
            first = last = ""
            stack_input = stack_output = ""  # around the last stack drawn at this level (an encoder)
            for child in children:
                child_path = f"{prefix}.{child.name}" if prefix else child.name
                seen = len(cross_nodes)
                head, tail = emit(child, child_path, indent + "  ")
                reads_memory = cross_nodes[seen:]
                if reads_memory and stack_output:
                    # a decoder: its input is what fed the encoder, the encoder's output feeds cross-attention
                    links.extend(f"{stack_output} -->|memory| {node}" for node in reads_memory)
                    if stack_input:
                        links.append(f"{stack_input} --> {head}")
                elif last:
                    links.append(f"{last} --> {head}")
                if child.kind == "stack":
                    stack_input, stack_output = last, tail
                first = first or head
                last = tail
            lines.append(f"{indent}end")
            if not first:  # an empty composite: one node so that links have an end
                first = last = new_id("n")
                lines.append(f'{indent}{first}["{_label(block.name)}"]')
            return first, last
        node = new_id("n")
        node_ids[path] = node
        if block.kind == "cross_attention":
            cross_nodes.append(node)
        lines.append(f'{indent}{node}["{_label(block.name)}<br/>{params_text(path)}"]')
        return node, node

    emit(root, "", "  ")
    for path, block in _tied(root):
        target = _resolve(node_ids, block.tied_to)
        source = node_ids.get(path) or _resolve(node_ids, path)
        if target and source and target != source:
            # drawn from the tensor's owner, which comes first in the flow, so the link keeps the layout's order
            links.append(f"{target} -. weight tied .- {source}")
    lines += [f"  {link}" for link in links]
    return "\n".join(lines)


def _tied(root: Block):
    for path, _depth, block in root.walk():
        if block.tied_to:
            yield path.partition(".")[2], block


def _resolve(node_ids: dict[str, str], path: str) -> str:
    """The node drawn for ``path``, or for its nearest drawn ancestor."""
    while path:
        if path in node_ids:
            return node_ids[path]
        path = path.rpartition(".")[0]
    return ""
