"""Which config attributes transformers' code reads for each model type, derived from its source with `ast`.

A ``config.json`` key that is not a field of the configuration class becomes a plain attribute of the
config object (``PreTrainedConfig.__post_init__`` sets every leftover key with ``setattr``). Whether such a
key can change the model is decided here, mechanically, from the installed transformers' source: the
attributes read from a config object (``config.X``, ``self.config.X``, ``getattr(config, "X")``,
``hasattr(config, "X")``, and ``self.X`` inside a configuration class) in

* the type's modeling module and every transformers module it imports from (the generic layers and heads,
  ``PreTrainedModel``, ``GenerationMixin``, the masks, the rotary helpers), and
* the configuration code: the type's configuration module, ``configuration_utils`` and
  ``modeling_rope_utils`` (``PreTrainedConfig`` and its rotary mixin).

A name computed at run time is followed to the constants it can take (an f-string becomes a glob pattern,
a loop variable the items of its literal list, a parameter its default); the few reads whose name comes
from elsewhere are listed in `COMPUTED_NAMES` with why they reach no key of these types, and an unlisted
one stops the derivation. Reading the whole object (``to_dict``, ``vars``) copies keys for saving and
printing, which changes no module, so it does not count as reading a key.

With them, each configuration class's fields and their annotations (`field_types`), which transformers' strict
dataclasses check when a file loads, and the value validators their defaults attach (`field_validators`).

The result is written as data to `archzoo.hf_keys_read`, so that counting never imports transformers:

    python -m archzoo.hf_keys src/archzoo/hf_keys_read.py

(``--type gpt_neox`` adds a model type whose plugin is not installed here; ``--summary`` prints counts.)
tests/test_hf_keys.py derives it again from the pinned transformers and fails when they differ.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import hf_keys_read
from .hf_vocabulary import hf_table
from .host import get_host

__all__ = [
    "COMPUTED_NAMES",
    "KNOWN_VALIDATORS",
    "Derivation",
    "derive",
    "field_types",
    "field_validators",
    "render",
    "transformers_root",
]

#: Reads through a name the constant-following cannot resolve: the exact source text of the call, the keys
#: (or glob patterns) it can reach in a config.json of a supported type, and why. The derivation stops on a
#: read not listed here, so a new one must be looked at.
_CALLER = "keyword arguments of the Python call, not keys of config.json"
_GENERATION = (
    "GenerationConfig's parameters, which __post_init__ has already taken out of the file's keys (archzoo "
    "ignores them as generation settings)"
)
_SUB_CONFIGS = (
    "the names of the class's sub-configurations (sub_configs), each read by a nested table of its own where a type "
    "has them (CLIP's text_config and vision_config; checked)"
)
COMPUTED_NAMES: dict[str, tuple[tuple[str, ...], str]] = {
    "__post_init__: getattr(self, key)": ((), _SUB_CONFIGS),
    "_attn_implementation: getattr(self, subconfig_key, None)": ((), _SUB_CONFIGS),
    "_experts_implementation: getattr(self, subconfig_key, None)": ((), _SUB_CONFIGS),
    "get_experts_implementation: getattr(self.config, subconfig_key, None)": ((), _SUB_CONFIGS),
    "_get_dtype: getattr(config, sub_config_key)": ((), _SUB_CONFIGS),
    "_from_config: getattr(config, sub_config_key)": ((), _SUB_CONFIGS),
    "set_attn_implementation: getattr(config, subconfig_key)": ((), _SUB_CONFIGS),
    "set_experts_implementation: getattr(self.config, subconfig_key)": ((), _SUB_CONFIGS),
    "validate_token_ids: getattr(text_config, name)": (
        ("*_token_id",),
        "walks every attribute and warns about a *_token_id outside the vocabulary",
    ),
    "wrapper: getattr(self.config, f'output_{k}', False)": (
        ("output_attentions", "output_hidden_states", "output_cross_attentions", "output_router_logits"),
        "k is a key of the model class's _can_record_outputs, the outputs it can return (checked against every "
        "class of these types)",
    ),
    "from_dict: hasattr(config, key)": ((), _CALLER),
    "from_dict: getattr(config, key)": ((), _CALLER),
    "update_from_string: hasattr(self, k)": ((), _CALLER),
    "update_from_string: getattr(self, k)": ((), _CALLER),
    "_get_generation_parameters: hasattr(self, key)": ((), _GENERATION),
    "_get_generation_parameters: getattr(self, key)": ((), _GENERATION),
}

#: The configuration code every type runs: ``PreTrainedConfig`` and its rotary mixin.
CONFIG_BASE_MODULES = ("transformers.configuration_utils", "transformers.modeling_rope_utils")


def transformers_root() -> Path:
    """The installed transformers package's folder, found without importing it."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        raise RuntimeError("transformers is not installed; install it to derive the key tables")
    return Path(spec.origin).parent


def _module_file(root: Path, dotted: str) -> Path | None:
    path = root.joinpath(*dotted.split(".")[1:])
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@dataclass
class _Source:
    """Parsed modules of one transformers installation, each parsed once."""

    root: Path
    trees: dict[str, ast.Module] = field(default_factory=dict)

    def tree(self, dotted: str) -> ast.Module:
        if dotted not in self.trees:
            path = _module_file(self.root, dotted)
            if path is None:
                raise RuntimeError(f"transformers module {dotted} not found under {self.root}")
            self.trees[dotted] = ast.parse(path.read_text(encoding="utf-8"), str(path))
        return self.trees[dotted]

    def is_package(self, dotted: str) -> bool:
        path = _module_file(self.root, dotted)
        return path is not None and path.name == "__init__.py"

    def defining_modules(self, package: str, name: str) -> list[str]:
        """The submodule(s) of ``package`` an ``import name`` reaches: the lazy ``__init__`` files of
        transformers re-export names from submodules, so look for the one that defines it."""
        if _module_file(self.root, f"{package}.{name}") is not None:
            return [f"{package}.{name}"]
        path = _module_file(self.root, package)
        assert path is not None
        found = [
            f"{package}.{child.stem}"
            for child in sorted(path.parent.glob("*.py"))
            if child.name != "__init__.py" and name in _top_level_names(self.tree(f"{package}.{child.stem}"))
        ]
        return found or [package]

    def imports(self, dotted: str) -> list[str]:
        """The transformers modules ``dotted`` imports from, anywhere in its code, in order, once each."""
        found: dict[str, None] = {}
        package = dotted if self.is_package(dotted) else dotted.rsplit(".", 1)[0]
        for node in ast.walk(self.tree(dotted)):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("transformers") or _module_file(self.root, target) is None:
                    continue
                if self.is_package(target):
                    for alias in node.names:
                        found.update(dict.fromkeys(self.defining_modules(target, alias.name)))
                else:
                    found[target] = None
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("transformers.") and _module_file(self.root, alias.name) is not None:
                        found[alias.name] = None
        found.pop(dotted, None)
        return list(found)


def _config_name(node: ast.expr, self_is_config: bool) -> bool:
    """Whether ``node`` is a config object: a name or attribute ending in ``config`` (``config``,
    ``self.config``, ``text_config``), or ``self`` inside a configuration class."""
    if isinstance(node, ast.Name):
        return node.id.endswith("config") or (self_is_config and node.id == "self")
    return isinstance(node, ast.Attribute) and node.attr.endswith("config")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _literal_strings(node: ast.expr | None) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _pattern(node: ast.JoinedStr) -> str:
    return "".join(str(v.value) if isinstance(v, ast.Constant) else "*" for v in node.values)


def _resolve_name(name: str, scope: ast.AST, resolving: frozenset[str] = frozenset()) -> list[str] | None:
    """The keys a name can hold inside ``scope`` (a function): from its literal assignments, the literal list a
    loop takes it from, or its parameter default; None when it comes from anywhere else."""
    if name in resolving:
        return []  # x = [a for a in ... if a in x]: a filter of x's other values, counted there
    resolving = resolving | {name}
    keys: list[str] = []
    for node in ast.walk(scope):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AugAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            value = _values(node.value, scope, resolving)  # type: ignore[attr-defined]
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            if node.target.id != name:
                continue
            value = _values(node.iter, scope, resolving)
            for condition in node.ifs if isinstance(node, ast.comprehension) else []:
                if isinstance(condition, ast.Compare) and isinstance(condition.ops[0], ast.In):
                    value = _values(condition.comparators[0], scope, resolving)  # only the items of that list
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Tuple):
            # for a, b in zip([...], [...]): each name takes the items of its own list
            names = [e.id if isinstance(e, ast.Name) else "" for e in node.target.elts]
            call = node.iter
            if name not in names:
                continue
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "zip"):
                return None
            value = _values(call.args[names.index(name)], scope, resolving)
        else:
            continue
        if value is None:
            return None
        keys += value
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope.args
        positional = args.posonlyargs + args.args
        defaults = dict(
            zip([a.arg for a in positional][len(positional) - len(args.defaults) :], args.defaults, strict=True)
        )
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
        if name in defaults:
            value = _values(defaults[name], scope, resolving)
            if value is None:
                return None
            keys += value
    return keys or None


def _values(node: ast.expr, scope: ast.AST, resolving: frozenset[str] = frozenset()) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [_pattern(node)]
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_values(e, scope, resolving) for e in node.elts]
        return None if any(i is None for i in items) else [k for i in items for k in i or []]
    if isinstance(node, ast.Name):
        return _resolve_name(node.id, scope, resolving)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _values(node.left, scope, resolving), _values(node.right, scope, resolving)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):
        body, orelse = _values(node.body, scope, resolving), _values(node.orelse, scope, resolving)
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return _resolve_name(node.value.id, scope, resolving)  # an item of a list of names
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        # [a for a in X if a in Y]: some items of X, all of them in Y
        for condition in node.generators[0].ifs:
            if isinstance(condition, ast.Compare) and isinstance(condition.ops[0], ast.In):
                return _values(condition.comparators[0], scope, resolving)
        return _values(node.generators[0].iter, scope, resolving)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and node.args:
        # getattr(specs, "num_hidden_layers_key", "num_hidden_layers"): the default, the only constant
        return _values(node.args[2], scope, resolving) if len(node.args) == 3 else None
    return None


@dataclass(frozen=True)
class _Reads:
    keys: frozenset[str]
    patterns: frozenset[str]
    computed: tuple[str, ...]  # source texts of reads found in COMPUTED_NAMES


def _reads(dotted: str, tree: ast.Module, config_module: bool) -> _Reads:
    """Every config attribute ``tree`` reads."""
    parents = _parents(tree)
    keys: set[str] = set()
    patterns: set[str] = set()
    computed: list[str] = []
    unknown: list[str] = []

    def inside_config_class(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.ClassDef):
                return config_module and ("Config" in node.name)
        return False

    def enclosing_function(node: ast.AST) -> ast.AST:
        while node in parents:
            node = parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return node
        return tree

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            if _config_name(node.value, inside_config_class(node)):
                keys.add(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and _config_name(node.args[0], inside_config_class(node))
        ):
            function = enclosing_function(node)
            text = f"{getattr(function, 'name', '<module>')}: {ast.unparse(node)}"
            values = None if text in COMPUTED_NAMES else _values(node.args[1], function)
            if values is None:
                if text not in COMPUTED_NAMES:
                    unknown.append(f"{dotted}:{node.lineno}: {text}")
                    continue
                computed.append(text)
                values = list(COMPUTED_NAMES[text][0])
            for value in values:
                (patterns if "*" in value else keys).add(value)
    if unknown:
        raise RuntimeError(
            "config attributes read through a name this derivation cannot follow; find what each reads and add "
            "its text to COMPUTED_NAMES with the reason: " + "; ".join(unknown)
        )
    return _Reads(frozenset(keys), frozenset(patterns), tuple(sorted(set(computed))))


def _class_members(tree: ast.Module) -> frozenset[str]:
    """Every name a configuration class of ``tree`` defines (methods, properties, class variables, fields):
    a file key of one of these names would replace it on the instance, which transformers' own code then
    calls or reads in its place."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and "Config" in node.name:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.Assign):
                    names.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
    return frozenset(names)


#: the names a field annotation may use that `huggingface_hub.dataclasses.strict` validates by themselves
_TYPE_NAMES = frozenset(
    {"Any", "Literal", "None", "Sequence", "Union", "bool", "dict", "float", "int", "list", "str", "tuple"}
)


def _future_annotations(tree: ast.Module) -> bool:
    """Whether the module postpones its annotations: each field's type is then a string, which the strict
    validation of huggingface_hub skips (``type_validator`` returns for a ``str`` type), so no value is refused."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(a.name == "annotations" for a in node.names)
        for node in tree.body
    )


def _annotation(node: ast.expr, tree: ast.Module, where: str) -> str:
    """A field's annotation as source text, each module-level alias of the module written out (``X = Literal[...]``),
    and every other name checked: a type the strict validation knows, or a class (a ``TypedDict`` such as
    ``RopeParameters``, another configuration class), which no JSON value is an instance of."""
    assigned = {
        t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}

    class Inline(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            if name.id in _TYPE_NAMES or name.id in classes or (name.id in imported and name.id not in assigned):
                return name
            if name.id in assigned:
                return self.visit(copy.deepcopy(assigned[name.id]))
            raise RuntimeError(f"{where}: annotation names {name.id!r}, neither a type nor a class; teach hf_keys it")

        def visit_Attribute(self, attribute: ast.Attribute) -> ast.AST:
            return attribute  # torch.dtype and the like: a class

    return ast.unparse(Inline().visit(copy.deepcopy(node)))


def _config_class(tree: ast.Module, model_type: str) -> ast.ClassDef | None:
    """The configuration class of ``tree`` whose ``model_type`` class variable is ``model_type``."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "model_type" for t in item.targets)
                    and isinstance(item.value, ast.Constant)
                    and item.value.value == model_type
                ):
                    return node
    return None


#: the value validators of ``transformers.utils.type_validators`` archzoo's reader checks as transformers does
KNOWN_VALIDATORS = ("interval",)


def _validator(default: ast.expr | None, where: str) -> str:
    """The value validator a field's default attaches (``interval(min=0.0, max=1.0)(default=0.02)``: the text of
    ``interval(min=0.0, max=1.0)``), or ``""``; a validator archzoo does not check stops the derivation."""
    if not isinstance(default, ast.Call):
        return ""
    if isinstance(default.func, ast.Call) and isinstance(default.func.func, ast.Name):
        if default.func.func.id in KNOWN_VALIDATORS:
            return ast.unparse(default.func)
    elif (
        isinstance(default.func, ast.Name)
        and default.func.id == "field"
        and not any(k.arg == "metadata" for k in default.keywords)
    ):
        return ""  # a plain default_factory: no validator
    raise RuntimeError(f"{where}: a field default {ast.unparse(default)!r} this derivation cannot read; teach hf_keys")


def _fields(source: _Source, dotted: str, name: str) -> dict[str, tuple[str, str]]:
    """The fields ``dotted``'s class ``name`` declares or inherits, each with the annotation the strict validation
    checks (``""``: none, the annotation being a string) and the value validator of its default (``""``: none),
    bases first so that a class's own declaration wins."""
    tree = source.tree(dotted)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
    if node is None:
        raise RuntimeError(f"{dotted}: no class {name}")
    if not any(
        (isinstance(d, ast.Name) and d.id == "strict") or (isinstance(d, ast.Call) and ast.unparse(d.func) == "strict")
        for d in node.decorator_list
    ):
        raise RuntimeError(f"{dotted}.{name} is not decorated with @strict; teach hf_keys which fields it checks")
    found: dict[str, tuple[str, str]] = {}
    for base in node.bases:
        base_name = ast.unparse(base)
        if base_name in ("PreTrainedConfig", "PretrainedConfig"):
            found.update(_fields(source, "transformers.configuration_utils", "PreTrainedConfig"))
        elif any(isinstance(n, ast.ClassDef) and n.name == base_name for n in tree.body):
            found.update(_fields(source, dotted, base_name))
        elif base_name.endswith("Mixin") and name == "PreTrainedConfig":
            continue  # PushToHubMixin and the rotary mixins are no dataclasses: their annotations are no fields
        else:
            raise RuntimeError(f"{dotted}.{name}: base class {base_name} not followed; teach hf_keys where it is")
    future = _future_annotations(tree)
    for item in node.body:
        if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
            continue
        if ast.unparse(item.annotation).startswith(("ClassVar", "typing.ClassVar")):
            continue
        where = f"{dotted}.{name}.{item.target.id}"
        found[item.target.id] = (
            "" if future else _annotation(item.annotation, tree, where),
            _validator(item.value, where),
        )
    return found


def field_types(model_types: Mapping[str, str], root: Path | None = None) -> dict[str, dict[str, str]]:
    """Each model type's configuration class's fields whose type transformers' strict validation checks when a
    file loads, with the annotation (transformers' source text): the class's own, and ``PreTrainedConfig``'s
    where its annotations are evaluated (in 5.23 they are strings, so none is checked)."""
    return _field_types(_Source(root or transformers_root()), model_types)


def _field_types(source: _Source, model_types: Mapping[str, str], part: int = 0) -> dict[str, dict[str, str]]:
    """Each type's fields with their annotation (``part`` 0) or their value validator (``part`` 1), where any."""
    types: dict[str, dict[str, str]] = {}
    for model_type, folder in sorted(model_types.items()):
        configuration = f"transformers.models.{folder}.configuration_{folder}"
        node = _config_class(source.tree(configuration), model_type)
        if node is None:
            raise RuntimeError(f"{configuration}: no configuration class with model_type = {model_type!r}")
        fields = _fields(source, configuration, node.name)
        types[model_type] = {k: v[part] for k, v in sorted(fields.items()) if v[part]}
    return types


def field_validators(model_types: Mapping[str, str], root: Path | None = None) -> dict[str, dict[str, str]]:
    """Each model type's configuration-class fields whose default attaches a value validator, with its source text
    (``interval(min=0.0, max=1.0)``: LlamaConfig's initializer_range), which the strict validation runs when a file
    loads, after the type."""
    types = _field_types(_Source(root or transformers_root()), model_types, part=1)
    return {t: fields for t, fields in types.items() if fields}


@dataclass(frozen=True)
class Derivation:
    """What the derivation found: each module's reads, and the modules each model type runs."""

    transformers_version: str
    reads: Mapping[str, frozenset[str]]
    patterns: Mapping[str, frozenset[str]]
    model_scope: Mapping[str, tuple[str, ...]]  # model type -> modeling module, then what it imports from
    config_scope: Mapping[str, tuple[str, ...]]  # model type -> its configuration module, then the shared ones
    members: Mapping[str, frozenset[str]]  # configuration module -> the names its configuration classes define
    #: model type -> each field the strict validation type-checks -> its annotation
    field_types: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: model type -> each field whose default attaches a value validator -> the validator's source text
    field_validators: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


def _version(root: Path) -> str:
    tree = ast.parse((root / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    raise RuntimeError(f"{root / '__init__.py'}: no __version__")


def derive(model_types: Mapping[str, str], root: Path | None = None) -> Derivation:
    """The reads of each model type: ``model_types`` maps a ``model_type`` to its transformers module
    folder name (``"openai-gpt"`` -> ``"openai"``)."""
    source = _Source(root or transformers_root())
    reads: dict[str, _Reads] = {}
    model_scope: dict[str, tuple[str, ...]] = {}
    config_scope: dict[str, tuple[str, ...]] = {}
    for model_type, folder in sorted(model_types.items()):
        modeling = f"transformers.models.{folder}.modeling_{folder}"
        configuration = f"transformers.models.{folder}.configuration_{folder}"
        model_scope[model_type] = (modeling, *source.imports(modeling))
        config_scope[model_type] = (configuration, *CONFIG_BASE_MODULES)
        for dotted in model_scope[model_type]:
            if dotted not in reads:
                reads[dotted] = _reads(dotted, source.tree(dotted), config_module=False)
        for dotted in config_scope[model_type]:
            if f"config:{dotted}" not in reads:
                reads[f"config:{dotted}"] = _reads(dotted, source.tree(dotted), config_module=True)
    members = {f"config:{m}": _class_members(source.tree(m)) for ms in config_scope.values() for m in ms}
    config_scope = {t: tuple(f"config:{m}" for m in ms) for t, ms in config_scope.items()}
    return Derivation(
        _version(source.root),
        {m: r.keys for m, r in sorted(reads.items())},
        {m: r.patterns for m, r in sorted(reads.items()) if r.patterns},
        model_scope,
        config_scope,
        dict(sorted(members.items())),
        _field_types(source, model_types),
        {t: fields for t, fields in _field_types(source, model_types, part=1).items() if fields},
    )


def _lines(name: str, mapping: Mapping[str, Iterable[str]], kind: str) -> Iterator[str]:
    """``name = {...}`` as ruff formats it: one item a line, sets sorted, tuples in order."""
    yield f"{name}: dict[str, {kind}] = {{"
    for key, values in mapping.items():
        if kind == "frozenset[str]" and not values:
            yield f"    {json.dumps(key)}: frozenset(),"
        elif kind == "frozenset[str]":
            yield f"    {json.dumps(key)}: frozenset("
            yield "        {"
            yield from (f"            {json.dumps(v)}," for v in sorted(values))
            yield "        }"
            yield "    ),"
        else:
            yield f"    {json.dumps(key)}: ("
            yield from (f"        {json.dumps(v)}," for v in values)
            yield "    ),"
    yield "}"


def _nested_lines(name: str, mapping: Mapping[str, Mapping[str, str]]) -> Iterator[str]:
    """``name = {type: {field: annotation}}`` as ruff formats it."""
    yield f"{name}: dict[str, dict[str, str]] = {{"
    for key, fields in mapping.items():
        if not fields:
            yield f"    {json.dumps(key)}: {{}},"
            continue
        yield f"    {json.dumps(key)}: {{"
        yield from (f"        {json.dumps(k)}: {json.dumps(v)}," for k, v in fields.items())
        yield "    },"
    yield "}"


def render(derivation: Derivation) -> str:
    """The generated module's text."""
    lines = [
        '"""Config attributes transformers reads, per module, and the modules each model type runs: generated."""',
        "",
        "# Generated by `python -m archzoo.hf_keys src/archzoo/hf_keys_read.py` from transformers "
        f"{derivation.transformers_version}'s source; do not edit.",
        "# A module named config:<module> is configuration code (PreTrainedConfig and the type's own class).",
        "",
        f"TRANSFORMERS_VERSION = {json.dumps(derivation.transformers_version)}",
        "",
        "#: module -> the config attributes its code reads",
        *_lines("READS", derivation.reads, "frozenset[str]"),
        "",
        "#: module -> glob patterns of the attributes it reads through a name built at run time",
        *_lines("READ_PATTERNS", derivation.patterns, "frozenset[str]"),
        "",
        "#: model type -> its modeling module, then every transformers module that one imports from",
        *_lines("MODEL_SCOPE", derivation.model_scope, "tuple[str, ...]"),
        "",
        "#: model type -> its configuration module, then the configuration code every type shares",
        *_lines("CONFIG_SCOPE", derivation.config_scope, "tuple[str, ...]"),
        "",
        "#: configuration module -> the names its configuration classes define (methods, properties, class",
        "#: variables, fields), which a key of the same name would replace on the config object",
        *_lines("MEMBERS", derivation.members, "frozenset[str]"),
        "",
        "#: model type -> each field of its configuration class whose type transformers' strict validation",
        "#: (huggingface_hub.dataclasses.strict) checks when a file loads -> the field's annotation, as written in",
        "#: transformers (module-level aliases written out; a class name matches no JSON value)",
        *_nested_lines("FIELD_TYPES", derivation.field_types),
        "",
        "#: model type -> each field whose default attaches a value validator of transformers.utils.type_validators,",
        "#: which the strict validation runs after the type -> the validator's source text",
        *_nested_lines("FIELD_VALIDATORS", derivation.field_validators),
        "",
    ]
    return "\n".join(lines)


def supported_model_types(extra: Iterable[str] = ()) -> dict[str, str]:
    """Every model type a plugin reads with a key table, every type the committed data already covers (a
    plugin not installed here keeps its data), and ``extra``, each mapped to its transformers module folder."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name  # only to regenerate the data

    readers = get_host().hf_readers()
    types = {t for t in readers if hf_table(readers[t].reader) is not None}
    types |= set(hf_keys_read.MODEL_SCOPE) | set(extra)
    return {t: model_type_to_module_name(t) for t in sorted(types)}


def summary() -> list[str]:
    """One line a model type: how many config attributes its code reads, and which of its configuration
    class's fields (the plugin table's defaults) no module reads, directly or through an alias of
    ``attribute_map`` (from the committed data)."""

    readers = get_host().hf_readers()
    lines = []
    for model_type, modules in hf_keys_read.MODEL_SCOPE.items():
        model = set().union(*(hf_keys_read.READS[m] for m in modules))
        config = set().union(*(hf_keys_read.READS[m] for m in hf_keys_read.CONFIG_SCOPE[model_type]))
        table = hf_table(readers[model_type].reader) if model_type in readers else None
        fields = set(table.defaults) if table is not None else set()
        aliases = dict(table.aliases) if table is not None else {}
        read = model | config | {aliases[a] for a in aliases if a in model | config}  # attribute_map resolves
        unread = sorted(fields - read)
        lines.append(
            f"{model_type}: {len(modules)} modules read {len(model)} attributes, its configuration code "
            f"{len(config)}; of {len(fields)} fields, {len(fields) - len(unread)} read, {len(unread)} never read"
            + (f" ({', '.join(unread)})" if unread else "")
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m archzoo.hf_keys [--type MODEL_TYPE ...] FILE ...`` writes the derived reads to each FILE;
    ``--summary`` prints a line per model type instead."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m archzoo.hf_keys",
        description="Derive which configuration keys transformers' modeling code reads, per supported model type.",
    )
    parser.add_argument("files", nargs="*", type=Path, help="the module to write (src/archzoo/hf_keys_read.py)")
    parser.add_argument("--type", dest="types", action="append", default=[], help="also derive this model type")
    parser.add_argument("--summary", action="store_true", help="print a line per model type, write nothing")
    args = parser.parse_args(argv)
    if args.summary:
        print("\n".join(summary()))
        return 0
    if not args.files:
        parser.error("give the file to write, e.g. src/archzoo/hf_keys_read.py")
    text = render(derive(supported_model_types(args.types)))
    for path in args.files:
        path.write_text(text, encoding="utf-8")
        print(f"{path}: written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
