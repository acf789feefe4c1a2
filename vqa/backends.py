"""VQA backends in a registry. Each answers (image, question) pairs with P(yes) in [0, 1].

Backends that expose next-token logits (LLaVA, BLIP) score "yes" against "no" from the logits; the others
return parsed text answers (1.0 / 0.0, or NaN for an answer that is neither yes nor no).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lbee.extras import import_extra
from lbee.scoring.device import resolve_device

from .parsing import parse_answer

_BACKENDS: dict[str, Callable[..., Any]] = {}


class VQAError(RuntimeError):
    """A VQA backend could not load or run."""


def register_backend(name):
    def wrap(cls):
        _BACKENDS[name] = cls
        return cls

    return wrap


def list_backends():
    return sorted(_BACKENDS)


def create_backend(name, **kwargs):
    """Build a backend by name; an unknown name lists the valid ones."""
    if name not in _BACKENDS:
        raise ValueError(f"Unknown VQA backend {name!r}; valid backends: {', '.join(sorted(_BACKENDS))}.")
    return _BACKENDS[name](**kwargs)


def _transformers(label):
    """transformers, or an error naming ``pip install "lbee[vqa]"``."""
    return import_extra("transformers", "vqa", needed_for=f"The {label} VQA backend")


def _oom_guard(fn, name, device):
    """Run ``fn``; an out-of-memory error becomes one clear VQAError."""
    import torch

    try:
        return fn()
    except (torch.OutOfMemoryError, MemoryError) as exc:
        raise VQAError(
            f"The {name} model does not fit on device {device!r} ({exc}). Try --device cpu, a smaller "
            "batch size, or a smaller model."
        ) from exc
    except RuntimeError as exc:
        if "out of memory" in str(exc).lower():
            raise VQAError(
                f"The {name} model does not fit on device {device!r} ({exc}). Try --device cpu, a "
                "smaller batch size, or a smaller model."
            ) from exc
        raise


def _token_ids(tokenizer, words):
    ids = set()
    for w in words:
        for variant in (w, " " + w):
            toks = tokenizer.encode(variant, add_special_tokens=False)
            if toks:
                ids.add(int(toks[0]))
    return sorted(ids)


def _yes_probability(logits, yes_ids, no_ids):
    """P(yes) from next-token logits (B, V): softmax over the yes and no token groups."""
    import torch

    yes = torch.logsumexp(logits[:, yes_ids].float(), dim=1)
    no = torch.logsumexp(logits[:, no_ids].float(), dim=1)
    return torch.sigmoid(yes - no).cpu().numpy().astype(np.float64)


class Backend:
    """Base class. ``identity()`` names model and scoring (the answer-cache key)."""

    name = "backend"
    #: whether answers depend on the image pixels (the metadata backend does not)
    uses_images = True

    def identity(self):
        raise NotImplementedError

    def answer(self, images, questions, sentences=None, image_ids=None):
        """P(yes) for each (image, question) pair, shape (len(questions),)."""
        raise NotImplementedError


class _HFBackend(Backend):
    """Shared set-up of transformers VQA backends: options, device, dtype, loading with clear errors."""

    label = "model"

    def _setup(self, model, device, scoring, max_new_tokens, model_obj, processor, load_model, load_processor):
        import torch

        self.model_name = model
        self.device = resolve_device(device)
        self.scoring = scoring
        self.max_new_tokens = max_new_tokens
        if scoring not in ("logits", "generate"):
            raise ValueError(f"`scoring` must be 'logits' or 'generate'; received {scoring!r}.")
        if model_obj is None:
            dtype = torch.float16 if self.device.startswith("cuda") else torch.float32
            try:
                processor = load_processor(model)
                model_obj = _oom_guard(lambda: load_model(model, dtype=dtype).to(self.device), self.name, self.device)
            except VQAError:
                raise
            except OSError as exc:
                raise VQAError(
                    f"Cannot load {self.label} model {model!r}: {exc}. Offline, the weights must be in "
                    "the Hugging Face cache or a local folder."
                ) from exc
        self.model = model_obj.to(self.device).eval()
        self.processor = processor
        return processor.tokenizer

    def identity(self):
        return {"backend": self.name, "model": self.model_name, "scoring": self.scoring}


@register_backend("llava")
class LlavaBackend(_HFBackend):
    """LLaVA through transformers (``LlavaForConditionalGeneration`` + ``AutoProcessor``).

    Parameters
    ----------
    model : str, default='llava-hf/llava-1.5-7b-hf'
        Hub name or local folder.
    device : str, optional
        CUDA when available (fp16), else CPU (fp32).
    scoring : {'logits', 'generate'}, default='logits'
        'logits' compares the next-token logits of yes and no; 'generate'
        decodes ``max_new_tokens`` greedily and parses the text.
    model_obj, processor : optional
        Already built model and processor (tests build tiny random ones).
    """

    name = "llava"
    label = "LLaVA"

    def __init__(
        self,
        model="llava-hf/llava-1.5-7b-hf",
        *,
        device=None,
        scoring="logits",
        max_new_tokens=5,
        model_obj=None,
        processor=None,
    ):
        hf = _transformers(self.label)
        tok = self._setup(
            model,
            device,
            scoring,
            max_new_tokens,
            model_obj,
            processor,
            hf.LlavaForConditionalGeneration.from_pretrained,
            hf.AutoProcessor.from_pretrained,
        )
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"
        self.yes_ids = _token_ids(tok, ["yes", "Yes"])
        self.no_ids = _token_ids(tok, ["no", "No"])

    def _prompts(self, questions):
        convs = [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": q}]}] for q in questions]
        return [self.processor.apply_chat_template(c, add_generation_prompt=True) for c in convs]

    def answer(self, images, questions, sentences=None, image_ids=None):
        import torch

        inputs = self.processor(
            images=list(images), text=self._prompts(questions), return_tensors="pt", padding=True
        ).to(self.device)
        inputs.pop("token_type_ids", None)  # some tokenizers add it; LLaVA does not take it
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)

        def run():
            with torch.inference_mode():
                if self.scoring == "logits":
                    logits = self.model(**inputs).logits[:, -1, :]
                    return _yes_probability(logits, self.yes_ids, self.no_ids)
                out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
                texts = self.processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
                return _parsed(texts)

        return _oom_guard(run, "llava", self.device)


def _parsed(texts):
    vals = [parse_answer(t) for t in texts]
    return np.array([np.nan if v is None else float(v) for v in vals])


@register_backend("blip")
class BlipBackend(_HFBackend):
    """BLIP VQA (``BlipForQuestionAnswering``), a non-CLIP second family that installs with transformers.

    Parameters
    ----------
    model : str, default='Salesforce/blip-vqa-base'
    scoring : {'logits', 'generate'}, default='logits'
    device, model_obj, processor : optional
        As for [`LlavaBackend`][vqa.LlavaBackend], ``scoring`` too.
    """

    name = "blip"
    label = "BLIP"

    def __init__(
        self,
        model="Salesforce/blip-vqa-base",
        *,
        device=None,
        scoring="logits",
        max_new_tokens=5,
        model_obj=None,
        processor=None,
    ):
        hf = _transformers(self.label)
        tok = self._setup(
            model,
            device,
            scoring,
            max_new_tokens,
            model_obj,
            processor,
            hf.BlipForQuestionAnswering.from_pretrained,
            hf.BlipProcessor.from_pretrained,
        )
        self.yes_ids = _token_ids(tok, ["yes"])
        self.no_ids = _token_ids(tok, ["no"])

    def _first_token_logits(self, inputs):
        """The decoder's logits for the first answer token (what generate's first step sees)."""
        import torch

        m = self.model
        image_embeds = m.vision_model(pixel_values=inputs["pixel_values"])[0]
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        q = m.text_encoder(
            input_ids=inputs["input_ids"],
            attention_mask=inputs.get("attention_mask"),
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_mask,
            return_dict=False,
        )[0]
        q_mask = torch.ones(q.shape[:-1], dtype=torch.long, device=q.device)
        bos = torch.full((q.shape[0], 1), m.decoder_start_token_id, device=q.device)
        out = m.text_decoder(input_ids=bos, encoder_hidden_states=q, encoder_attention_mask=q_mask, return_dict=True)
        return out.logits[:, -1, :]

    def answer(self, images, questions, sentences=None, image_ids=None):
        import torch

        inputs = self.processor(images=list(images), text=list(questions), return_tensors="pt", padding=True).to(
            self.device
        )
        inputs["pixel_values"] = inputs["pixel_values"].to(next(self.model.parameters()).dtype)

        def run():
            with torch.inference_mode():
                if self.scoring == "logits":
                    return _yes_probability(self._first_token_logits(inputs), self.yes_ids, self.no_ids)
                out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens)
                return _parsed(self.processor.batch_decode(out, skip_special_tokens=True))

        return _oom_guard(run, "blip", self.device)


@register_backend("ofa")
class OFABackend(Backend):
    """OFA, as in the paper, through the OFA-Sys transformers fork (``OFATokenizer``, ``OFAModel``).

    The fork is not on PyPI; without it this backend raises one error with the
    install instructions. Answers are decoded and parsed.
    """

    name = "ofa"

    def __init__(self, model="OFA-Sys/ofa-large", *, device=None, max_new_tokens=5):
        try:
            from transformers import OFAModel, OFATokenizer  # only in the OFA-Sys fork
        except ImportError:
            raise VQAError(
                "The 'ofa' backend needs the OFA-Sys fork of transformers (the feature/add_transformers branch "
                "of the OFA-Sys/OFA repository, installed with pip from a clone), which replaces the PyPI "
                "transformers. Without it use 'blip' as the second, non-CLIP family: --backend llava+blip."
            ) from None
        self.model_name = model
        self.device = resolve_device(device)
        self.max_new_tokens = max_new_tokens
        self.tokenizer = OFATokenizer.from_pretrained(model)
        self.model = OFAModel.from_pretrained(model, use_cache=False).to(self.device).eval()

    def identity(self):
        return {"backend": "ofa", "model": self.model_name}

    def answer(self, images, questions, sentences=None, image_ids=None):  # pragma: no cover - needs the fork
        import torch
        from torchvision import transforms

        tf = transforms.Compose(
            [transforms.Resize((480, 480)), transforms.ToTensor(), transforms.Normalize([0.5] * 3, [0.5] * 3)]
        )
        patches = torch.stack([tf(im) for im in images]).to(self.device)
        ids = self.tokenizer(list(questions), return_tensors="pt", padding=True).input_ids.to(self.device)
        with torch.inference_mode():
            out = self.model.generate(ids, patch_images=patches, num_beams=1, max_length=self.max_new_tokens + 2)
        return _parsed(self.tokenizer.batch_decode(out, skip_special_tokens=True))


def _dict_bool(value, key):
    from lbee.io.table_reader import parse_bool

    b = parse_bool(value)
    if b is None:
        raise ValueError(f"`table` maps {key!r} to {value!r}; expected a boolean (or 1/0, true/false, yes/no).")
    return b


def _table_hash(table):
    """SHA-256 of a {(image, sentence): bool} table, independent of its order."""
    import hashlib
    import json

    rows = sorted([i, s, bool(r)] for (i, s), r in table.items())
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()


@register_backend("metadata")
class MetadataBackend(Backend):
    """Ground truth from annotations: ``relevance(image_id, sentence) -> bool``.

    Parameters
    ----------
    table : pandas.DataFrame or dict, optional
        Long form (``image``, ``sentence``, ``relevant``) or a dict
        ``{(image_id, sentence): bool}``; a missing pair is False.
    function : callable, optional
        ``f(image_id, sentence) -> bool`` instead of a table (SpotCheck uses its
        attribute conditions, RIVAL10-style datasets their attribute masks).
    name : str, default='metadata'
    """

    name = "metadata"
    uses_images = False

    def __init__(self, table=None, *, function=None, name="metadata"):
        if (table is None) == (function is None):
            raise ValueError("MetadataBackend needs exactly one of `table` or `function`.")
        if function is not None and not callable(function):
            raise TypeError(f"`function` must be callable; received {type(function).__name__}.")
        if table is not None and not isinstance(table, dict):
            from lbee.io.schemas import validate_metadata

            table = validate_metadata(table)  # names the file, row and column of a bad cell
        elif table is not None:
            table = {(str(i), str(s)): _dict_bool(r, (i, s)) for (i, s), r in table.items()}
        self.table, self.function, self.label = table, function, name
        self._content = None if table is None else _table_hash(table)

    def identity(self):
        """Name plus a content hash of the table, so a changed table never reuses cached answers."""
        if self.function is not None:
            fn = self.function
            ref = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
            return {"backend": "metadata", "name": self.label, "function": ref}
        return {"backend": "metadata", "name": self.label, "content": self._content}

    def answer(self, images, questions, sentences=None, image_ids=None):
        if sentences is None or image_ids is None:
            raise ValueError("The metadata backend answers by image id and sentence; pass both.")
        if self.function is not None:
            return np.array([float(bool(self.function(i, s))) for i, s in zip(image_ids, sentences)])
        return np.array([float(self.table.get((str(i), s), False)) for i, s in zip(image_ids, sentences)])

    def check_coverage(self, image_ids, sentences):
        """Report table rows whose image or sentence is not in the run.

        Raises ``ValueError`` when no row matches (e.g. ids written differently,
        or lower-cased sentences), logs a warning on the ``lbee`` logger with
        counts when some rows do not match. A function-backed instance checks nothing.
        """
        if self.table is None:
            return
        from lbee.io.matching import report_unmatched

        ids, sents = {str(i) for i in image_ids}, set(sentences)
        bad = [(i, s) for i, s in self.table if i not in ids or s not in sents]
        report_unmatched(
            len(bad),
            len(self.table),
            what="(image, sentence) pair of the run",
            source=f"metadata backend {self.label!r}",
            examples=bad,
            hint="Images match the run's ids exactly (manifest 'path' values or paths relative to "
            "the folder); sentences match exactly, case included.",
        )


@register_backend("callable")
class CallableBackend(Backend):
    """A user function ``f(images, questions) -> answers`` (str, bool or probability per pair)."""

    name = "callable"

    def __init__(self, function, *, name="callable"):
        if not callable(function):
            raise TypeError(f"`function` must be callable; received {type(function).__name__}.")
        self.function, self.label = function, name

    def identity(self):
        return {"backend": "callable", "name": self.label}

    def answer(self, images, questions, sentences=None, image_ids=None):
        raw = list(self.function(list(images), list(questions)))
        if len(raw) != len(questions):
            raise ValueError(f"The callable returned {len(raw)} answers for {len(questions)} questions.")
        out = []
        for a in raw:
            if isinstance(a, (bool, np.bool_)):
                out.append(float(a))
            elif isinstance(a, (int, float, np.floating)) and 0 <= float(a) <= 1:
                out.append(float(a))
            else:
                v = parse_answer(a)
                out.append(np.nan if v is None else float(v))
        return np.array(out)
