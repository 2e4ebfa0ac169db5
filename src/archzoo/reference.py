"""Reference implementations: build the real torch / transformers module for a configuration and measure it.

This is how archzoo checks itself: the module is built on the meta device (no memory, no weights),
its parameters are counted with ``sum(p.numel() for p in model.parameters())`` (tied weights once),
and one forward pass of batch 1 is run under ``torch.utils.flop_counter.FlopCounterMode`` with eager
attention. Beyond one forward pass, `reference_training_flops` counts one training step (forward and
backward, a scalar loss from the model's main output) and `reference_prefill_flops` /
`reference_decode_flops` the two calls of generation with a key/value cache. Needs the ``verify`` extra (torch, transformers); nothing on the lookup path imports it.

A reference is built from its description alone (`archzoo.Reference`): a transformers class from its
configuration class, a timm model by name, and anything else, a torch module or a class a plugin
defines (``library: "archzoo"``, ``target: "archzoo_transformer.Seq2SeqTransformer"``), by calling the
dotted ``target`` with ``kwargs``. A plugin's class may need torch, so its module makes it on first access.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal, get_args

from .architecture import InputKind, Reference
from .errors import ArchzooError

if TYPE_CHECKING:
    import torch

__all__ = [
    "BUILT_IN_INPUTS",
    "build_reference",
    "import_dotted",
    "reference_decode_flops",
    "reference_flops",
    "reference_inputs",
    "reference_params",
    "reference_prefill_flops",
    "reference_training_flops",
    "training_loss",
]


#: the kinds of input `reference_inputs` makes itself; any other `Reference.inputs` names a plugin's function
BUILT_IN_INPUTS: tuple[str, ...] = get_args(InputKind)

#: the largest reference built with real weights (`Reference.device` "cpu"): 4 bytes each, 400 MB
MAX_CPU_PARAMS = 100_000_000


def import_dotted(dotted: str) -> Any:
    """The object a dotted name such as ``transformers.BertModel`` names, its module imported."""
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def build_reference(ref: Reference, device: Literal["meta", "cpu"] = "meta") -> torch.nn.Module:
    """The reference module, in eval mode: on the meta device, or on the CPU with weights drawn from a fixed
    seed (the same weights on every call), for a forward pass that reads them (`Reference.device`)."""
    import torch

    if device == "cpu":
        held = reference_params(ref)  # counted on the meta device first: real weights take real memory
        if held > MAX_CPU_PARAMS:
            raise ArchzooError(
                f"{ref.target}: measuring its FLOPs needs real weights on the CPU ({held:,} parameters, more than "
                f"the {MAX_CPU_PARAMS:,} archzoo allocates); check a smaller configuration of the same shape "
                "(fewer layers, a narrower width): the count is a polynomial in them"
            )
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(0)  # the same weights on every call, without touching the caller's random state
        if ref.library == "transformers":
            config_class = import_dotted(ref.config_class or "")
            config = config_class(**ref.kwargs)
            config._attn_implementation = "eager"  # FLOPs of the attention products are counted
            # experts run one by one, each on the tokens routed to it (fused kernels hide them from FlopCounterMode)
            config._experts_implementation = "eager"
            model = import_dotted(ref.target)(config, **ref.model_kwargs)
        elif ref.library == "timm":
            import timm

            model = timm.create_model(ref.target.rpartition(".")[2], **ref.kwargs)
        else:
            model = import_dotted(ref.target)(**ref.kwargs)
    return model.eval()


def reference_params(ref: Reference) -> int:
    """``sum(p.numel() for p in model.parameters())``: what PyTorch reports, tied weights once."""
    return sum(p.numel() for p in build_reference(ref).parameters())  # always on the meta device


def reference_inputs(ref: Reference, seq_len: int, model: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword inputs of one forward pass of ``ref``'s ``model`` at batch 1 and ``seq_len``
    tokens. What the tokens are is the reference's ``inputs``; a size they need (an image's side and channels,
    an embedding's width) is the built model's own, read off it, never assumed."""
    import torch

    device = ref.device
    if ref.inputs not in BUILT_IN_INPUTS:  # a plugin's own function (mel frames, an image and its caption)
        args, kwargs = import_dotted(ref.inputs)(model, seq_len, device)
        return tuple(args), dict(kwargs)
    if ref.inputs == "token_ids":
        return (), {"input_ids": torch.zeros(1, seq_len, dtype=torch.long, device=device)}
    if ref.inputs == "encoder_decoder_token_ids":  # the same N on both sides
        # two tensors, as a training step's source ids and shifted labels are: one tensor handed to both sides would
        # be one storage autograd saves for both embeddings' backward, where a real step saves two
        ids = torch.zeros(1, seq_len, dtype=torch.long, device=device)
        return (), {"input_ids": ids, "decoder_input_ids": torch.zeros_like(ids)}
    if ref.inputs == "image":
        channels, size = _image_shape(model)
        return (torch.zeros(1, channels, size, size, device=device),), {}
    # two tensors, a source and a target of their own, as a training step hands them (one tensor handed to both
    # sides would be one storage autograd saves for both)
    if ref.inputs == "seq2seq_embeddings":  # torch.nn.Transformer takes (sequence, batch, d) by default
        dtype = next(model.parameters()).dtype  # the model's: a 16-bit model on the CPU refuses fp32 inputs
        source, target = (torch.zeros(seq_len, 1, model.d_model, dtype=dtype, device=device) for _ in "st")
        return (source, target), {}
    source, target = (torch.zeros(seq_len, 1, dtype=torch.long, device=device) for _ in "st")
    return (source, target), {}


def _image_shape(model: Any) -> tuple[int, int]:
    """``(channels, side)`` of the square images ``model`` takes: a transformers vision model's configuration
    (``num_channels``, ``image_size``), or a timm model's ``pretrained_cfg`` input size (C, H, W)."""
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "image_size"):
        return config.num_channels, config.image_size
    channels, side, _ = (getattr(model, "pretrained_cfg", None) or model.default_cfg)["input_size"]
    return channels, side


def reference_flops(ref: Reference, seq_len: int) -> int:
    """Forward FLOPs of batch 1 at ``seq_len`` tokens, as FlopCounterMode counts them (eager attention), on
    the reference's device (`Reference.device`: the meta device, or the CPU with seeded weights)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_reference(ref, ref.device)
    args, kwargs = reference_inputs(ref, seq_len, model)
    # train() keeps torch.nn's encoder layers off their fused inference fast path, whose attention
    # FlopCounterMode cannot see; on the meta device dropout does nothing to the count (and on the CPU it
    # changes values, never which matrices are multiplied).
    model.train()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(*args, **kwargs)
    return counter.get_total_flops()


def training_loss(output: Any) -> torch.Tensor:
    """The scalar loss of a training step: the sum of the model's main output. That is ``logits`` where the
    class returns them; else a masked-image-modelling class's ``reconstruction``; else a contrastive
    pair's ``logits_per_image`` (CLIP's similarities, which its loss reads); else every ``*_logits``
    tensor it returns (``prediction_logits`` and ``seq_relationship_logits`` of a pre-training head,
    ``start_logits`` and ``end_logits`` of question answering: what the class's own loss reads); else the last
    hidden state; a plain tensor is its own."""
    import torch

    if isinstance(output, torch.Tensor):
        return output.sum()
    if getattr(output, "logits", None) is not None:
        return output.logits.sum()  # type: ignore[no-any-return]
    if getattr(output, "reconstruction", None) is not None:  # masked image modelling: the pixels it restores
        return output.reconstruction.sum()  # type: ignore[no-any-return]
    if getattr(output, "logits_per_image", None) is not None:  # a contrastive pair (CLIP): what its loss reads
        return output.logits_per_image.sum()  # type: ignore[no-any-return]
    # tensors only: a mixture of experts' router_logits is a tuple, one tensor per layer, which no head's loss reads
    named: list[Any] = [
        value for key, value in output.items() if key.endswith("_logits") and isinstance(value, torch.Tensor)
    ]
    if named:
        return sum(value.sum() for value in named)  # type: ignore[no-any-return]
    return output.last_hidden_state.sum()  # type: ignore[no-any-return]


def reference_training_flops(ref: Reference, seq_len: int) -> int:
    """FLOPs of one training step of batch 1 at ``seq_len`` tokens, as FlopCounterMode counts them: the forward
    pass and the backward of `training_loss`, every parameter trainable, the inputs requiring no gradient,
    dropout 0 and eager attention. Backward runs on the meta device; a reference that needs values (a mixture
    of experts routing its tokens) runs on the CPU with seeded weights (`Reference.device`)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_reference(ref, ref.device)
    args, kwargs = reference_inputs(ref, seq_len, model)
    model.train()  # as reference_flops: torch.nn's encoder layers keep off their fused inference path
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    with FlopCounterMode(display=False) as counter:
        training_loss(model(*args, **kwargs)).backward()
    return counter.get_total_flops()


def _generative(ref: Reference) -> torch.nn.Module:
    if ref.library == "timm" or ref.inputs in ("image", "seq2seq_embeddings", "seq2seq_token_ids"):
        raise ArchzooError(
            f"{ref.target}: archzoo measures prefill and decode on transformers' text classes (or a plugin's "
            "subclass of one, or a class fed by its plugin's own inputs) only; this reference takes no token ids "
            "or keeps no key/value cache"
        )
    return build_reference(ref, ref.device)


def _plugin_inputs(ref: Reference) -> bool:
    """Whether the reference is fed by its plugin's own input function (`Reference.inputs` names it). Its keyword
    arguments are generation's too: ``decoder_input_ids`` the decoder's tokens of an encoder-decoder, whose other
    arguments are its encoder's (Whisper's mel frames); without them, the tokens of a decoder alone."""
    return ref.inputs not in BUILT_IN_INPUTS


def _keeps_last_logits(model: torch.nn.Module) -> dict[str, Any]:
    """``logits_to_keep=1`` where the class takes it (transformers 5.23's causal LMs; generate passes it)."""
    import inspect

    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


def reference_prefill_flops(ref: Reference, seq_len: int) -> int:
    """FLOPs of generation's first call, as FlopCounterMode counts it: a decoder over ``seq_len`` prompt tokens,
    the logits of the last position only where the class takes ``logits_to_keep``; an encoder-decoder's
    encoder over ``seq_len`` source tokens and its decoder over the one start token (its cross-attention
    keys and values computed over the source there). A reference fed by its plugin's own inputs takes them at
    ``seq_len`` tokens, its decoder over the first token only where it is an encoder-decoder (Whisper: the encoder
    over its fixed mel frames, whatever ``seq_len``)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = _generative(ref)
    if _plugin_inputs(ref):  # the plugin's inputs of N tokens; an encoder-decoder's decoder over one of them
        args, kwargs = reference_inputs(ref, seq_len, model)
        if "decoder_input_ids" in kwargs:
            kwargs["decoder_input_ids"] = kwargs["decoder_input_ids"][:, :1]
        else:
            kwargs.update(_keeps_last_logits(model))
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*args, **kwargs, use_cache=True)
        return counter.get_total_flops()
    ids = torch.zeros(1, seq_len, dtype=torch.long, device=ref.device)
    kwargs = {"input_ids": ids, "use_cache": True}
    if ref.inputs == "encoder_decoder_token_ids":
        kwargs["decoder_input_ids"] = torch.zeros(1, 1, dtype=torch.long, device=ref.device)
    else:
        kwargs.update(_keeps_last_logits(model))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**kwargs)
    return counter.get_total_flops()


def reference_decode_flops(ref: Reference, context: int, source: int | None = None) -> int:
    """FLOPs of one cached decode step, as FlopCounterMode counts it: the step that reads position ``context``
    with the ``context - 1`` tokens before it in the cache (``past_key_values`` from a first call, not
    counted), attending over ``context`` keys; an encoder-decoder's decoder attends to ``source`` source
    tokens (default ``context``) whose encoder output and cross-attention keys and values are cached. A reference
    fed by its plugin's own inputs runs them at ``context - 1`` tokens first, then one token; its encoder's inputs
    are the plugin's (``source`` cannot be chosen for it)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    if context < 2:
        raise ArchzooError(f"decode context {context}: a decode step needs at least one cached token (context 2)")
    model = _generative(ref)

    def ids(n: int) -> torch.Tensor:
        return torch.zeros(1, n, dtype=torch.long, device=ref.device)

    if _plugin_inputs(ref):
        return _plugin_decode_flops(ref, model, context, source)
    with torch.no_grad():
        if ref.inputs == "encoder_decoder_token_ids":
            encoder = model.get_encoder()  # type: ignore[operator]
            encoder_outputs = encoder(input_ids=ids(context if source is None else source))
            first = model(encoder_outputs=encoder_outputs, decoder_input_ids=ids(context - 1), use_cache=True)
            step = {"encoder_outputs": encoder_outputs, "decoder_input_ids": ids(1)}
        else:
            from transformers import DynamicCache

            # handed in and filled in place: token-classification and question-answering classes run with a
            # cache but return none
            cache = DynamicCache(config=model.config)  # type: ignore[arg-type]
            first = model(input_ids=ids(context - 1), past_key_values=cache, use_cache=True)
            step = {"input_ids": ids(1)}
        with FlopCounterMode(display=False) as counter:
            model(**step, past_key_values=getattr(first, "past_key_values", None) or cache, use_cache=True)
    return counter.get_total_flops()


def _plugin_decode_flops(ref: Reference, model: Any, context: int, source: int | None) -> int:
    """`reference_decode_flops` for a reference fed by its plugin's own inputs: the class makes its own cache in
    the first call (a decoder's cache sized by the class, not by ``num_hidden_layers``, which for an
    encoder-decoder may count the encoder's layers), which the counted step then reads."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    args, kwargs = reference_inputs(ref, context - 1, model)
    _, step = reference_inputs(ref, 1, model)
    with torch.no_grad():
        if "decoder_input_ids" in kwargs:  # an encoder-decoder: the plugin's encoder inputs, run once
            if source is not None:
                raise ArchzooError(
                    f"{ref.target}: its encoder reads the inputs {ref.inputs} makes, whose length archzoo does not "
                    "choose; measure its decode step without a source length"
                )
            decoder_ids = kwargs.pop("decoder_input_ids")
            encoder_outputs = model.get_encoder()(*args, **kwargs)
            first = model(encoder_outputs=encoder_outputs, decoder_input_ids=decoder_ids, use_cache=True)
            step = {"encoder_outputs": encoder_outputs, "decoder_input_ids": step["decoder_input_ids"]}
        else:
            first = model(*args, **kwargs, use_cache=True)
        with FlopCounterMode(display=False) as counter:
            model(**step, past_key_values=first.past_key_values, use_cache=True)
    return counter.get_total_flops()
