"""Running VQA backends over images × questions, through an answer cache."""

from __future__ import annotations

import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lbee.io.cache import EmbeddingCache, atomic_save_npz, atomic_write_bytes, file_sha256, plain_npz, row_hashes
from lbee.io.own_store import make_own, own_file

from .combine import combine as combine_answers

FLUSH_EVERY = 2048


class AnswerCache:
    """P(yes) per (backend identity, image content hash, question), in atomic shards."""

    def __init__(self, identity, cache_dir=None):
        self._cache = EmbeddingCache({"vqa": identity}, cache_dir)
        self.root = self._cache.root / "answers"
        self._store = None

    @staticmethod
    def key(image_hash, question):
        return f"{image_hash}\x1f{question}"

    def load(self):
        """Every cached answer: dict of key to P(yes) (NaN: neither yes nor no).

        A shard is read only when it is a plain ``.npz`` as `put` writes one (`lbee.io.cache.plain_npz`: a FIFO
        blocked, a deflated shard of 190 kB took 1.3 GB), with keys and values of one length, each value NaN or in
        [0, 1], and each row's digest of its key and value (a shard with flipped values was used as is). Any other
        shard is a miss: its answers are asked again, never fatal.
        """
        if self._store is None:
            self._store = {}
            if self._cache.linked("answers"):  # another user's, or one they can write (sweep 32al BL1): asked again
                return self._store
            for shard in sorted(self.root.glob("shard-*.npz")):
                if not own_file(shard) or not plain_npz(shard):
                    continue
                try:
                    with np.load(shard) as d:
                        keys, values, rows = d["keys"], d["values"], d["row_hashes"]
                    if keys.ndim != 1 or values.shape != keys.shape or values.dtype != np.float64:
                        continue
                    answered = values[~np.isnan(values)]
                    if np.any((answered < 0) | (answered > 1)):
                        continue
                    if not np.array_equal(rows, row_hashes(keys.tolist(), values[:, None], dtype=np.float64)):
                        continue
                    self._store.update(zip(keys.tolist(), values.tolist()))
                except (OSError, ValueError, KeyError, EOFError):
                    continue
        return self._store

    def put(self, keys, values):
        if keys and not self._cache.linked("answers"):  # nothing written through a link planted in the cache
            values = np.asarray(values, dtype=np.float64)
            make_own(self._cache.base, "embeddings", self._cache.root.name, "answers")  # this user's alone
            atomic_save_npz(
                self.root / f"shard-{uuid.uuid4().hex}.npz",
                keys=np.asarray(keys, dtype=str),
                values=values,
                row_hashes=row_hashes(list(keys), values[:, None], dtype=np.float64),
                private=True,
            )
            self.load().update(zip(keys, values.tolist()))


@dataclass
class VQAResult:
    """Relevance from VQA.

    Attributes
    ----------
    probabilities : dict of str to ndarray of shape (n_ok, N)
        P(yes) per backend; NaN where the answer was neither yes nor no.
    answers : dict of str to ndarray of bool, shape (n_ok, N)
        P(yes) ≥ 0.5 (an invalid answer counts as no).
    relevance : ndarray of bool, shape (n_ok, N)
        The combined Γ.
    image_ids : list of str
        The images that could be read (rows).
    sentences, questions : list of str
    invalid : dict of str to int
        Answers that were neither yes nor no, per backend.
    failures : list of (str, str)
        Unreadable images and why.
    n_computed : dict of str to int
        Pairs actually run through each backend (0 on a cached rerun).
    """

    probabilities: dict
    answers: dict
    relevance: np.ndarray
    image_ids: list
    sentences: list
    questions: list
    invalid: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    n_computed: dict = field(default_factory=dict)

    def to_frame(self):
        """Long form: image, sentence, question, <backend>_p, <backend>, relevant."""
        import pandas as pd

        n, m = self.relevance.shape
        cols = {
            "image": np.repeat(self.image_ids, m),
            "sentence": np.tile(self.sentences, n),
            "question": np.tile(self.questions, n),
        }
        for name in self.probabilities:
            cols[f"{name}_p"] = self.probabilities[name].reshape(-1)
            cols[name] = self.answers[name].reshape(-1)
        cols["relevant"] = self.relevance.reshape(-1)
        return pd.DataFrame(cols)


def _open(path):
    from lbee.io.images import open_rgb

    return open_rgb(path)  # 16-bit images scaled, not clipped to white


def _resolve_questions(sentences, questions):
    """The given questions, or the rule-made one of each sentence (a sentence without one is an error)."""
    from .questions import questions_for

    if questions is None:
        questions, missing = questions_for(sentences)
        if missing:
            raise ValueError(
                f"{len(missing)} sentence(s) have no question (no rule applies), e.g. {missing[:3]}; "
                "pass an overrides file."
            )
    return questions


def compute_relevance(
    image_paths,
    sentences,
    backends,
    *,
    questions=None,
    image_ids=None,
    combine="and",
    cache_dir=None,
    use_cache=True,
    batch_size=8,
    progress=False,
):
    """Ask every backend a yes/no question per (image, sentence) and combine.

    Parameters
    ----------
    image_paths : list of str
    sentences : list of str
    backends : dict of str to vqa.backends.Backend
    questions : list of str, optional
        One per sentence; default from [`vqa.questions.questions_for`][vqa.questions_for] (a
        sentence without a question is an error naming it).
    image_ids : list of str, optional
        Names in the output (default: the paths).
    combine : {'and', 'or', 'majority'}, default='and'
    batch_size : int, default=8
        (image, question) pairs per forward pass.

    Returns
    -------
    VQAResult
    """
    from tqdm.auto import tqdm

    sentences = list(sentences)
    questions = _resolve_questions(sentences, questions)
    questions = list(questions)
    if len(questions) != len(sentences):
        raise ValueError(f"{len(questions)} questions for {len(sentences)} sentences; expected one each.")
    empty = [s for s, q in zip(sentences, questions) if not q or not str(q).strip()]
    if empty:
        raise ValueError(f"{len(empty)} question(s) are empty, e.g. for sentence {empty[0]!r}.")
    if not backends:
        raise ValueError("`backends` is empty; expected at least one VQA backend.")
    image_ids = list(image_ids or image_paths)
    hashes, failures, ok = [], [], []
    for i, p in enumerate(image_paths):
        try:
            _open(p)  # the processors need a decodable image
            hashes.append(file_sha256(p))
            ok.append(i)
        except Exception as exc:  # unreadable / not an image
            failures.append((str(p), f"{type(exc).__name__}: {exc}"))
    if failures:
        warnings.warn(f"Skipped {len(failures)} unreadable image(s), first: {failures[0][0]}.", stacklevel=2)
    n, m = len(ok), len(sentences)
    probs, invalid, computed = {}, {}, {}
    run_ids = [image_ids[i] for i in ok]
    for name, backend in backends.items():
        if hasattr(backend, "check_coverage"):
            backend.check_coverage(run_ids, sentences)
        # Answers that ignore the pixels (metadata) depend on the image id and sentence, not the file content.
        by_content = getattr(backend, "uses_images", True)

        def cache_key(r, j, by_content=by_content):
            if by_content:
                return AnswerCache.key(hashes[r], questions[j])
            return AnswerCache.key("id:" + str(run_ids[r]), "sentence:" + sentences[j])

        cache = AnswerCache(backend.identity(), cache_dir) if use_cache else None
        store = cache.load() if cache else {}
        mat = np.full((n, m), np.nan)
        todo = []
        for r in range(len(ok)):
            for j in range(len(questions)):
                key = cache_key(r, j)
                if key in store:
                    mat[r, j] = store[key]
                else:
                    todo.append((r, j))
        pend_k, pend_v = [], []
        bar = tqdm(total=len(todo), desc=f"vqa {name}", unit="q", disable=not progress)
        try:
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                imgs = [_open(image_paths[ok[r]]) for r, _ in chunk] if backend.uses_images else [None] * len(chunk)
                ans = backend.answer(
                    imgs,
                    [questions[j] for _, j in chunk],
                    sentences=[sentences[j] for _, j in chunk],
                    image_ids=[image_ids[ok[r]] for r, _ in chunk],
                )
                for (r, j), a in zip(chunk, ans):
                    mat[r, j] = a
                    pend_k.append(cache_key(r, j))
                    pend_v.append(float(a))
                if cache and len(pend_k) >= FLUSH_EVERY:
                    cache.put(pend_k, pend_v)
                    pend_k, pend_v = [], []
                bar.update(len(chunk))
        finally:
            if cache:
                cache.put(pend_k, pend_v)  # keep what was answered, even on interruption
            bar.close()
        probs[name] = mat
        invalid[name] = int(np.isnan(mat).sum())
        computed[name] = len(todo)
    answers = {k: np.nan_to_num(v, nan=0.0) >= 0.5 for k, v in probs.items()}
    return VQAResult(
        probs,
        answers,
        combine_answers(answers, combine),
        [image_ids[i] for i in ok],
        sentences,
        questions,
        invalid,
        failures,
        computed,
    )


class _VQAActor:
    """A Ray actor: the backends built once, chunks of images in, a [`VQAResult`][vqa.VQAResult] per chunk out."""

    def __init__(self, backend_factories, sentences, questions, combine, cache_dir, use_cache, batch_size):
        self.backends = {name: make() for name, make in backend_factories.items()}
        self.kw = dict(
            questions=questions, combine=combine, cache_dir=cache_dir, use_cache=use_cache, batch_size=batch_size
        )
        self.sentences = sentences

    def run(self, start, paths, ids):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the driver warns once about unreadable images
            return start, compute_relevance(paths, self.sentences, self.backends, image_ids=ids, **self.kw)


def merge_results(parts, combine="and"):
    """One [`VQAResult`][vqa.VQAResult] from results over consecutive image chunks (in image order)."""
    first = parts[0]
    names = list(first.probabilities)
    probs = {k: np.concatenate([p.probabilities[k] for p in parts]) for k in names}
    answers = {k: np.concatenate([p.answers[k] for p in parts]) for k in names}
    return VQAResult(
        probs,
        answers,
        combine_answers(answers, combine) if names else np.zeros((0, len(first.sentences)), bool),
        [i for p in parts for i in p.image_ids],
        first.sentences,
        first.questions,
        {k: sum(p.invalid[k] for p in parts) for k in names},
        [f for p in parts for f in p.failures],
        {k: sum(p.n_computed[k] for p in parts) for k in names},
    )


def compute_relevance_ray(
    image_paths,
    sentences,
    backend_factories,
    *,
    questions=None,
    image_ids=None,
    combine="and",
    cache_dir=None,
    use_cache=True,
    batch_size=8,
    chunk_size=256,
    num_actors=None,
    gpus_per_actor=None,
    address=None,
    progress=False,
):
    """[`compute_relevance`][vqa.compute_relevance] on a Ray cluster: an actor pool of VQA models over chunks of images.

    Each actor builds every backend once (one GPU per actor when the cluster
    has GPUs) and answers through the same answer cache as the local path,
    so a later local run asks nothing again. Same result as
    [`compute_relevance`][vqa.compute_relevance].

    Parameters
    ----------
    image_paths, sentences, questions, image_ids, combine, cache_dir, use_cache, batch_size
        As in [`compute_relevance`][vqa.compute_relevance].
    backend_factories : dict of str to callable
        Picklable callables returning the backends, e.g.
        ``{"blip": functools.partial(create_backend, "blip")}``.
    chunk_size : int, default=256
        Images per task.
    num_actors, gpus_per_actor, address
        As in [`lbee.encoders.embedding.embed_images_ray`][lbee.encoders.embedding.embed_images_ray].
    progress : bool, default=False

    Returns
    -------
    VQAResult
    """
    from tqdm.auto import tqdm

    from lbee.ray_pool import actor_pool, kill_actors

    sentences = list(sentences)
    questions = _resolve_questions(sentences, questions)
    if not backend_factories:
        raise ValueError("`backend_factories` is empty; expected at least one VQA backend.")
    paths = [str(p) for p in image_paths]
    ids = list(image_ids or paths)
    pool, actors = actor_pool(
        _VQAActor,
        (dict(backend_factories), sentences, list(questions), combine, cache_dir, use_cache, batch_size),
        num_actors=num_actors,
        gpus_per_actor=gpus_per_actor,
        address=address,
    )
    chunks = [(s, paths[s : s + chunk_size], ids[s : s + chunk_size]) for s in range(0, len(paths), chunk_size)]
    parts = {}
    bar = tqdm(total=len(paths), desc="vqa (ray)", unit="img", disable=not progress)
    try:
        for start, part in pool.map_unordered(lambda actor, c: actor.run.remote(*c), chunks):
            parts[start] = part
            bar.update(min(chunk_size, len(paths) - start))
    finally:
        bar.close()
        kill_actors(actors)
    result = merge_results([parts[s] for s in sorted(parts)], combine)
    if result.failures:
        warnings.warn(
            f"Skipped {len(result.failures)} unreadable image(s), first: {result.failures[0][0]}.", stacklevel=2
        )
    return result


def parse_backend_spec(spec):
    """'llava+blip' -> ['llava', 'blip'] (order kept, duplicates dropped)."""
    names = [s.strip() for s in str(spec).split("+") if s.strip()]
    if not names:
        raise ValueError(f"`--backend` must name one or more backends joined by '+'; received {spec!r}.")
    return list(dict.fromkeys(names))


def write_relevance(result, path):
    """Write the long-form table (parquet or CSV by suffix)."""
    import io

    path = Path(path)
    frame = result.to_frame()
    buf = io.BytesIO()
    if path.suffix == ".csv":
        frame.to_csv(buf, index=False)
    else:
        frame.to_parquet(buf, index=False)
    # a temp file beside it, then a rename: a kill leaves the old table whole, never a truncated one (sweep 29)
    atomic_write_bytes(path, buf.getvalue())
    return path
