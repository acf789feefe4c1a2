"""open_clip backend: any open_clip model / pretrained tag, ``hf-hub:`` name or local checkpoint."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from ..core.selection import CLIP_TAU
from ..scoring.device import resolve_device
from ._base import Encoder, EncoderLoadError, unit_float32
from ._registry import is_random_tag, register_encoder

DEFAULT_MODEL = "ViT-B-32"
DEFAULT_PRETRAINED = "laion2b_s34b_b79k"  # LAION-2B, as in the LBEE paper
#: The hub repository of the weights checked before torch is imported (`check_weights_before_loading`):
#: the default's. Other tags are checked once open_clip is loaded (it knows their repositories).
WEIGHTS_REPOS = {(DEFAULT_MODEL, DEFAULT_PRETRAINED): "laion/CLIP-ViT-B-32-laion2B-s34B-b79K"}
#: The files open_clip reads from a hub repository (either one).
WEIGHT_FILES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


def _looks_like_path(value):
    return os.sep in value or value.endswith((".pt", ".pth", ".bin", ".safetensors", ".ckpt"))


def _state_fingerprint(model):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:24]


class OpenCLIPEncoder(Encoder):
    """An open_clip model as an [`Encoder`][lbee.encoders.Encoder].

    Parameters
    ----------
    model : str, default='ViT-B-32'
        An open_clip model name or ``hf-hub:org/repo``.
    pretrained : str or None, default='laion2b_s34b_b79k'
        A pretrained tag, a local checkpoint path, or None for random weights
        (to try the pipeline without weights). Ignored for ``hf-hub:`` names.
        A tag that is neither cached nor downloadable fails at once with the
        fix, instead of open_clip's minute of hub retries.
    device : str, optional
        Default: CUDA when available, else CPU.
    precision : str, optional
        'fp32', 'fp16' or 'bf16'. Default: fp16 on CUDA, fp32 on CPU.
    seed : int, default=0
        Seed of random weights (``pretrained=None``): the same seed gives the
        same weights, hence the same identity and embedding-cache hits.
    """

    name = "open_clip"
    default_tau = CLIP_TAU

    def __init__(self, model=DEFAULT_MODEL, pretrained=DEFAULT_PRETRAINED, *, device=None, precision=None, seed=0):
        import open_clip
        import torch

        self.model_name = model or DEFAULT_MODEL
        self.pretrained = None if self.model_name.startswith("hf-hub:") else pretrained
        self.device = resolve_device(device)
        self.precision = precision or ("fp16" if self.device.startswith("cuda") else "fp32")
        if not self.model_name.startswith("hf-hub:") and self.model_name not in open_clip.list_models():
            raise ValueError(
                f"Unknown open_clip model {self.model_name!r}; see open_clip.list_models() "
                f"(for example {DEFAULT_MODEL!r}) or pass 'hf-hub:org/repo'."
            )
        local = bool(self.pretrained) and _looks_like_path(self.pretrained)
        if self.pretrained and not local:
            _check_weights_reachable(open_clip, self.model_name, self.pretrained)
        try:
            with _checkpoint(self.pretrained if local else None, self.model_name) as (weights_file, digest):
                with torch.random.fork_rng(devices=[]), _asked_random(self.pretrained is None):
                    torch.manual_seed(seed)  # random weights are seeded: same seed, same weights, cache hits
                    model_obj, _, preprocess = open_clip.create_model_and_transforms(
                        self.model_name,
                        pretrained=weights_file or self.pretrained,
                        device=self.device,
                        precision=self.precision,
                    )
        except EncoderLoadError:
            raise
        except Exception as exc:  # download / hub failures surface as many exception types
            from ..scoring.torch_files import load_error_line

            if local:  # the user's own file: no word of downloads and caches
                raise EncoderLoadError(
                    f"Could not load open_clip model {self.model_name!r} from the checkpoint file "
                    f"{self.pretrained!r}: {type(exc).__name__}: {load_error_line(exc)}; expected that model's "
                    "weights as open_clip saves them (a state dict saved by torch.save, or a .safetensors file)."
                ) from None
            raise EncoderLoadError(
                f"Could not load open_clip model {self.model_name!r} with pretrained weights "
                f"{self.pretrained!r}: {type(exc).__name__}: {load_error_line(exc)}\n"
                "The weights are downloaded on first use and cached by huggingface_hub. Offline "
                "(HF_HUB_OFFLINE=1) they must already be in the cache; otherwise pass a local checkpoint "
                "file, e.g. --encoder 'open_clip:ViT-B-32@/path/to/open_clip_pytorch_model.bin'."
            ) from exc
        model_obj.eval()
        self.model = model_obj
        self._preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(self.model_name)
        self._dtype = next(model_obj.parameters()).dtype
        self._torch = torch
        if self.pretrained is None:
            weights = (
                f"random:seed={seed}:" + _state_fingerprint(model_obj)
                if not self.model_name.startswith("hf-hub:")
                else self.model_name
            )
        elif local:
            weights = "sha256:" + digest
        else:
            weights = "tag:" + self.pretrained
        self._identity = {
            "encoder": "open_clip",
            "model": self.model_name,
            "weights": weights,
            "preprocess": repr(preprocess),
        }

    def identity(self):
        return dict(self._identity)

    def preprocess(self, image):
        return self._preprocess(image)

    def encode_image_batch(self, batch):
        torch = self._torch
        with torch.inference_mode():
            feats = self.model.encode_image(batch.to(self.device, dtype=self._dtype))
        return unit_float32(feats.float().cpu().numpy())

    def encode_text(self, sentences, batch_size=256):
        torch = self._torch
        out = []
        for start in range(0, len(sentences), batch_size):
            tokens = self.tokenizer(list(sentences[start : start + batch_size])).to(self.device)
            with torch.inference_mode():
                out.append(self.model.encode_text(tokens).float().cpu().numpy())
        return unit_float32(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)


@contextmanager
def _checkpoint(path, model):
    """``(name, sha256)``: a private copy of the checkpoint ``path`` for open_clip to load, and its digest.

    The checkpoint is opened once, checked (a regular file; under a data root, inside it: a link or a FIFO renamed
    over it is never followed) and copied, hashed as it is copied, into a folder of this user's alone; open_clip
    loads the copy. The digest is then of the very bytes loaded: read twice, a file another user can change was
    swapped between the load and the digest, and their model's embeddings were recorded, and cached, under the
    honest weights' digest (sweep 32ao R1). open_clip picks the format by the name's suffix, which the copy keeps.
    ``(None, None)`` for ``path`` None.
    """
    if path is None:
        yield None, None
        return
    import hashlib

    from .._files import pinned, refuse_sparse

    with ExitStack() as stack:
        try:
            if not os.path.lexists(path):
                raise FileNotFoundError
            src = stack.enter_context(pinned(path, "Checkpoint file"))
        except FileNotFoundError:
            raise EncoderLoadError(
                f"Checkpoint file {str(path)!r} for open_clip model {model!r} does not exist."
            ) from None
        except (OSError, ValueError) as exc:  # a folder, a FIFO, a link out of the root, unreadable
            raise EncoderLoadError(str(exc)) from None
        try:  # before it is read: a sparse file of holes is gigabytes copied and loaded (sweep 17 H11)
            refuse_sparse(src, "Checkpoint file", path)
        except ValueError as exc:
            raise EncoderLoadError(str(exc)) from None
        from ..io.folder_trust import SharedFolderError, private_temporary_folder

        try:  # 0700, in a TMPDIR no other user can rename entries of: the copy loaded is the copy hashed
            tmp = stack.enter_context(private_temporary_folder("lbee-ckpt-"))
        except SharedFolderError as exc:
            raise EncoderLoadError(
                f"Checkpoint file {str(path)!r}: lbee copies it into TMPDIR, hashes the copy and loads it. {exc}"
            ) from None
        copy = os.path.join(tmp, "checkpoint" + Path(path).suffix)
        h = hashlib.sha256()
        try:
            with open(src, "rb") as fin, open(copy, "wb") as fout:
                while block := fin.read(1 << 20):
                    h.update(block)
                    fout.write(block)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", 0), errno.EFBIG):  # the copy failed (32ap N2)
                raise EncoderLoadError(
                    f"Checkpoint file {str(path)!r}: its private copy in {tmp!r} (under TMPDIR) could not be "
                    f"written: {exc.strerror}. Every run copies the whole checkpoint there, to load the bytes it "
                    "hashes; point TMPDIR at a folder with room for it."
                ) from None
            raise EncoderLoadError(f"Checkpoint file {str(path)!r} cannot be read: {exc.strerror or exc}.") from None
        if not str(path).endswith(".safetensors"):  # torch.load reads it: a deflated archive inflates unbounded
            from ..scoring.torch_files import check_stored_zip

            try:
                check_stored_zip(copy, "Checkpoint file", name=path)
            except ValueError as exc:
                raise EncoderLoadError(str(exc)) from None
        yield copy, h.hexdigest()


def _offline():
    return os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes")


def _hub_reachable():
    """One short connection attempt to huggingface.co (never when HF_HUB_OFFLINE is set)."""
    import socket

    if _offline():
        return False
    try:
        socket.create_connection(("huggingface.co", 443), timeout=3).close()
        return True
    except OSError:
        return False


def _missing_weights(model, tag):
    return EncoderLoadError(
        f"The weights of open_clip {model}@{tag} are not in the local cache and "
        + ("HF_HUB_OFFLINE is set" if _offline() else "huggingface.co cannot be reached")
        + ". Either:\n"
        + _aligned(
            [
                (f"--encoder 'open_clip:{model}@/path/to/open_clip_pytorch_model.bin'", "a local checkpoint file"),
                ("--encoder spotcheck", "the offline encoder of the synthetic world"),
                (f"--encoder 'open_clip:{model}@random'", "seeded random weights, to try the pipeline"),
                (
                    "--image-embeddings FILE --sentence-embeddings FILE",
                    "embeddings you made with any encoder (docs: Embeddings and provenance)",
                ),
            ]
        )
        + "\nWith an attribute table of your images and no encoder at all, the docs' how-to 'Your images, "
        "without CLIP weights' (docs/howto/no-clip.md) simulates one from it."
    )


def _aligned(rows):
    """``  command   (why)`` lines, the reasons in one column."""
    width = max(len(command) for command, _ in rows)
    return "\n".join(f"  {command:<{width}}   ({why})" for command, why in rows)


def weights_in_hub_cache(repo):
    """Whether huggingface_hub's cache holds a weights file of ``repo`` (its folder layout read; nothing imported)."""
    from huggingface_hub import constants  # the cache's location only: no network code, no torch

    snapshots = Path(constants.HF_HUB_CACHE) / ("models--" + repo.replace("/", "--")) / "snapshots"
    return any((snap / name).exists() for snap in snapshots.glob("*") for name in WEIGHT_FILES)


def check_weights_before_loading(model, tag):
    """Fail in a second, before torch and open_clip are imported, when known weights cannot be had.

    Only the weights of `WEIGHTS_REPOS` (the default encoder's) are known without open_clip; others
    pass here and are checked by the encoder once open_clip is loaded. Raises `EncoderLoadError`
    naming the alternatives (a local checkpoint, the SpotCheck encoder, random weights).
    """
    repo = WEIGHTS_REPOS.get((model or DEFAULT_MODEL, tag or DEFAULT_PRETRAINED))
    if repo is None or weights_in_hub_cache(repo) or _hub_reachable():
        return
    raise _missing_weights(model or DEFAULT_MODEL, tag or DEFAULT_PRETRAINED)


def _check_weights_reachable(open_clip, model, tag):
    """Fail fast, with the fix, when a pretrained tag is neither cached nor downloadable.

    Without this, open_clip retries the hub for about a minute and a half before failing. The local
    huggingface_hub cache is tried first; otherwise one short connection attempt decides.
    """
    cfg = open_clip.get_pretrained_cfg(model, tag)
    if not cfg:
        import difflib

        known = [t for m, t in open_clip.list_pretrained() if m == model]
        near = difflib.get_close_matches(tag, ["random"], 1, 0.7)  # '@randon' (trial 35): not a tag, said as one
        hint = " Did you mean @random (random weights, no download)?" if near else " (or @random: random weights)"
        raise EncoderLoadError(
            f"Unknown pretrained tag {tag!r} for open_clip model {model!r}; known tags: "
            f"{', '.join(known) or 'none'}.{hint}"
        )
    repo = (cfg.get("hf_hub") or "").strip("/")
    if repo:
        try:
            from huggingface_hub import snapshot_download

            snapshot_download(repo, local_files_only=True)
            return  # cached
        except Exception:  # noqa: BLE001 - not cached (the exception type varies across versions)
            pass
    if not _hub_reachable():
        raise _missing_weights(model, tag)


@register_encoder("open_clip")
def _make_open_clip(model=None, pretrained=None, **kwargs):
    """``open_clip[:MODEL[@TAG|@CHECKPOINT|@random[:SEED]]]``; no tag means the default weights."""
    if pretrained is None:
        pretrained = DEFAULT_PRETRAINED
    elif is_random_tag(pretrained):
        seed = pretrained.partition(":")[2]
        if seed and not seed.isdigit():
            raise ValueError(f"`@random:SEED` needs an integer seed; received {pretrained!r}.")
        from .._validation import check_seed

        kwargs.setdefault("seed", check_seed(int(seed or 0), "@random:SEED"))
        pretrained = None
    return OpenCLIPEncoder(model or DEFAULT_MODEL, pretrained, **kwargs)


class _NoRandomWeightsNews(logging.Filter):
    """Drops open_clip's record that the weights are random (``_asked_random``)."""

    def filter(self, record):
        return "No pretrained weights loaded" not in record.getMessage()


def _asked_random(asked):
    """Silence open_clip's "No pretrained weights loaded" (root logger) when random weights were asked for.

    ``@random``: every report of the run carries lbee's banner saying so, in its own words.
    """

    @contextmanager
    def quiet():
        root, f = logging.getLogger(), _NoRandomWeightsNews()
        if asked:
            root.addFilter(f)
            for h in root.handlers:
                h.addFilter(f)
        try:
            yield
        finally:
            root.removeFilter(f)
            for h in root.handlers:
                h.removeFilter(f)

    return quiet()
