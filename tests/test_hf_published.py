"""Published config.json files, as their authors uploaded them, counted exactly against transformers.

Every file in ``tests/data/hf_published/`` is a model's ``config.json`` transcribed as published, every key
kept (legacy keys, ``auto_map``, ``task_specific_params``, ``torch_dtype`` ...); ``SOURCES.md`` beside them
names where each was copied from. For each file, as written:

(a) archzoo's count of the base model (``archzoo count --hf-config FILE``: the class ``AutoModel`` builds)
    equals transformers' ``AutoModel.from_config`` of the same file, loaded by ``AutoConfig.from_pretrained``;
(b) with ``--hf-class auto`` (the file's first ``architectures`` entry), archzoo's count equals transformers'
    class of that name; where transformers has no such class, archzoo must refuse (exact or refused).

Parameters are ``sum(p.numel() for p in model.parameters())``; FLOPs are one eager forward pass of ``N``
tokens (128; 16 for a mixture of experts; each side of an encoder-decoder; an image model's length is fixed
by its image) under
``torch.utils.flop_counter.FlopCounterMode``. Models are built on the meta device, so a 405-billion-parameter
file costs no memory. A mixture of experts routes by the values of its activations, which the meta device
does not have: its forward pass runs on the CPU with parameters that occupy no memory (one zero broadcast
to each shape) and with the matrix products left uncomputed (`_ShapesOnly`), so FlopCounterMode still sees
and counts every product transformers dispatches, at the shapes it dispatches them. Each token reaches
exactly ``top_k`` distinct experts whatever the router's values, so the count does not depend on them; on
small Mixtral and Qwen2-MoE configurations this gives the same FLOPs as a forward pass with real random
weights (tests/transformers_models.py's ``forward_flops``), checked in `test_weightless_moe_pass_counts_what_a_real_one_does`.
"""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from archzoo.errors import HFConfigError
from archzoo.hf_config import load_hf_config
from archzoo.host import PluginHost
from archzoo.report import make_report

pytestmark = [pytest.mark.reference, pytest.mark.sweep]

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "hf_published"
CORPUS = sorted(CORPUS_DIR.glob("*.json"))

SEQ_LEN = 128  # tokens per forward pass: within every published file's limit, free on the meta device
#: tokens per forward pass of a mixture of experts, which runs on the CPU (its elementwise work is real)
ROUTED_SEQ_LEN = 16


def _data(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _cases() -> list[Any]:
    cases = []
    for path in CORPUS:
        cases.append(pytest.param(path, None, id=f"{path.stem}-base"))
        if _data(path).get("architectures"):  # --hf-class auto needs the key; files without it have one case
            cases.append(pytest.param(path, "auto", id=f"{path.stem}-auto"))
    return cases


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost().load()


@pytest.fixture(scope="module")
def T():
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    return transformers


# ---- transformers' side ---------------------------------------------------------------------------------


class _ShapesOnly:
    """Matrix products answered with zeros of the right shape instead of computed: a mixture of experts'
    forward pass then costs what its elementwise work costs. Entered *outside* FlopCounterMode, so the
    counter sees each product first, counts it from its shapes, and only then hands it here. Zero router
    logits tie every expert, so each layer's top ``k`` are its first ``k``: the same FLOPs as any routing
    (each token reaches ``k`` distinct experts), with the fewest expert loops transformers runs."""

    def __new__(cls):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        aten = torch.ops.aten

        def product_shape(func, args):
            if func is aten.mm.default:
                return (args[0].shape[0], args[1].shape[1])
            if func is aten.addmm.default:
                return (args[1].shape[0], args[2].shape[1])
            if func is aten.bmm.default:
                return (*args[0].shape[:2], args[1].shape[2])
            if func is aten.baddbmm.default:
                return (*args[1].shape[:2], args[2].shape[2])
            return None

        class ShapesOnly(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                shape = product_shape(func, args)
                if shape is None:
                    return func(*args, **(kwargs or {}))
                return torch.zeros(shape, dtype=args[-1].dtype)

        return ShapesOnly()


def _weightless(model: Any) -> None:
    """Each parameter and buffer of a meta-device model as a CPU tensor of its shape that holds one zero."""
    import torch

    for module in model.modules():
        for name, param in list(module.named_parameters(recurse=False)):
            zero = torch.zeros((), dtype=param.dtype).expand(param.shape)
            module._parameters[name] = torch.nn.Parameter(zero, requires_grad=False)
        for name, buffer in list(module.named_buffers(recurse=False)):
            if buffer is not None and buffer.device.type == "meta":
                module._buffers[name] = torch.zeros((), dtype=buffer.dtype).expand(buffer.shape).clone()


def _holds_its_own_lm_head(path: Path, model: Any) -> bool:
    """A T5 file written with ``tie_word_embeddings: false``: its checkpoint holds an LM head of its own."""
    data = _data(path)
    return data.get("model_type") == "t5" and data.get("tie_word_embeddings") is False and hasattr(model, "lm_head")


def _image(torch: Any, vision: Any, device: str) -> Any:
    side = vision.image_size if isinstance(vision.image_size, int) else vision.image_size[0]
    return torch.zeros(1, vision.num_channels, side, side, device=device)


def _inputs(torch: Any, model: Any, config: Any, n: int, device: str) -> tuple[int | None, dict[str, Any]]:
    """The tokens N of the forward pass (None: an image model's length is its image's) and the inputs the
    built class's ``forward`` takes of: token ids (both sides of an encoder-decoder, N each), an image of the
    configuration's size, and the 30 s of log-mel frames a speech encoder requires (Whisper: ``num_mel_bins``
    by twice ``max_source_positions``, which its encoder checks), with N decoder tokens."""
    vision = getattr(config, "vision_config", None) or config
    text = getattr(config, "text_config", None)
    if text is not None:  # an image-and-text model: N caption tokens, within its learned positions
        n = min(n, text.max_position_embeddings)
    elif config.model_type == "clip_text_model":  # a text tower's own file: the same limit
        n = min(n, config.max_position_embeddings)
    ids = torch.zeros(1, n, dtype=torch.long, device=device)
    offered: dict[str, Any] = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        offered["decoder_input_ids"] = ids  # archzoo's N is both sides' length
    if hasattr(vision, "image_size"):
        offered["pixel_values"] = _image(torch, vision, device)
    if hasattr(config, "num_mel_bins"):
        frames = 2 * config.max_source_positions
        dtype = next(model.parameters()).dtype  # a file's "dtype": "float16" builds a float16 convolution
        offered["input_features"] = torch.zeros(1, config.num_mel_bins, frames, dtype=dtype, device=device)
    # a file's "use_cache": false sends Whisper's decoder, and a decoder such as Olmo2Model (its packed-sequence check
    # of the position ids), down a path that reads a tensor's value (.item()), which the meta device has not; the
    # cache changes no FLOP of the forward pass (the signature filter below drops it where forward takes none)
    offered["use_cache"] = True
    taken = inspect.signature(model.forward).parameters
    inputs = {key: value for key, value in offered.items() if key in taken}
    if "input_features" in inputs:
        inputs.pop("input_ids", None)
    if "input_ids" not in inputs and "decoder_input_ids" not in inputs:
        return None, inputs  # an image model: no tokens
    return n, inputs


def _transformers_figures(T: Any, path: Path, hf_class: str | None) -> tuple[str, int | None, int, int]:
    """The class transformers builds from the file (AutoModel's, or the first ``architectures`` entry's),
    the tokens of its forward pass (None: an image), its parameters and its forward FLOPs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    config = T.AutoConfig.from_pretrained(str(path))  # the file as from_pretrained reads it
    config._attn_implementation = "eager"  # FlopCounterMode counts the attention products
    config._experts_implementation = "eager"  # each expert's matmuls (grouped_mm is not counted)
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hf_class is None:
            model = T.AutoModel.from_config(config)
        else:
            model = getattr(T, config.architectures[0])(config)
    model.eval()
    if _holds_its_own_lm_head(path, model):
        # T5Config forces tie_word_embeddings to true (a false one survives only as scale_decoder_outputs), so
        # the class built from the file ties its head; from_pretrained then finds lm_head.weight and
        # shared.weight both in a T5 v1.1 checkpoint, with different values, and does NOT tie them
        # (transformers 5.23, modeling_utils.PreTrainedModel.tie_weights): the model loaded has a head of its own.
        model.lm_head.weight = torch.nn.Parameter(torch.empty_like(model.lm_head.weight))
    params = sum(p.numel() for p in model.parameters())
    routed = getattr(config, "num_experts_per_tok", None) is not None  # routing reads activation values
    device = "cpu" if routed else "meta"
    if routed:
        _weightless(model)
    n, inputs = _inputs(torch, model, config, ROUTED_SEQ_LEN if routed else SEQ_LEN, device)
    with torch.no_grad():
        if routed:
            with _ShapesOnly(), FlopCounterMode(display=False) as counter:
                model(**inputs)
        else:
            with FlopCounterMode(display=False) as counter:
                model(**inputs)
    return type(model).__name__, n, params, counter.get_total_flops()


# ---- the corpus --------------------------------------------------------------------------------------------


def test_every_file_is_named_in_the_manifest_with_its_source():
    # SOURCES.md, and a SOURCES-<family>.md beside it for each family's files added on its own
    sources = "\n".join(p.read_text() for p in sorted(CORPUS_DIR.glob("SOURCES*.md")))
    assert CORPUS, f"no published files in {CORPUS_DIR}"
    for path in CORPUS:
        assert f"`{path.name}`" in sources, f"{path.name} has no source in SOURCES.md or SOURCES-*.md"
        data = _data(path)
        assert "model_type" in data, path.name


@pytest.mark.parametrize("path, hf_class", _cases())
def test_published_file_counts_what_transformers_builds(T, host, path, hf_class):
    named = _data(path).get("architectures", [None])[0]
    if hf_class == "auto" and not hasattr(T, named):  # a legacy class name transformers no longer has
        with pytest.raises(HFConfigError):
            reading = load_hf_config(path, host, hf_class=hf_class)
            pytest.fail(f"transformers has no class {named}, but archzoo counts {path.name} as {reading.model_class}")
        return
    model_class, n, params, flops = _transformers_figures(T, path, hf_class)
    reading = load_hf_config(path, host, hf_class=hf_class)
    assert reading.model_class == model_class
    report = make_report(reading.architecture, reading.config, n)
    assert (report.params, report.flops) == (params, flops), (
        f"{path.name} as {model_class}: archzoo {report.params:,} params and {report.flops:,} FLOPs, "
        f"transformers {params:,} and {flops:,} (params {report.params - params:+,}, FLOPs {report.flops - flops:+,})"
    )


@pytest.mark.parametrize(
    "model_type, sizes",
    [
        ("mixtral", dict(intermediate_size=40, num_local_experts=4)),
        ("qwen2_moe", dict(moe_intermediate_size=40, shared_expert_intermediate_size=56, num_experts=4)),
    ],
)
def test_weightless_moe_pass_counts_what_a_real_one_does(T, tmp_path, model_type, sizes):
    """The shortcut above against a forward pass with random weights on the CPU, on small routed models."""
    from transformers_models import build_model, forward_flops

    model_class = {"mixtral": "MixtralForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM"}[model_type]
    data = dict(
        model_type=model_type,
        architectures=[model_class],
        vocab_size=97,
        hidden_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        num_experts_per_tok=2,
        max_position_embeddings=SEQ_LEN * 2,
        **sizes,
    )
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    _, n, params, flops = _transformers_figures(T, path, "auto")
    real = build_model(T, model_class, T.AutoConfig.from_pretrained(str(path)), device="cpu")
    assert (params, flops) == (sum(p.numel() for p in real.parameters()), forward_flops(real, n, random_ids=True))
