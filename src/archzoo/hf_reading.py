"""Reading a Hugging Face ``config.json`` as an archzoo configuration: every key read, ignored or refused.

The model type's plugin, found through the host, supplies the reader and its `HFTable`
(`archzoo.hf_vocabulary`). This module holds the generic part: it resolves aliases and defaults exactly as
transformers 5.23 does, gives every key of the file a disposition (an unknown key is an error, never silently
dropped), picks the model class (``--hf-class``), and lets ``--set`` overrides compose.

A file carries more than the class's fields, and it is read as transformers 5.23 loads it: the rotary keys
it converts while loading (``rope_scaling``, ``rope_theta``, ``partial_rotary_factor``) become
``rope_parameters`` as they do there (`_convert`), and any other key that is no field becomes, as in
transformers, a plain attribute: ignored when no module of the type's code reads it, refused (naming the
module) when one does. Which modules read what is derived from transformers' source by `archzoo.hf_keys`
and committed as data (`archzoo.hf_keys_read`), with each configuration class's field annotations: a value of a
type the class's strict validation refuses is refused whether archzoo reads the key or ignores it
(`_check_field_types`), as transformers refuses the file.

Nothing here imports torch or transformers; a test checks the tables against transformers itself.
"""

from __future__ import annotations

import ast
import copy
import difflib
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from .architecture import ArchConfig, Architecture, float_keys, json_number, parse_config
from .errors import HFConfigError, closest
from .files import load_json, read_user_text
from .hf_vocabulary import (
    _GENERATION,
    COMMON_ACCEPTED,
    COMMON_DEFAULTS,
    COMMON_KEYS,
    TRANSFORMERS_VERSION,
    HFTable,
    hf_table,
)
from .host import PluginHost, get_host
from .plugin_guard import call_plugin

__all__ = [
    "DOC_END",
    "DOC_START",
    "HFReading",
    "KeyReading",
    "load_hf_config",
    "methodology_section",
    "read_hf_config",
    "update_methodology_page",
]


def _derived() -> ModuleType:
    """`archzoo.hf_keys_read` (what each transformers module reads, a few thousand names), imported on first need: a
    file whose every key its type's table names, as most published files, never needs it."""
    from . import hf_keys_read

    return hf_keys_read


# ---- what a reading records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyReading:
    """One key of the file, or one key transformers defaulted: what archzoo did with it."""

    key: str
    value: Any
    disposition: Literal["read", "ignored", "defaulted", "converted"]
    archzoo_key: str = ""
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": json_number(_shown(self.value)),  # a file's NaN (Python's json reads it) as valid JSON
            "disposition": self.disposition,
            "archzoo_key": self.archzoo_key or None,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class HFReading:
    """A ``config.json`` read: the architecture and configuration, and how every key was accounted for."""

    path: str
    model_type: str
    architecture: Architecture
    config: ArchConfig
    keys: tuple[KeyReading, ...]
    config_class: str = ""
    model_class: str = ""
    class_source: str = ""  # "AutoModel", "--hf-class" or "architectures"
    class_values: Mapping[str, Any] = field(default_factory=dict)
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The ``hf_config`` section of ``archzoo count --json``."""
        return {
            "path": self.path,
            "model_type": self.model_type,
            "config_class": self.config_class or None,
            "model_class": self.model_class or None,
            "class_source": self.class_source or None,
            "class_sets": dict(self.class_values),
            "keys": [k.to_dict() for k in self.keys],
            "overrides": json_number(dict(self.overrides)),
        }


def _shown(value: Any) -> Any:
    """A value for a report: as written, except that long label maps and lists are summarised."""
    if isinstance(value, dict) and (len(value) > 8 or any(isinstance(v, (dict, list)) for v in value.values())):
        return f"<object of {len(value):,} keys>"
    if isinstance(value, list) and len(value) > 8:
        return f"<list of {len(value):,} values>"
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same type: ``0`` is not ``false``, as transformers' strict fields see it."""
    return type(a) is type(b) and a == b


def _checked(refusal: tuple[tuple[Any, ...], str]) -> str:
    accepted, why = refusal
    return f"checked: archzoo counts {' or '.join(_text(a) for a in accepted)} only, and refuses other values: {why}"


def _key_text(key: str) -> str:
    """A key for a one-line message: as written, or quoted when it holds spaces or control characters."""
    return key if key.isprintable() and " " not in key and key else json.dumps(key)


def _text(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- reading ------------------------------------------------------------------------------------------


def read_hf_config(
    path: str | Path,
    host: PluginHost,
    overrides: dict[str, Any] | None = None,
    hf_class: str | None = None,
) -> tuple[Architecture, ArchConfig]:
    """The architecture and configuration a ``config.json`` describes, or an `HFConfigError` saying why not.

    ``hf_class`` names the model class to count (``auto``: the file's first ``architectures`` entry;
    None: the base model ``AutoModel`` builds); ``overrides`` (archzoo keys, as from ``--set``) replace
    what the file gives before validation.
    """
    reading = load_hf_config(path, host, overrides, hf_class)
    return reading.architecture, reading.config


def load_hf_config(
    path: str | Path,
    host: PluginHost,
    overrides: dict[str, Any] | None = None,
    hf_class: str | None = None,
) -> HFReading:
    """Like `read_hf_config`, with the disposition of every key (``archzoo count --explain``)."""
    path = Path(path)
    data = load_json(read_user_text(path, HFConfigError), str(path), HFConfigError)
    return _read_data(path, data, host, overrides, hf_class)


def _read_data(
    path: Path,
    data: Any,
    host: PluginHost,
    overrides: dict[str, Any] | None = None,
    hf_class: str | None = None,
) -> HFReading:
    """`load_hf_config` of a file's parsed JSON (``path`` names it in messages)."""
    if not isinstance(data, dict):
        raise HFConfigError(f"{path}: expected a JSON object with a 'model_type' key, got {type(data).__name__}")
    model_type = data.get("model_type")
    readers = host.hf_readers()
    if model_type is not None and not isinstance(model_type, str):
        raise HFConfigError(f'{path}: model_type: expected text such as "bert", got {_text(model_type)}')
    if model_type is None:
        raise HFConfigError(
            f"{path}: model_type: missing; a Hugging Face config.json names its model type "
            f"(supported: {', '.join(sorted(readers))})"
        )
    if model_type not in readers:
        inner = _counted_sub_configuration(data, readers)
        if inner is not None:
            key, inner_type = inner
            raise HFConfigError(
                f"{path}: model_type: {model_type!r} is not supported (no plugin reads it), but its {key} is a "
                f"{inner_type!r} configuration, which archzoo counts: save that object as a config.json of its own "
                f"and count it (archzoo count --hf-config {key}.json) for the {inner_type} model inside, without what "
                f"the file's other parts add; a plugin can add {model_type!r} with the register_hf_readers hook"
            )
        custom = (
            "; its auto_map names custom model code (trust_remote_code), which archzoo does not run"
            if "auto_map" in data
            else ""
        )
        raise HFConfigError(
            f"{path}: model_type: {model_type!r} is not supported (supported: {', '.join(sorted(readers))}){custom}; "
            "a plugin can add it with the register_hf_readers hook"
        )
    found = readers[model_type]
    arch, reader = host.architecture(found.architecture), found.reader
    table = hf_table(reader)
    overrides = dict(overrides or {})
    if table is None:
        return _read_untabled(path, data, arch, found.plugin, model_type, reader, overrides, hf_class)

    keys, resolved, origin = _resolve(path, data, table)
    model_class, class_source = _model_class(path, data, table, hf_class)
    if model_class in table.class_sub_configs:
        return _read_sub_configuration(path, data, host, table, model_class, class_source, overrides)
    try:
        values = call_plugin(
            found.plugin,
            f"its reader of model type {model_type!r}",
            reader,
            dict(resolved),
            model_class,
            expected=(ValueError, TypeError),
        )
    except (ValueError, TypeError) as exc:
        message = str(exc)
        converted_from = origin.get(table.read.get("rope_parameters", ""), "rope_parameters")
        if message.startswith("rope_parameters:") and converted_from != "rope_parameters":
            message = f"{converted_from}, converted into rope_parameters as transformers does:" + message.removeprefix(
                "rope_parameters:"
            )
        raise HFConfigError(f"{path}: {_as_written(data, table, message)}") from None
    class_values = dict(table.classes[model_class])
    keys = _unread_by_class(keys, {**values, **class_values}, table, resolved, reader, found.plugin, model_class)
    values = {**_taken_as_floats(arch, values), **class_values, **overrides}
    config = _validate(path, arch, values, origin, overrides, model_class)
    # after the validation, which words most refusals by archzoo's key; an integer made a float above (a soft-cap of
    # 50) is refused here when the configuration class's strict field refuses it, as transformers refuses the file
    _check_field_types(path, data, table)
    return HFReading(
        str(path),
        model_type,
        arch,
        config,
        tuple(keys),
        table.config_class,
        model_class,
        class_source,
        class_values,
        overrides,
    )


def _taken_as_floats(arch: Architecture, values: Mapping[str, Any]) -> dict[str, Any]:
    """The reader's values with an integer made the float it equals for a key archzoo holds as a float: the type
    check has passed, so no strict field of transformers refused it (it came through a key transformers does not
    type, such as rope_parameters' partial_rotary_factor or GPTNeoXConfig's rotary_pct), and transformers computes
    with 1 what it computes with 1.0. Given with ``--set``, an integer is refused instead: there archzoo would count
    another value than the one given."""
    floats = float_keys(arch.config_model)
    return {
        key: float(value) if key in floats and isinstance(value, int) and not isinstance(value, bool) else value
        for key, value in values.items()
    }


def _counted_sub_configuration(data: Mapping[str, Any], readers: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first object of a file of an unsupported model type that names a model type archzoo reads (a multimodal
    gemma3 file's text_config, which transformers writes with ``"model_type": "gemma3_text"``): its key and type."""
    for key, value in data.items():
        if isinstance(value, dict):
            inner = value.get("model_type")
            if isinstance(inner, str) and inner in readers:
                return key, inner
    return None


def _unread_by_class(
    keys: list[KeyReading],
    values: Mapping[str, Any],
    table: HFTable,
    resolved: Mapping[str, Any],
    reader: Callable,
    plugin: str,
    model_class: str,
) -> list[KeyReading]:
    """The readings, where a key the table reads into an archzoo key the reader leaves unset for ``model_class``
    but sets for another class of the table is told as not read by this class (CLIPForImageClassification builds
    no projection, so it never reads projection_dim, which CLIPModel reads). The reader is the plugin's statement
    of what each class reads; the other classes' readers are run only when some key's archzoo key is unset."""
    unset = {
        k.archzoo_key
        for k in keys
        if k.disposition in ("read", "defaulted") and k.archzoo_key.isidentifier() and k.archzoo_key not in values
    }
    if not unset:
        return keys
    readers: dict[str, list[str]] = {}
    for other in table.classes:
        if other == model_class or other in table.class_sub_configs:
            continue
        try:
            got = call_plugin(plugin, "its reader", reader, copy.deepcopy(dict(resolved)), other, expected=(Exception,))
        except Exception:  # a class the file cannot build tells nothing about this one
            continue
        for target in unset & set(got):
            readers.setdefault(target, []).append(other)
    if not readers:
        return keys

    def told(k: KeyReading) -> KeyReading:
        if k.archzoo_key not in readers or k.disposition not in ("read", "defaulted"):
            return k
        names = readers[k.archzoo_key]
        why = (
            f"not read by {model_class}: of the {table.model_type} classes, only {_listed(names)} "
            f"{'reads' if len(names) == 1 else 'read'} it"
        )
        if k.disposition == "defaulted":
            return replace(k, archzoo_key="", detail=f"{k.detail}; {why}")
        return replace(k, disposition="ignored", archzoo_key="", detail=why)

    return [told(k) for k in keys]


def _as_written(data: dict[str, Any], table: HFTable, message: str) -> str:
    """A reader's message about a sub-configuration's key, naming the key as the file gives it: the reader names
    it ``vision_config.patch_size``, or by its field name alone where only one sub-configuration's class has that
    field and the class itself has not; the file gave it there, or in the legacy override that replaced the
    sub-configuration's fields (``vision_config_dict.patch_size``)."""
    name, colon, rest = message.partition(":")
    if not table.nested or not colon:
        return message
    key, dot, native = name.partition(".")
    if not dot or key not in table.nested:
        holders = [k for k, sub in table.nested.items() if name in sub.defaults or name in sub.aliases]
        if name in table.defaults or name in table.aliases or len(holders) != 1:
            return message
        key, native = holders[0], name
    written = next(
        (
            override
            for override, target in table.nested_overrides.items()
            if target == key and isinstance(data.get(override), dict) and native in data[override]
        ),
        key,
    )
    return f"{written}.{native}:{rest}"


def _read_sub_configuration(
    path: Path,
    data: dict[str, Any],
    host: PluginHost,
    table: HFTable,
    model_class: str,
    class_source: str,
    overrides: dict[str, Any],
) -> HFReading:
    """A class built from one sub-configuration of the file (`HFTable.class_sub_configs`: CLIPTextModel of a clip
    file), read as ``from_pretrained`` loads its configuration class: the file's object under the class's
    ``base_config_key``, as written, read as a file of the sub-configuration's own model type, and nothing else of
    the file (not even a legacy override such as text_config_dict, which only the outer class applies). Where that
    object, or a file without the key, names another model type, its last object naming the sub-configuration's
    type is taken instead (`_sub_configuration_object`), else the object (or the whole file) itself."""
    key = table.class_sub_configs[model_class]
    sub_table = table.nested[key]
    sub, path_keys = _sub_configuration_object(data, key, sub_table.model_type)
    where = ".".join(path_keys)
    if not isinstance(sub, dict):
        raise HFConfigError(
            f"{path}: {key}: transformers builds {model_class} from this object alone ({sub_table.config_class}'s "
            f"base_config_key), and cannot load {_text(sub)}; count {table.base_class} instead, or give an object"
        )
    # from the whole file, the outer class's own sub-configurations stay plain attributes the tower's class never reads
    outer = set() if where else set(table.nested) | set(table.nested_overrides)
    own = {k: v for k, v in sub.items() if k != "model_type" and k not in outer}
    prefix = f"{where}." if where else ""
    try:
        reading = _read_data(path, {"model_type": sub_table.model_type, **own}, host, overrides, model_class)
    except HFConfigError as exc:
        message, head = str(exc), f"{path}: "
        raise HFConfigError(
            head + prefix + message.removeprefix(head) if message.startswith(head) else message
        ) from None
    keys = [replace(k, key=f"{prefix}{k.key}") for k in reading.keys if k.key != "model_type"]
    keys.append(
        KeyReading(
            f"{prefix}model_type",
            sub.get("model_type"),
            "ignored" if where else "read",
            "",
            f"transformers builds {model_class}'s configuration as a {sub_table.config_class} whatever it names"
            if where
            else f"names no {sub_table.model_type} object, so transformers builds {model_class}'s "
            f"{sub_table.config_class} from the whole file",
        )
    )
    keys += [
        KeyReading(
            k,
            data[k],
            "ignored",
            "",
            f"a sub-configuration of {table.config_class}: {sub_table.config_class} keeps it as a plain attribute, "
            f"which {model_class} never reads",
        )
        for k in sorted(outer & set(data))
    ]
    if where:
        why = f"not read: transformers builds {model_class} from {where} alone, as from_pretrained loads it"
        if len(path_keys) == 2:  # an object inside the key's own: the key's other entries are not read either
            outer_key, inner_key = path_keys
            keys += [
                KeyReading(f"{outer_key}.{k}", v, "ignored", "", why)
                for k, v in data[outer_key].items()
                if k != inner_key
            ]
        keys += [
            KeyReading(k, v, "read" if k == "architectures" else "ignored", "", why)
            for k, v in data.items()
            if k != path_keys[0]
        ]
    return replace(reading, model_type=table.model_type, keys=tuple(keys), class_source=class_source)


def _sub_configuration_object(data: dict[str, Any], key: str, model_type: str) -> tuple[Any, list[str]]:
    """The object ``from_pretrained`` of a sub-configuration class (``base_config_key`` ``key``, its own
    ``model_type``) loads from a file, and the keys that lead to it (none: the whole file). A port of transformers
    5.23's ``PreTrainedConfig.from_pretrained``: the file's object under ``key`` when it has one (as written, even
    null), else the file; then, when that object names another model type, each of its entries that is an object
    naming ``model_type`` replaces it in turn, so the last such entry wins; if none does, the object stays."""
    chosen, keys = (data[key], [key]) if key in data else (data, [])
    if not isinstance(chosen, dict) or "model_type" not in chosen or chosen["model_type"] == model_type:
        return chosen, keys
    inner = [k for k, v in chosen.items() if isinstance(v, dict) and v.get("model_type") == model_type]
    return (chosen[inner[-1]], [*keys, inner[-1]]) if inner else (chosen, keys)


def _refuse(path: Path, data: dict[str, Any], table: HFTable) -> dict[str, str]:
    """Raise for the first key whose value archzoo refuses; return the keys that transformers keeps as plain
    attributes and never reads, each with why it is ignored."""
    unknown = [
        k
        for k in data
        if k not in table.aliases
        and k not in table.read
        and k not in table.ignored
        and k not in table.refused
        and k not in table.nested
        and k not in table.nested_overrides
        and k not in COMMON_KEYS
    ]
    plain = _plain_attributes(path, unknown, table)
    for key, value in data.items():
        native = table.aliases.get(key, key)
        if native in table.refused:
            accepted, why = table.refused[native]
        elif key == "auto_map" and native not in table.read and native not in table.ignored:
            # AutoConfig (and each AutoModel class) asks whether its name is in auto_map and, when it is, reads
            # auto_map[name]; AutoConfig then asks whether "--" is in that: anything those fail on (a number, null;
            # a list or text naming an Auto class; a number for AutoConfig's code) fails to load or to build
            ref = value.get("AutoConfig", "") if isinstance(value, dict) else ""
            names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            if not (
                isinstance(value, (dict, list, str))
                and not any(isinstance(n, str) and "Auto" in n for n in names)
                and isinstance(ref, (dict, list, str))
            ):
                raise HFConfigError(
                    f"{path}: auto_map: expected an object mapping Auto classes to custom code, got {_text(value)}; "
                    f"transformers {TRANSFORMERS_VERSION}'s Auto classes fail on it"
                )
            continue  # transformers builds its own class for a model type it knows: see _resolve
        elif native not in table.read and native not in table.ignored and COMMON_KEYS.get(key, ("",))[0] == "refused":
            accepted, why = COMMON_ACCEPTED.get(key, ()), COMMON_KEYS[key][1]
        else:
            continue
        if not any(_same(value, ok) for ok in accepted):
            allowed = f"; archzoo counts {' or '.join(_text(a) for a in accepted)} only" if accepted else ""
            raise HFConfigError(f"{path}: {key}: {_text(value)} is not supported: {why}{allowed}")
    return plain


# ---- the field types transformers' strict validation checks -------------------------------------------


def _check_field_types(path: Path, data: Mapping[str, Any], table: HFTable, prefix: str = "") -> None:
    """Refuse a key whose value the type of its configuration-class field refuses, as transformers 5.23's strict
    dataclasses do when the file loads (``StrictDataclassFieldValidationError``), whether archzoo reads the key or
    ignores it: ``rms_norm_eps: null`` changes no count, yet transformers loads no such file. The annotations are
    transformers' own, derived from its source (`archzoo.hf_keys_read.FIELD_TYPES`); a key given through an alias of
    ``attribute_map`` is not a field, and transformers checks it no more than archzoo does. A sub-configuration's
    object (and a legacy override of it) is checked with its own class's types, as transformers builds it."""
    fields = _derived().FIELD_TYPES.get(table.model_type)
    if fields is None:
        return  # a third-party plugin's type: its class was never derived
    validators = _derived().FIELD_VALIDATORS.get(table.model_type, {})
    for key, value in data.items():
        annotation = fields.get(key)
        if annotation is None:
            continue
        if _type_matches(_annotation_tree(annotation), value):
            if key in validators:
                _check_interval(path, f"{prefix}{_key_text(key)}", value, validators[key], table)
            continue
        expected = _expected(_annotation_tree(annotation))
        if isinstance(value, int) and not isinstance(value, bool) and "float" in expected:
            fix = f"write it as a float, {value}.0"
        elif key in table.defaults and _type_matches(_annotation_tree(annotation), table.defaults[key]):
            fix = f"give {expected}, or remove the key to take {table.config_class}'s default {_text(table.defaults[key])}"
        else:
            fix = f"give {expected}"
        raise HFConfigError(
            f"{path}: {prefix}{_key_text(key)}: {_text(value)} is not {expected}, which transformers "
            f"{TRANSFORMERS_VERSION}'s {table.config_class} declares for it ({annotation}), so transformers refuses "
            f"to load the file; {fix}"
        )
    _check_loaded_common(path, data, table, prefix)
    for key, sub_table in table.nested.items():
        if isinstance(data.get(key), dict):
            _check_field_types(path, data[key], sub_table, f"{prefix}{key}.")
    for override, target in table.nested_overrides.items():
        if isinstance(data.get(override), dict):
            _check_field_types(path, data[override], table.nested[target], f"{prefix}{override}.")


#: the names of torch 2.13's dtypes (``torch.float16`` ...), a test checks them against torch: what
#: ``PreTrainedConfig.__post_init__`` looks up a dtype's text as (``getattr(torch, dtype)``)
TORCH_DTYPES = frozenset(
    {
        *("bfloat16", "bit", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8", "bool", "cdouble", "cfloat"),
        *("chalf", "complex128", "complex32", "complex64", "double", "float", "float16", "float32"),
        *("float4_e2m1fn_x2", "float64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"),
        *("float8_e8m0fnu", "half", "int", "int1", "int16", "int2", "int3", "int32", "int4", "int5", "int6"),
        *("int64", "int7", "int8", "long", "qint32", "qint8", "quint2x4", "quint4x2", "quint8", "short", "uint1"),
        *("uint16", "uint2", "uint3", "uint32", "uint4", "uint5", "uint6", "uint64", "uint7", "uint8"),
    }
)


def _check_loaded_common(path: Path, data: Mapping[str, Any], table: HFTable, prefix: str) -> None:
    """The keys of every configuration that ``PreTrainedConfig`` declares without a checked type (its annotations
    are strings) but converts or checks while loading, failing on what it cannot: the precision (``dtype``, else
    the older ``torch_dtype``), looked up as ``torch.<name>`` and printed back by splitting at a dot;
    ``id2label``'s keys, each made an integer with ``int``; a single-label classifier of one label; and attention
    weights returned (``output_attentions``) by a kernel other than eager (``validate_output_attentions``)."""
    key = "dtype" if data.get("dtype") is not None else "torch_dtype"
    dtype = data.get(key)
    if isinstance(dtype, str) and dtype not in TORCH_DTYPES:
        raise HFConfigError(
            f"{path}: {prefix}{key}: {_text(dtype)} is no torch dtype, and transformers {TRANSFORMERS_VERSION} "
            f'looks it up as torch.{dtype} when it loads the file; give one such as "bfloat16" or "float32", '
            "or remove the key (archzoo reports the memory at every precision)"
        )
    if dtype is not None and not isinstance(dtype, (str, int, dict)) and "." not in str(dtype):
        # PreTrainedConfig.dict_dtype_to_str prints it as str(dtype).split(".")[1] whenever the config is shown
        raise HFConfigError(
            f"{path}: {prefix}{key}: {_text(dtype)} is no precision transformers {TRANSFORMERS_VERSION} can print "
            'back (it fails on loading the file); give a torch dtype\'s name such as "bfloat16", or remove the key'
        )
    id2label = data.get("id2label")
    labels = len(id2label) if isinstance(id2label, dict) else data.get("num_labels", 2)
    if data.get("problem_type") == "single_label_classification" and labels == 1:
        raise HFConfigError(
            f'{path}: {prefix}problem_type: "single_label_classification" with 1 label, which transformers '
            f"{TRANSFORMERS_VERSION} refuses when it loads the file; give 2 labels for a binary classifier, or "
            '"regression" for one output'
        )
    # the attention kernel: attn_implementation, replaced by _attn_implementation (an object: its "" entry)
    kernel = data.get("attn_implementation")
    if "_attn_implementation" in data:
        given = data["_attn_implementation"]
        kernel = given.get("", kernel) if isinstance(given, dict) else given
    if data.get("output_attentions") and kernel not in ("eager", None):
        raise HFConfigError(
            f"{path}: {prefix}output_attentions: {_text(data['output_attentions'])} with the attention kernel "
            f"{_text(kernel)}, which transformers {TRANSFORMERS_VERSION} refuses when it loads the file (only eager "
            'attention returns its weights); set output_attentions to false, or the kernel to "eager"'
        )
    if isinstance(id2label, dict):
        for label in id2label:
            try:
                int(label)
            except ValueError:
                raise HFConfigError(
                    f"{path}: {prefix}id2label: the label id {_text(label)} is no integer, and transformers "
                    f"{TRANSFORMERS_VERSION} makes each id an integer when it loads the file; number the labels "
                    '0, 1, ... ({"0": "NEGATIVE", "1": "POSITIVE"})'
                ) from None


def _check_interval(path: Path, key: str, value: Any, validator: str, table: HFTable) -> None:
    """A port of ``transformers.utils.type_validators.interval``, the one value validator of the supported classes
    (hf_keys stops on any other): the value between ``min`` and ``max``, each bound included unless excluded."""
    call = _annotation_tree(validator)
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "interval", validator
    bounds = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    low, high = bounds.get("min"), bounds.get("max")
    above = low is None or (low < value if bounds.get("exclude_min") else low <= value)
    below = high is None or (value < high if bounds.get("exclude_max") else value <= high)
    if not (above and below):
        default = table.defaults.get(key.rpartition(".")[2])
        raise HFConfigError(
            f"{path}: {key}: {_text(value)} is outside the interval transformers {TRANSFORMERS_VERSION}'s "
            f"{table.config_class} declares for it ({validator}), so transformers refuses to load the file; give a "
            "value inside it"
            + (f", or remove the key to take its default {_text(default)}" if default is not None else "")
        )


@functools.cache
def _annotation_tree(annotation: str) -> ast.expr:
    return ast.parse(annotation, mode="eval").body


def _arguments(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


#: a JSON value against a plain type, as ``isinstance`` sees it (a bool is no int; an int is no float)
_SIMPLE_TYPES: dict[str, Callable[[Any], bool]] = {
    "Any": lambda v: True,
    "None": lambda v: v is None,
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, float),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "dict": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
    "Sequence": lambda v: isinstance(v, (list, str)),
}


def _type_matches(node: ast.expr, value: Any) -> bool:
    """Whether the strict validation of huggingface_hub 2.4 (``type_validator``) accepts a JSON value for a field
    annotated ``node``: a union takes any member; ``Literal`` compares a bool only with bools and an int only with
    ints; ``list``, ``dict`` and ``Sequence`` check their items; a tuple, a set or a class (a ``TypedDict``, a
    configuration class, ``torch.dtype``) is nothing JSON holds; a string annotation is not checked."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _type_matches(node.left, value) or _type_matches(node.right, value)
    if isinstance(node, ast.Constant):
        return (node.value is None and value is None) or isinstance(node.value, str)
    if isinstance(node, ast.Name):
        return _SIMPLE_TYPES.get(node.id, lambda v: False)(value)
    if isinstance(node, ast.Subscript):
        origin, args = ast.unparse(node.value), _arguments(node)
        if origin in ("Union", "Optional"):
            return any(_type_matches(a, value) for a in args) or (origin == "Optional" and value is None)
        if origin == "Literal":
            allowed = [a.value for a in args if isinstance(a, ast.Constant)]
            if isinstance(value, bool):
                return value in [a for a in allowed if isinstance(a, bool)]
            if isinstance(value, int):
                return value in [a for a in allowed if isinstance(a, int) and not isinstance(a, bool)]
            return value in allowed
        if origin in ("list", "List", "Sequence"):
            return _SIMPLE_TYPES[origin.replace("List", "list")](value) and all(
                _type_matches(args[0], v) for v in value
            )
        if origin in ("dict", "Dict"):
            return isinstance(value, dict) and all(
                _type_matches(args[0], k) and _type_matches(args[1], v) for k, v in value.items()
            )
    return False  # tuple[...], set[...], a class: no JSON value is one


def _expected(node: ast.expr) -> str:
    """An annotation in JSON's words, leaving out what no JSON value can be (a tuple, a class)."""
    words: list[str] = []

    def add(part: ast.expr) -> None:
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
            add(part.left)
            add(part.right)
            return
        if isinstance(part, ast.Subscript) and ast.unparse(part.value) in ("Union", "Optional"):
            for a in _arguments(part):
                add(a)
            if ast.unparse(part.value) == "Optional":
                words.append("null")
            return
        text = _JSON_WORDS.get(ast.unparse(part))
        if text is None and isinstance(part, ast.Subscript):
            origin, args = ast.unparse(part.value), _arguments(part)
            if origin == "Literal":
                text = "one of " + ", ".join(_text(a.value) for a in args if isinstance(a, ast.Constant))
            elif origin in ("list", "List", "Sequence"):
                text = f"a list of {_JSON_PLURALS.get(ast.unparse(args[0]), ast.unparse(args[0]))}"
            elif origin in ("dict", "Dict"):
                text = "an object"
        if text is not None and text not in words:
            words.append(text)

    add(node)
    return " or ".join(words) or "a value JSON cannot hold"


_JSON_WORDS = {
    "None": "null",
    "int": "an integer",
    "float": "a float",
    "bool": "true or false",
    "str": "a string",
    "dict": "an object",
    "list": "a list",
    "Sequence": "a list or a string",
    "Any": "any value",
}
_JSON_PLURALS = {"int": "integers", "float": "floats", "str": "strings", "bool": "booleans"}


def _reader_of(model_type: str, key: str) -> str | None:
    """The first transformers module of the type's code that reads ``key`` from its config (`hf_keys_read`)."""
    derived = _derived()
    scope = derived.MODEL_SCOPE[model_type] + derived.CONFIG_SCOPE[model_type]
    for module in scope:
        patterns = derived.READ_PATTERNS.get(module, frozenset())
        if key in derived.READS[module] or any(fnmatchcase(key, p) for p in patterns):
            return module
    return None


def _module_name(module: str) -> str:
    """``config:transformers.models.llama.configuration_llama`` -> ``configuration_llama``."""
    return module.removeprefix("config:").removeprefix("transformers.").split(".")[-1]


def _plain_attributes(path: Path, unknown: list[str], table: HFTable) -> dict[str, str]:
    """Keys that are no field of the configuration class: transformers' ``__post_init__`` sets each as a plain
    attribute. One that no module of the type's code reads is ignored, with why; one that some module reads
    is refused, naming the module (archzoo does not model it); for a model type whose code was never
    derived (a third-party plugin's), every such key is refused, as archzoo cannot tell."""
    if not unknown:
        return {}
    derived = _derived()
    model_type = table.model_type
    if model_type not in derived.MODEL_SCOPE:
        first = unknown[0]
        known = sorted(set(table.defaults) | set(table.aliases) | set(table.read) | set(COMMON_KEYS))
        near = closest(first, known)
        hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        others = ", ".join(_key_text(k) for k in unknown[1:6])
        more = f" (also unknown: {others}{', ...' if len(unknown) > 6 else ''})" if unknown[1:] else ""
        raise HFConfigError(
            f"{path}: {_key_text(first)}: unknown key for model type {model_type!r}; {hint}transformers "
            f"{TRANSFORMERS_VERSION}'s {table.config_class} has no such field and archzoo cannot tell whether it "
            f"changes the model, so it refuses rather than guess; remove the key if it does not"
            f"{more}"
        )
    modeling = _module_name(derived.MODEL_SCOPE[model_type][0])
    fields = sorted(set(table.defaults) | set(table.aliases))
    plain: dict[str, str] = {}
    for key in unknown:
        defined = next((m for m in derived.CONFIG_SCOPE[model_type] if key in derived.MEMBERS.get(m, ())), None)
        if defined is not None:
            raise HFConfigError(
                f"{path}: {_key_text(key)}: names a method, property or class variable of transformers "
                f"{TRANSFORMERS_VERSION}'s {table.config_class} ({_module_name(defined)}), which the key would "
                "replace on the loaded config: transformers fails to load the file, or its code finds the value "
                "in place of the member, so archzoo refuses it; remove the key"
            )
        module = _reader_of(model_type, key)
        if module is not None:
            where = (
                f"{table.config_class}'s configuration code ({_module_name(module)})"
                if module.startswith("config:")
                else _module_name(module)
            )
            raise HFConfigError(
                f"{path}: {_key_text(key)}: not a field of transformers {TRANSFORMERS_VERSION}'s "
                f"{table.config_class}, but kept as an attribute that its {where} reads, which archzoo does not "
                "model, so it refuses rather than guess; remove the key only if this model does not use it"
            )
        near = difflib.get_close_matches(key, fields, n=1, cutoff=0.8)
        hint = f"; not {near[0]}, which transformers reads under that name only" if near else ""
        plain[key] = (
            f"stored as a plain attribute, never read by transformers {TRANSFORMERS_VERSION}'s {modeling} "
            f"(nor the modules it imports from, nor {table.config_class}){hint}"
        )
    return plain


#: transformers' default base wavelength of the rotary embedding (``RotaryEmbeddingConfigMixin.default_theta``)
DEFAULT_ROPE_THETA = 10_000.0
#: the rotary types whose pre-training length ``standardize_rope_params`` moves into ``rope_parameters``
SCALING_ROPE_TYPES = ("llama3", "yarn", "longrope")
#: rotary types a configuration class renames while loading (``Phi3Config.convert_rope_params_to_dict``)
ROPE_TYPE_RENAMES: dict[str, dict[str, str]] = {"Phi3Config": {"su": "longrope", "yarn": "longrope"}}
#: where the conversion takes the entries ``rope_parameters`` lacks: entry -> (the file key it pops, default;
#: None: no entry); a class with its own ``convert_rope_params_to_dict`` has its own sources
ROPE_FILLS: dict[str, dict[str, tuple[str, float | None]]] = {
    "": {"rope_theta": ("rope_theta", DEFAULT_ROPE_THETA), "partial_rotary_factor": ("partial_rotary_factor", None)},
    # Phi3Config always fills partial_rotary_factor, and keeps the file's key as an attribute too
    "Phi3Config": {
        "rope_theta": ("rope_theta", DEFAULT_ROPE_THETA),
        "partial_rotary_factor": ("partial_rotary_factor", 1.0),
    },
    # GPTNeoXConfig takes them from its own legacy names
    "GPTNeoXConfig": {
        "rope_theta": ("rotary_emb_base", DEFAULT_ROPE_THETA),
        "partial_rotary_factor": ("rotary_pct", 0.25),
    },
}
#: configuration classes whose validation refuses longrope factors that are not a list of numbers, one for
#: each pair of rotary dimensions (``Phi3Config.validate_rope``)
ROPE_FACTORS_CHECKED = ("Phi3Config",)
_CONVERTED = "converted into {} (as transformers does)"
#: the keys each rotary type's validation requires, else it raises while loading
#: (``RotaryEmbeddingConfigMixin._validate_<type>_rope_parameters``)
ROPE_REQUIRED_KEYS: dict[str, set[str]] = {
    "default": {"rope_type"},
    "linear": {"rope_type", "factor"},
    "dynamic": {"rope_type", "factor"},
    "yarn": {"rope_type", "factor", "original_max_position_embeddings"},
    "longrope": {"rope_type", "short_factor", "long_factor", "original_max_position_embeddings"},
    "llama3": {
        "rope_type",
        "factor",
        "original_max_position_embeddings",
        "low_freq_factor",
        "high_freq_factor",
        "rope_theta",
    },
    "proportional": {"rope_type", "rope_theta"},
}


def _file_value(data: Mapping[str, Any], table: HFTable, native: str) -> Any:
    """A field's value as transformers resolves it: the file's alias (applied last), its key, or the default."""
    for alias, target in table.aliases.items():
        if target == native and alias in data:
            return data[alias]
    return data.get(native, table.defaults.get(native))


def _unconverted_rope_keys(
    data: Mapping[str, Any], table: HFTable, sources: Mapping[str, tuple[str, Any]], accounted: set[str]
) -> dict[str, KeyReading]:
    """The generic rotary keys (``rope_theta``, ``partial_rotary_factor``) in the file of a class whose own
    conversion takes those entries from other keys (GPTNeoXConfig: ``rotary_emb_base``, ``rotary_pct``): such a key
    is no field, so transformers sets it as a plain attribute only after the conversion, and
    ``standardize_rope_params``, the one code that reads it, has run by then; the loaded ``rope_parameters`` (all
    the model reads) never holds its value."""
    if sources is ROPE_FILLS[""]:
        return {}
    readings: dict[str, KeyReading] = {}
    for entry, (generic, _) in ROPE_FILLS[""].items():
        own = sources.get(entry, (generic, None))[0]
        if own == generic or generic not in data or generic in accounted:
            continue
        readings[generic] = KeyReading(
            generic,
            data[generic],
            "ignored",
            "",
            f"not read: transformers {TRANSFORMERS_VERSION}'s {table.config_class} fills rope_parameters.{entry} from "
            f"{own} instead, and sets this key as a plain attribute after the rotary settings are built, where "
            "nothing reads it",
        )
    return readings


def _convert(path: Path, data: Mapping[str, Any], table: HFTable) -> tuple[dict[str, KeyReading], Any]:
    """The rotary keys transformers 5.23 converts while loading, for a class with ``rope_parameters``: each
    converted key's reading, and ``rope_parameters`` as the loaded config holds it (None: nothing to convert).

    A port of ``RotaryEmbeddingConfigMixin.convert_rope_params_to_dict`` and ``standardize_rope_params``
    (Phi3Config's and GPTNeoXConfig's own variants where they differ): ``rope_scaling`` replaces
    ``rope_parameters`` when it is not empty; ``rope_theta`` and ``partial_rotary_factor`` (`ROPE_FILLS`)
    fill the ones ``rope_parameters`` lacks; the old ``type`` names ``rope_type``; a scaling type takes the
    pre-training length."""
    if "rope_parameters" not in table.defaults:
        return {}, None
    sources = ROPE_FILLS.get(table.config_class, ROPE_FILLS[""])
    accounted = set(table.defaults) | set(table.read) | set(table.ignored) | set(table.aliases)
    readings = _unconverted_rope_keys(data, table, sources, accounted)
    # the keys the class's conversion pops that the plugin's table does not account for itself
    legacy = [
        k for k in ("rope_scaling", *(source for source, _ in sources.values())) if k in data and k not in accounted
    ]
    popped = [source for source, _ in sources.values() if source in data]
    if not legacy and not popped and "rope_parameters" not in data and "original_max_position_embeddings" not in data:
        return readings, None
    scaling = data.get("rope_scaling")
    if "rope_scaling" in legacy and scaling and not isinstance(scaling, dict):
        raise HFConfigError(
            f'{path}: rope_scaling: expected an object such as {{"rope_type": "linear", "factor": 2.0}} or null, '
            f"got {_text(scaling)}; transformers cannot load it either (it converts the key into rope_parameters)"
        )
    given = data.get("rope_parameters", table.defaults["rope_parameters"])
    rope = scaling if "rope_scaling" in legacy and scaling else given
    if rope is not None and not isinstance(rope, dict):
        raise HFConfigError(
            f'{path}: rope_parameters: expected an object such as {{"rope_type": "default"}} or null, '
            f"got {json.dumps(rope)[:60]}"
        )
    rope = dict(rope or {})
    if "layer_types" in table.defaults:
        # transformers nests rotary settings under the layer types the class declares (computed ones when the
        # file gives none: these classes name their layers full_attention or sliding_attention)
        given_types = data.get("layer_types")
        labels = given_types if isinstance(given_types, list) else ["full_attention", "sliding_attention"]
        nested = [k for k, v in rope.items() if k in labels and isinstance(v, dict)]
        if nested and table.rope_per_layer_type:
            return readings, None  # the plugin's table reads (or proves unread) the settings of each layer type
        if nested:
            source = "rope_scaling" if "rope_scaling" in legacy and scaling else "rope_parameters"
            raise HFConfigError(
                f"{path}: {source}: rotary settings per layer type ({', '.join(nested)}), which transformers "
                f"{TRANSFORMERS_VERSION}'s {table.config_class} loads but its model cannot be built from (its "
                "rotary embedding reads one rope_type); give one set of settings"
            )
    if "rope_scaling" in legacy:
        if scaling:
            replaced = (
                "; it takes the place of the file's rope_parameters, as in transformers"
                if "rope_parameters" in data
                else ""
            )
            readings["rope_scaling"] = KeyReading(
                "rope_scaling", scaling, "converted", "", _CONVERTED.format("rope_parameters") + replaced
            )
        else:
            readings["rope_scaling"] = KeyReading(
                "rope_scaling",
                scaling,
                "ignored",
                "",
                "empty, so transformers' conversion into rope_parameters leaves rope_parameters as it is",
            )
    for entry, (source, default) in sources.items():
        value = data.get(source, default)
        if source in legacy:
            readings[source] = (
                KeyReading(
                    source,
                    value,
                    "ignored",
                    "",
                    f"rope_parameters gives its own {entry}, which transformers keeps (this key only fills a "
                    "missing one)",
                )
                if entry in rope
                else KeyReading(source, value, "converted", "", _CONVERTED.format(f"rope_parameters.{entry}"))
            )
        if value is not None:
            rope.setdefault(entry, value)
    rope.setdefault("rope_type", rope.get("type", "default"))
    kind = rope["rope_type"]
    if isinstance(kind, str) and kind in SCALING_ROPE_TYPES:
        if "original_max_position_embeddings" in table.defaults:
            rope["original_max_position_embeddings"] = _file_value(data, table, "original_max_position_embeddings")
        else:
            rope.setdefault("original_max_position_embeddings", _file_value(data, table, "max_position_embeddings"))
    if isinstance(kind, str) and kind in ROPE_TYPE_RENAMES.get(table.config_class, {}):
        rope["rope_type"] = ROPE_TYPE_RENAMES[table.config_class][kind]
    kind = rope["rope_type"]
    missing = sorted(ROPE_REQUIRED_KEYS.get(kind, set()) - set(rope)) if isinstance(kind, str) else []
    if missing:
        source = "rope_scaling" if "rope_scaling" in legacy and scaling else "rope_parameters"
        raise HFConfigError(
            f"{path}: {source}: the rope type {kind} needs {' and '.join(missing)}, and transformers "
            f"{TRANSFORMERS_VERSION}'s {table.config_class} refuses to load the file without "
            f"{'them' if len(missing) > 1 else 'it'} (read as rope_parameters: {_text(rope)}); add "
            f"{'them' if len(missing) > 1 else 'it'}"
        )
    if table.config_class in ROPE_FACTORS_CHECKED:
        _check_rope_factors(path, data, table, rope, "rope_scaling" if "rope_scaling" in legacy and scaling else "")
    if "max_position_embeddings" in table.defaults:
        _check_rope_comparisons(path, data, table, rope, "rope_scaling" if "rope_scaling" in legacy and scaling else "")
    top = "original_max_position_embeddings"
    if top in data and top not in table.defaults and not _model_code_reads(table.model_type, top):
        kind = rope["rope_type"]
        readings[top] = (
            KeyReading(
                top,
                data[top],
                "converted",
                "",
                f"converted into rope_parameters.{top} when transformers builds the rotary embedding "
                "(standardize_rope_params takes this attribute first for the rope types llama3, yarn and longrope)",
            )
            if isinstance(kind, str) and kind in SCALING_ROPE_TYPES
            else KeyReading(
                top,
                data[top],
                "ignored",
                "",
                "stored as a plain attribute, read only by transformers' rotary set-up for the rope types llama3, "
                f"yarn and longrope, and this file's is {_text(kind)}",
            )
        )
    return readings, rope


def _check_rope_factors(path: Path, data: Mapping[str, Any], table: HFTable, rope: dict, source: str) -> None:
    """Refuse the longrope factors transformers' validation refuses: each a list of numbers, as long as half
    the rotary dimensions (hidden_size // num_attention_heads x partial_rotary_factor)."""
    width, heads = _file_value(data, table, "hidden_size"), _file_value(data, table, "num_attention_heads")
    partial = rope.get("partial_rotary_factor")
    whole = [isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (width, heads)]
    if not all(whole) or not isinstance(partial, (int, float)):
        return  # the configuration model reports a bad width or head count under its own key
    half = int(width // heads * partial) // 2
    for name in ("short_factor", "long_factor"):
        factors = rope.get(name)
        if factors is None:
            continue
        where = f"{source or 'rope_parameters'}: {name}"
        if not (isinstance(factors, list) and all(isinstance(x, (int, float)) for x in factors)):
            raise HFConfigError(
                f"{path}: {where}: expected a list of numbers, got {_text(factors)}; transformers "
                f"{TRANSFORMERS_VERSION}'s {table.config_class} refuses the file otherwise"
            )
        if len(factors) != half:
            raise HFConfigError(
                f"{path}: {where}: {len(factors)} values, but transformers {TRANSFORMERS_VERSION}'s "
                f"{table.config_class} requires {half}, one per pair of rotary dimensions (hidden_size // "
                "num_attention_heads x partial_rotary_factor), and refuses the file otherwise"
            )


def _check_rope_comparisons(path: Path, data: Mapping[str, Any], table: HFTable, rope: dict, source: str) -> None:
    """Refuse the rotary settings transformers' validation fails on rather than warns about: it compares yarn's
    beta_fast with beta_slow and divides the length by the pre-training one, and compares llama3's frequency
    factors and pre-training length, and a value of another type (text, a list) makes the comparison raise. The
    same operations on the same values, as ``_validate_yarn_rope_parameters`` and
    ``_validate_llama3_rope_parameters`` run them."""
    kind, length = rope.get("rope_type"), _file_value(data, table, "max_position_embeddings")
    try:
        if kind == "yarn":
            _ = (rope.get("beta_fast") or 32) < (rope.get("beta_slow") or 1)
            _ = length / rope["original_max_position_embeddings"]
        elif kind == "llama3":
            _ = rope["high_freq_factor"] <= rope["low_freq_factor"]
            _ = rope["original_max_position_embeddings"] >= length
    except (TypeError, ZeroDivisionError, KeyError) as exc:
        raise HFConfigError(
            f"{path}: {source or 'rope_parameters'}: the {kind} settings {_text(rope)} fail transformers "
            f"{TRANSFORMERS_VERSION}'s validation of {table.config_class} ({type(exc).__name__}: {exc}), so it "
            "refuses to load the file; give numbers"
        ) from None


def _model_code_reads(model_type: str, key: str) -> bool:
    """Whether the type's modeling code (not its configuration code) reads ``key``; True when not derived."""
    derived = _derived()
    if model_type not in derived.MODEL_SCOPE:
        return True
    reader = _reader_of(model_type, key)
    return reader is not None and not reader.startswith("config:")


def _resolve(
    path: Path, data: dict[str, Any], table: HFTable
) -> tuple[list[KeyReading], dict[str, Any], dict[str, str]]:
    """Every key's disposition, the values transformers would resolve, and the file key behind each archzoo key."""
    converted, rope = _convert(path, data, table)
    plain = _refuse(path, {k: v for k, v in data.items() if k not in converted}, table)
    keys: list[KeyReading] = []
    given: dict[str, Any] = {}
    origin: dict[str, str] = {}  # archzoo key -> the file key it was read from
    rope_target = table.read.get("rope_parameters", "")
    if rope is not None:
        given["rope_parameters"] = rope
        from_keys = [k for k in converted if k != "original_max_position_embeddings"]
        if rope_target:
            origin[rope_target] = (
                "rope_scaling"
                if converted.get("rope_scaling", KeyReading("", None, "ignored")).disposition == "converted"
                else "rope_parameters"
                if "rope_parameters" in data
                else from_keys[0]
                if from_keys
                else "rope_parameters"
            )
    own_targets = {target: native for native, target in table.read.items() if target}
    for key in table.nested:  # first, so that a key of the class itself names the archzoo key it sets
        nested_keys, given[key], nested_origin = _resolve_nested(path, data, table, key)
        keys += [_shadowed(table, key, k, own_targets) if k.archzoo_key in own_targets else k for k in nested_keys]
        origin.update({t: k for t, k in nested_origin.items() if t not in own_targets})
    for key, value in data.items():
        native = table.aliases.get(key, key)
        alias = native != key
        overridden_by = next((a for a, n in table.aliases.items() if n == key and a in data), None)
        if key in table.nested:
            continue  # read above, key by key
        if key in table.nested_overrides:
            keys.append(_override_reading(table, key, value))
            continue
        if key in converted:
            keys.append(converted[key])
        elif key in plain:
            keys.append(KeyReading(key, value, "ignored", "", plain[key]))
        elif key == "rope_parameters" and rope is not None:
            keys.append(
                KeyReading(
                    key,
                    rope,
                    "read" if rope_target else "ignored",
                    rope_target,
                    (
                        f"the file's {_text(value)} is replaced by rope_scaling, which transformers takes first "
                        "when both are given; shown"
                        if converted.get("rope_scaling", KeyReading("", None, "ignored")).disposition == "converted"
                        else "shown"
                    )
                    + " as transformers holds it once loaded (rope_type, rope_theta and the rest filled in)"
                    + ("" if rope_target else "; " + table.ignored.get("rope_parameters", "")),
                )
            )
        elif native in table.read and not (key == "id2label" or key == "num_labels"):
            target = table.read[native]
            if overridden_by:
                keys.append(
                    KeyReading(
                        key,
                        value,
                        "ignored",
                        "",
                        f"overridden by its alias {overridden_by}, which transformers applies last",
                    )
                )
                continue
            given[native] = value
            origin[target] = key
            if data.get(table.superseded.get(native, "")) is not None:  # the file gives the key that wins
                winner = table.superseded[native]
                why = f"not used: the file gives {winner}, and {table.config_class} then does not use {native}"
                keys.append(KeyReading(key, value, "ignored", "", why))
                continue
            keys.append(KeyReading(key, value, "read", target, f"alias of {native}" if alias else ""))
        elif native in table.ignored:
            keys.append(
                KeyReading(key, value, "ignored", "", (f"alias of {native}: " if alias else "") + table.ignored[native])
            )
        elif native in table.refused:
            keys.append(KeyReading(key, value, "read", "", _checked(table.refused[native])))
        elif key in ("id2label", "num_labels"):
            continue  # below, with the label count
        elif key == "auto_map":
            keys.append(
                KeyReading(
                    key,
                    value,
                    "ignored",
                    "",
                    f"names custom code, which transformers {TRANSFORMERS_VERSION} runs only with "
                    f"trust_remote_code; model type {table.model_type} is one it builds natively, so without "
                    f"that flag it builds its own {table.config_class} and classes, and archzoo counts those",
                )
            )
        else:
            disposition, why = COMMON_KEYS[key]
            if disposition == "refused":
                keys.append(
                    KeyReading(
                        key, value, "ignored", "", f"empty, so nothing to count; a non-empty value is refused: {why}"
                    )
                )
            else:
                keys.append(KeyReading(key, value, disposition, "", why))
    if rope is not None and "rope_parameters" not in data:
        sources = ROPE_FILLS.get(table.config_class, ROPE_FILLS[""])
        used = [k for k in ("rope_scaling", *(source for source, _ in sources.values())) if k in data]
        built = ", ".join(used) or f"{table.config_class}'s defaults"
        keys.append(
            KeyReading(
                "rope_parameters",
                rope,
                "read" if rope_target else "ignored",
                rope_target,
                f"not in the file: built from {built} while loading, as transformers does",
            )
        )

    num_labels = _labels(path, data, table, keys, origin)
    for native, target in table.read.items():
        if native in table.defaults and native not in given:
            keys.append(
                KeyReading(native, table.defaults[native], "defaulted", target, f"{table.config_class}'s default")
            )
    for native, refusal in table.refused.items():
        if native in table.defaults and native not in data and not any(table.aliases.get(k) == native for k in data):
            keys.append(
                KeyReading(
                    native,
                    table.defaults[native],
                    "defaulted",
                    "",
                    f"{table.config_class}'s default; {_checked(refusal)}",
                )
            )
    resolved = {**table.defaults, **given, "num_labels": num_labels}
    return keys, resolved, origin


def _shadowed(table: HFTable, key: str, reading: KeyReading, own_targets: Mapping[str, str]) -> KeyReading:
    """A sub-configuration's key whose archzoo key the class's own table reads too (CLIPConfig's projection_dim
    and text_config's): the class's own key sets it, as in transformers, where CLIPModel projects to
    config.projection_dim and never reads text_config.projection_dim. Only a class built from the
    sub-configuration alone reads its copy, and that class reads the sub-configuration as a file of its own."""
    native = own_targets[reading.archzoo_key]
    towers = [c for c, k in table.class_sub_configs.items() if k == key]
    alone = (
        f"a class built from {key} alone ({', '.join(towers)}) reads {key} as a file of its own"
        if towers
        else f"no class archzoo counts is built from {key} alone"
    )
    why = (
        f"not read: {table.config_class}'s classes take {reading.archzoo_key} from its own {native}, never from "
        f"{key}; {alone}"
    )
    if reading.disposition == "defaulted":
        return replace(reading, archzoo_key="", detail=f"{reading.detail}; {why}")
    return replace(reading, disposition="ignored", archzoo_key="", detail=why)


def _override_reading(table: HFTable, key: str, value: Any) -> KeyReading:
    """How a legacy key that replaces a sub-configuration (`HFTable.nested_overrides`) was read."""
    target = table.nested_overrides[key]
    sub = table.nested[target].config_class
    if value is None:
        return KeyReading(key, value, "ignored", "", f"null: {table.config_class} leaves {target} as it is")
    return KeyReading(
        key,
        value,
        "converted",
        "",
        f"converted into {target} (as transformers' {table.config_class} does while loading): a {sub} built from "
        f"this object alone, its defaults filling the rest, replaces every field of {target}",
    )


def _resolve_nested(
    path: Path, data: dict[str, Any], table: HFTable, key: str
) -> tuple[list[KeyReading], dict[str, Any], dict[str, str]]:
    """A sub-configuration (`HFTable.nested`) read with its own class's table, as the configuration class builds
    it while loading: its object (null or absent: the class's defaults), with the fields a legacy override key
    gives (`HFTable.nested_overrides`) put in place of its own. Each reading and each message names its key as
    ``key.sub_key`` (``text_config_dict.sub_key`` for a value the override gave)."""
    sub_table = table.nested[key]
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise HFConfigError(
            f"{path}: {key}: expected an object of {sub_table.config_class}'s keys or null, got {_text(value)}; "
            f"transformers' {table.config_class} refuses anything else"
        )
    sub = dict(value or {})
    prefixes = dict.fromkeys(sub, key)
    replaced: list[KeyReading] = []
    for override, target in table.nested_overrides.items():
        given = data.get(override)
        if target != key or given is None:
            continue
        if not isinstance(given, dict):
            raise HFConfigError(
                f"{path}: {override}: expected an object of {sub_table.config_class}'s keys or null, got "
                f"{_text(given)}; transformers' {table.config_class} refuses anything else"
            )
        # transformers builds the sub-configuration from the override alone and writes all its fields (and the
        # keys every configuration holds) over the object: the object keeps only its other keys
        fields = set(sub_table.defaults) | set(COMMON_DEFAULTS) | {"model_type", "transformers_version"}
        for name in [k for k in sub if k in fields and k not in given]:
            replaced.append(
                KeyReading(
                    f"{key}.{name}",
                    sub.pop(name),
                    "ignored",
                    "",
                    f"replaced by {sub_table.config_class}'s default, as {override} is given and transformers' "
                    f"{table.config_class} builds {key}'s fields from it alone",
                )
            )
        for name in given:
            if name in sub:
                replaced.append(
                    KeyReading(
                        f"{key}.{name}",
                        sub[name],
                        "ignored",
                        "",
                        f"replaced by {override}.{name}, as transformers does",
                    )
                )
        sub.update(given)
        prefixes.update(dict.fromkeys(given, override))
    model_type = sub.pop("model_type", None)
    try:
        sub_keys, resolved, sub_origin = _resolve(path, sub, sub_table)
    except HFConfigError as exc:
        message = str(exc)
        head = f"{path}: "
        if message.startswith(head):
            rest = message.removeprefix(head)
            name = rest.split(":", 1)[0]
            message = head + f"{prefixes.get(name, key)}." + rest
        raise HFConfigError(message) from None
    keys = [*replaced]
    if model_type is not None:
        keys.append(
            KeyReading(
                f"{prefixes.get('model_type', key)}.model_type",
                model_type,
                "ignored",
                "",
                f"transformers' {table.config_class} builds {key} as a {sub_table.config_class} whatever model type "
                "it names",
            )
        )
    for reading in sub_keys:
        keys.append(replace(reading, key=f"{prefixes.get(reading.key, key)}.{reading.key}"))
    origin = {target: f"{prefixes.get(name, key)}.{name}" for target, name in sub_origin.items()}
    return keys, resolved, origin


def _labels(path: Path, data: dict[str, Any], table: HFTable, keys: list[KeyReading], origin: dict[str, str]) -> Any:
    """The label count as transformers resolves it: num_labels, else the length of id2label, else the
    configuration class's default (2, or the table's ``default_num_labels``). A table that reads no label count
    (no class of it builds a classifier: CLIPTextConfig, nested in a clip file or a file of its own) reports the
    keys that give it as ignored, as none of its classes reads them."""
    labels_target = table.read.get("num_labels", "")
    id2label = data.get("id2label")
    if "id2label" in data and id2label is not None and not isinstance(id2label, dict):
        raise HFConfigError(f"{path}: id2label: expected an object mapping label ids to names, got {_text(id2label)}")
    if not labels_target:
        unread = (
            f"a label count: transformers keeps it in the {table.config_class}, but no class reads a "
            f"{table.config_class}'s label count (none built from one has a classifier)"
        )
        keys += [KeyReading(k, data[k], "ignored", "", unread) for k in ("num_labels", "id2label") if k in data]
        if "num_labels" in data:
            return data["num_labels"]
        return len(id2label) if id2label is not None else table.default_num_labels
    if "num_labels" in data:
        given = data["num_labels"]
        num_labels = _label_count(given)
        detail = COMMON_KEYS["num_labels"][1]
        if not _same(num_labels, given):
            detail += (
                f"; transformers {TRANSFORMERS_VERSION} makes id2label of range({_text(given)}), so "
                f"{num_labels} label{'' if num_labels == 1 else 's'}"
            )
        keys.append(KeyReading("num_labels", given, "read", labels_target, detail))
        origin[labels_target] = (
            "num_labels"
            if _same(num_labels, given)
            else f"num_labels {_text(given)} ({num_labels} label{'' if num_labels == 1 else 's'} in transformers)"
        )
        if id2label is not None:
            keys.append(
                KeyReading(
                    "id2label",
                    id2label,
                    "ignored",
                    "",
                    "num_labels is given and wins: transformers rebuilds id2label from it",
                )
            )
    elif id2label is not None:
        num_labels = len(id2label)
        keys.append(
            KeyReading(
                "id2label",
                id2label,
                "read",
                labels_target,
                f"its length: {num_labels:,} label{'' if num_labels == 1 else 's'}",
            )
        )
        origin[labels_target] = "id2label"
    else:
        num_labels = table.default_num_labels
        default = f"{num_labels:,} label{'' if num_labels == 1 else 's'}"
        if num_labels != 2:
            default += f" ({table.config_class}'s own default)"
        if "id2label" in data:
            keys.append(
                KeyReading("id2label", None, "ignored", "", f"null: transformers' default of {default} applies")
            )
        if labels_target:
            keys.append(
                KeyReading("num_labels", num_labels, "defaulted", labels_target, f"transformers' default: {default}")
            )
    return num_labels


def _label_count(num_labels: Any) -> Any:
    """The labels transformers makes of a file's ``num_labels``: ``PreTrainedConfig``'s setter builds ``id2label``
    from ``range(num_labels)``, so a negative count gives none and ``true`` one; a value ``range`` refuses (a float,
    text, null) fails the loading there and is left as given, for the configuration model to refuse."""
    if isinstance(num_labels, int):
        return len(range(num_labels))
    return num_labels


def _model_class(path: Path, data: dict[str, Any], table: HFTable, hf_class: str | None) -> tuple[str, str]:
    """The model class to count and where it came from: ``AutoModel``, ``--hf-class`` or ``architectures``."""
    if hf_class is None:
        return table.base_class, "AutoModel"
    where = "--hf-class"
    name = hf_class
    if hf_class == "auto":
        classes = data.get("architectures")
        if not classes:
            raise HFConfigError(
                f"{path}: architectures: --hf-class auto counts the first class of this list, but the file has "
                f"none; name the class instead, for example --hf-class {table.base_class}"
            )
        if not isinstance(classes, list) or not isinstance(classes[0], str):
            raise HFConfigError(f"{path}: architectures: expected a list of class names, got {_text(classes)}")
        name, where = classes[0], f"{path}: architectures[0]"
    if name in table.classes:
        return name, "architectures" if hf_class == "auto" else "--hf-class"
    supported = ", ".join(table.classes)
    if name in table.unsupported_classes:
        raise HFConfigError(
            f"{where}: {name} is not counted by archzoo: {table.unsupported_classes[name]}; "
            f"supported {table.model_type} classes: {supported}"
        )
    near = closest(name, table.classes, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise HFConfigError(
        f"{where}: {name!r} is not a {table.model_type} model class archzoo counts; {hint}supported: {supported}"
    )


def _validate(
    path: Path,
    arch: Architecture,
    values: dict[str, Any],
    origin: Mapping[str, str],
    overrides: Mapping[str, Any],
    model_class: str,
) -> ArchConfig:
    """The archzoo configuration; each problem names the file key (or ``--set`` key) it came from."""

    def locate(key: str) -> str:
        top = key.split(".")[0].split("[")[0]
        if top in overrides:
            return f"--set {key}"
        if top in origin:
            return f"{path}: {origin[top]}, read as {key}"
        return f"{path} (as {arch.name} {model_class})" + (f": {key}" if key else "")

    return parse_config(arch, values, error=HFConfigError, locate=locate)


def _read_untabled(
    path: Path,
    data: dict[str, Any],
    arch: Architecture,
    plugin: str,
    model_type: str,
    reader: Callable,
    overrides: dict[str, Any],
    hf_class: str | None,
) -> HFReading:
    """A plugin reader that declares no `HFTable`: its own function decides, key by key."""
    if hf_class is not None:
        raise HFConfigError(
            f"--hf-class: the reader of model type {model_type!r} (plugin {plugin!r}) declares "
            "no model classes; count the base model (leave out --hf-class)"
        )
    try:
        values = call_plugin(
            plugin, f"its reader of model type {model_type!r}", reader, data, expected=(ValueError, TypeError)
        )
    except (ValueError, TypeError) as exc:
        raise HFConfigError(f"{path}: {exc}") from None
    values = {k: v for k, v in values.items() if v is not None}
    values.update(overrides)
    keys = tuple(
        KeyReading(k, v, "read", "", f"passed to plugin {plugin!r}'s reader, which declares no key table")
        for k, v in data.items()
    )
    config = _validate(path, arch, values, {}, overrides, "")
    return HFReading(str(path), model_type, arch, config, keys, overrides=overrides)


# ---- the methodology page's section ---------------------------------------------------------------------

DOC_START = "<!-- hf-config-tables: generated by `python -m archzoo.hf_config src/archzoo/site/docs/methodology.md`; do not edit -->"
DOC_END = "<!-- /hf-config-tables -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def methodology_section(host: PluginHost) -> str:
    """The per-model-type tables of the methodology page: keys read, classes counted, keys refused."""
    lines = [DOC_START, ""]
    for model_type, found in host.hf_readers().items():
        table = hf_table(found.reader)
        if table is None:
            lines += [f"### `{model_type}`", "", f"Read by plugin `{found.plugin}`'s own function (no key table).", ""]
            continue
        lines += [f"### `{model_type}` ({table.config_class}, plugin `{found.plugin}`)", ""]
        classes = ", ".join(
            f"`{c}`"
            + (" (the default: what `AutoModel` builds)" if c == table.base_class else "")
            + (
                f" (from `{table.class_sub_configs[c]}` alone, as `from_pretrained` loads it)"
                if c in table.class_sub_configs
                else ""
            )
            for c in table.classes
        )
        lines += [f"Classes counted (`--hf-class`): {classes}.", ""]
        if table.nested:
            overrides = {target: key for key, target in table.nested_overrides.items()}
            own_targets = {target: native for native, target in table.read.items() if target}
            shadowed = [
                (f"`{key}.{n}`", own_targets[t])
                for key, sub in table.nested.items()
                for n, t in sub.read.items()
                if t in own_targets
            ]
            instead = sorted({f"`{native}`" for _, native in shadowed})
            lines += [
                "Sub-configurations, each key read as in a file of its own type: "
                + "; ".join(
                    f"`{key}` ({sub.config_class}, the table of `{sub.model_type}`"
                    + (
                        f"; `{overrides[key]}`, when given, replaces its fields as transformers does"
                        if key in overrides
                        else ""
                    )
                    + ")"
                    for key, sub in table.nested.items()
                )
                + (
                    f"; except {_listed([k for k, _ in shadowed])}, which only a class built from that "
                    f"sub-configuration alone reads: {table.config_class}'s own classes read {_listed(instead)} "
                    "instead"
                    if shadowed
                    else ""
                )
                + ".",
                "",
            ]
        if table.unsupported_classes:
            lines += [
                "Classes refused: " + "; ".join(f"`{c}`: {why}" for c, why in table.unsupported_classes.items()) + ".",
                "",
            ]
        lines += ["| key | read as | transformers' default |", "| :-- | :-- | :-- |"]
        reverse_alias: dict[str, list[str]] = {}
        for alias, native in table.aliases.items():
            reverse_alias.setdefault(native, []).append(alias)
        for native, target in table.read.items():
            name = f"`{native}`" + "".join(f" (alias `{a}`)" for a in reverse_alias.get(native, []))
            if native == "num_labels":
                name, default = "`num_labels`, else the length of `id2label`", "2"
            else:
                default = f"`{json.dumps(table.defaults.get(native))}`" if native in table.defaults else "-"
            lines.append(f"| {name} | `{target}` | {default} |")
        lines.append("")
        refused = {k: v for k, v in table.refused.items()}
        if refused:
            lines.append(
                "Refused: "
                + "; ".join(
                    f"`{k}` other than {' or '.join(f'`{json.dumps(a)}`' for a in ok)}: {_cell(why)}"
                    if ok
                    else f"`{k}`: {_cell(why)}"
                    for k, (ok, why) in refused.items()
                )
                + "."
            )
            lines.append("")
        lines.append("Ignored, changing no parameter or FLOP: " + ", ".join(f"`{k}`" for k in table.ignored) + ".")
        lines.append("")
    lines += ["### Keys of every configuration", ""]
    lines += ["| key | disposition | why |", "| :-- | :-- | :-- |"]
    generation = [k for k, (_, why) in COMMON_KEYS.items() if why == _GENERATION]
    for key, (disposition, why) in COMMON_KEYS.items():
        if why == _GENERATION:
            continue
        shown: str = "refused unless empty" if disposition == "refused" and key in COMMON_ACCEPTED else disposition
        if key == "auto_map":
            shown = "ignored for a supported type, else refused"
        lines.append(f"| `{key}` | {shown} | {_cell(why)} |")
    lines += ["", f"Ignored as generation settings: {', '.join(f'`{k}`' for k in generation)}.", ""]
    renames = "; ".join(
        f"{cls} renames " + ", ".join(f"`{a}` to `{b}`" for a, b in names.items())
        for cls, names in ROPE_TYPE_RENAMES.items()
    )
    lines += [
        "### Keys converted while loading, and plain attributes",
        "",
        f"As transformers {TRANSFORMERS_VERSION} does when it loads a file, for a configuration class with "
        "`rope_parameters`: `rope_scaling` is converted into `rope_parameters` (in its place, when not empty), "
        "`rope_theta` and `partial_rotary_factor` fill the entries `rope_parameters` lacks (default `rope_theta` "
        f"{DEFAULT_ROPE_THETA:g}), the old `type` names `rope_type`, and the rope types "
        f"{', '.join(SCALING_ROPE_TYPES)} take the pre-training length `original_max_position_embeddings`; "
        f"{renames}. The converted `rope_parameters` is checked as one written out would be.",
        "",
        "Any other key that is no field of the configuration class is kept by transformers as a plain attribute. "
        "archzoo ignores it when no module of the type's code reads it, and refuses it, naming the module, when "
        "one does. Which attributes each module reads is derived from transformers' source "
        "(`python -m archzoo.hf_keys src/archzoo/hf_keys_read.py`: the type's modeling module, every module it "
        "imports from, and the configuration code), and a test derives it again from the pinned release.",
        "",
        "Every key that is a field of the configuration class, read or ignored, is checked against the type "
        f"transformers {TRANSFORMERS_VERSION} declares for it. Its configuration classes are strict dataclasses "
        "(`huggingface_hub.dataclasses.strict`) that refuse to load a file whose value is not of the field's type "
        "(`rms_norm_eps: null`, text or a whole number for a float, `true` for an integer) or lies outside the "
        "interval its validator declares (LlamaConfig's `initializer_range`, 0 to 1), and archzoo refuses the same "
        "files, naming the type. The annotations are derived from transformers' source with the reads above, and a "
        "test loads a file of every wrong kind for every field of every type with both. A key given through an "
        "alias is not checked, as transformers checks it no more. Of the keys every configuration carries, "
        "`dtype` (else `torch_dtype`) is looked up as a torch dtype and `id2label`'s ids are made integers while "
        "loading: a value transformers fails on there is refused too.",
        "",
        DOC_END,
    ]
    return "\n".join(lines)


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def update_methodology_page(page: Path) -> bool:
    """Rewrite the generated section of ``page``; True when it changed."""
    text = page.read_text(encoding="utf-8")
    start, end = text.index(DOC_START), text.index(DOC_END) + len(DOC_END)
    new = text[:start] + methodology_section(get_host()) + text[end:]
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text
