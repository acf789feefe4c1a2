"""``lbee.explain``: LBEE's split–cluster–match–select in one call.

[`explain`][lbee.explain] is [`lbee.partition`][lbee.partition] followed by
[`lbee.core.partition.Partition.describe`][lbee.Partition.describe]; [`explain_methods`][lbee.explain_methods] clusters
once and describes with several methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._validation import as_unit_rows, check_choice
from ..typing import ArrayLike, IntArray
from .clustering import DEFAULT_WARD
from .partition import DEFAULT_A, DEFAULT_K, DEFAULT_N_CLUSTERS, Partition
from .selection import CLIP_TAU, COMPOSE, DESCRIBERS, METHODS, check_methods
from .sentence_index import as_sentence_index

if TYPE_CHECKING:
    from .explanation import Explanation
    from .sentence_index import SentenceIndex


def grammar_index(
    sentence_embeddings: ArrayLike | SentenceIndex, grammar: Any, sentences: Sequence[str] | None
) -> tuple[SentenceIndex, Sequence[str] | None]:
    """The sentence index of a grammar's rows, and their texts (``sentences``, or the grammar's).

    Without ``grammar``, ``sentence_embeddings`` as it is. With it, the rows are either the grammar's
    generated sentences ([`lbee.grammar.generate`][lbee.grammar.generate] at its ``max_conditions``) or only the
    sentences
    'compose' reads (`lbee.grammar.embedded_atoms`), both in their function's order; the row count
    says which.
    """
    from .sentence_index import SentenceIndex

    if grammar is None:
        return as_sentence_index(sentence_embeddings), sentences
    from ..grammar import embedded_atoms, generate, load_grammar

    g = load_grammar(grammar)
    if isinstance(sentence_embeddings, SentenceIndex):
        if sentence_embeddings.grammar is not None and sentence_embeddings.grammar.digest != g.digest:
            raise ValueError(
                f"`grammar` {g.name!r} is not the grammar of the SentenceIndex ({sentence_embeddings.grammar.name!r})."
            )
        emb: Any = sentence_embeddings.embeddings
    else:
        emb = as_unit_rows(sentence_embeddings, "sentence_embeddings")
    atoms, atom_conditions = embedded_atoms(g)
    full, full_conditions, _ = generate(g)
    if len(emb) == len(full):
        texts, conditions = full, full_conditions
    elif len(emb) == len(atoms):
        texts, conditions = atoms, atom_conditions
    else:
        raise ValueError(
            f"`sentence_embeddings` has {len(emb)} rows; with grammar {g.name!r} expected the embeddings of its "
            f"{len(full)} generated sentences (lbee.grammar.generate) or of its {len(atoms)} atom sentences "
            "(lbee.grammar.embedded_atoms), in that function's order."
        )
    if sentences is not None and list(sentences) != list(texts):
        bad = next((i for i, (a, b) in enumerate(zip(sentences, texts)) if a != b), min(len(sentences), len(texts)))
        got = sentences[bad] if bad < len(sentences) else "<none>"
        want = texts[bad] if bad < len(texts) else "<none>"
        raise ValueError(
            f"`sentences` differs from grammar {g.name!r}'s rows at row {bad}: received {got!r}, expected {want!r}."
        )
    return SentenceIndex(emb, conditions=list(conditions), grammar=g), list(texts)


def _column(data: Any, value: Any, name: str) -> Any:
    """``data[value]`` when ``value`` names a column of the DataFrame ``data``; else ``value`` itself."""
    if data is None or not isinstance(value, str):
        return value
    if value not in data.columns:
        raise ValueError(f"`{name}`={value!r} is not a column of `data`; its columns are {list(data.columns)}.")
    return data[value].to_numpy()


def _from_frame(
    data: Any, image_embeddings: Any, embeddings: str | None, confidence: Any, hard: Any, easy: Any
) -> tuple[Any, Any, Any, Any, list[Any] | None]:
    """Resolve Domino-style column names (``data=df, embeddings="emb", confidence="phi"``) to arrays."""
    import numpy as np

    if data is None:
        if embeddings is not None:
            raise ValueError(
                "`embeddings` names a column of `data`; pass data=DataFrame too (or give the array as "
                "`image_embeddings`)."
            )
        return image_embeddings, confidence, hard, easy, None
    if not hasattr(data, "columns") or not hasattr(data, "index"):
        raise TypeError(f"`data` must be a pandas DataFrame; received {type(data).__name__}.")
    col = embeddings if embeddings is not None else image_embeddings
    if col is None:
        raise ValueError("With `data`, name its embedding column: embeddings='emb'.")
    if isinstance(col, str):
        cells = _column(data, col, "embeddings")
        try:
            emb = (
                np.stack([np.asarray(c, dtype=np.float64).reshape(-1) for c in cells])
                if len(cells)
                else np.zeros((0, 0))
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"`embeddings`={col!r}: every cell must be a vector of the same length d ({exc})."
            ) from None
    else:
        emb = col
    return (
        emb,
        _column(data, confidence, "confidence"),
        _column(data, hard, "hard"),
        _column(data, easy, "easy"),
        list(data.index),
    )


def explain_methods(
    image_embeddings: ArrayLike | str | None = None,
    sentence_embeddings: ArrayLike | SentenceIndex | None = None,
    *,
    methods: str | Sequence[str] = METHODS,
    confidence: ArrayLike | str | None = None,
    hard: ArrayLike | str | None = None,
    easy: ArrayLike | str | None = None,
    a: float = DEFAULT_A,
    n_clusters: int = DEFAULT_N_CLUSTERS,
    n_easy_clusters: int | None = None,
    k: int = DEFAULT_K,
    tau: float | None = None,
    slicer: Any = "ward",
    sentences: Sequence[str] | None = None,
    ward: str = DEFAULT_WARD,
    data: Any = None,
    embeddings: str | None = None,
    grammar: Any = None,
) -> dict[str, Explanation]:
    """Run several describers over one split and clustering.

    Same parameters as [`explain`][lbee.explain], with ``methods`` (a list of method names)
    instead of ``method``. Clustering is computed once.

    Returns
    -------
    dict of str to Explanation
    """
    import numpy as np

    image_embeddings, confidence, hard, easy, ids = _from_frame(
        data, image_embeddings, embeddings, confidence, hard, easy
    )
    if sentence_embeddings is None:
        raise ValueError("`sentence_embeddings` is required: an (N, d) array (or a SentenceIndex).")
    if image_embeddings is None:
        raise ValueError("`image_embeddings` is required: an (n, d) array (or data=DataFrame, embeddings=column).")
    names = check_methods(methods)
    if tau is None:  # arrays carry no encoder: say which τ is assumed (lbee.io.provenance)
        from ..io.provenance import warn_assumed_tau

        warn_assumed_tau(CLIP_TAU, "`image_embeddings` and `sentence_embeddings` given as arrays", "tau=")
        tau = CLIP_TAU
    index, sentences = grammar_index(sentence_embeddings, grammar, sentences)
    if COMPOSE in names and (index.grammar is None or index.conditions is None):
        raise ValueError(
            "method 'compose' needs a grammar: pass grammar= (a Grammar, a built-in grammar's name or a "
            ".grammar.yaml path) with the embeddings of its sentences (lbee.grammar.embedded_atoms)."
        )
    part = Partition(a=a, n_clusters=n_clusters, n_easy_clusters=n_easy_clusters, slicer=slicer, ward=ward)
    # Cheap checks of the describe step first, so a bad k, τ or d fails before clustering.
    import warnings

    from .selection import check_describe_args

    with warnings.catch_warnings():  # its warnings are said once, when describing
        warnings.simplefilter("ignore")
        check_describe_args(index, image_embeddings, k, tau, sentences)
    part.fit(image_embeddings, confidence=confidence, hard=hard, easy=easy)
    if index.grammar is not None:  # one hypothesis per failure, as a run does (lbee.core.hypotheses)
        part.merge(index, tau=tau, k=k)
    out = {m: part.describe(index, m, k=k, tau=tau, sentences=sentences) for m in names}
    phi = None if confidence is None else np.asarray(confidence, dtype=np.float64).reshape(-1)
    for e in out.values():  # kept in memory for Explanation.assignments()
        e.confidence, e.image_ids = phi, ids
    unassigned_hard(part, out)  # a trial's library run lost 60 of 178 hard images without a word
    return out


def explain(
    image_embeddings: ArrayLike | str | None = None,
    sentence_embeddings: ArrayLike | SentenceIndex | None = None,
    *,
    confidence: ArrayLike | str | None = None,
    hard: ArrayLike | str | None = None,
    easy: ArrayLike | str | None = None,
    a: float = DEFAULT_A,
    method: str = "fpdiff",
    n_clusters: int = DEFAULT_N_CLUSTERS,
    n_easy_clusters: int | None = None,
    k: int = DEFAULT_K,
    tau: float | None = None,
    slicer: Any = "ward",
    sentences: Sequence[str] | None = None,
    ward: str = DEFAULT_WARD,
    data: Any = None,
    embeddings: str | None = None,
    grammar: Any = None,
) -> Explanation:
    """Find hard clusters of images and the sentences that describe them.

    Parameters
    ----------
    image_embeddings : array-like of shape (n, d)
        Image embeddings in the joint space (renormalised to unit rows).
    sentence_embeddings : array-like of shape (N, d) or SentenceIndex
        Sentence embeddings in the same space (renormalised to unit rows). A
        prebuilt `lbee.core.sentence_index.SentenceIndex` is reused as is,
        which saves its set-up in loops over classes.
    confidence : array-like of shape (n,), optional
        φ, higher = easier (pass −entropy for entropy). Splits at μ ± aσ.
    hard, easy : array-like of bool, shape (n,), optional
        Explicit split masks, an alternative to ``confidence``.
    a : float, default=0.2
        Split margin in standard deviations of φ (0.2 in the LBEE paper).
    method : {'fpdiff', 'tops', 'setdiff', 'pdiff', 'domino', 'compose'}, default='fpdiff'
        The describer: the rule that picks each hard group's sentences (the LBEE paper's fourth step). 'compose' needs
        ``grammar``.
    n_clusters : int, default=15
        Hard clusters; the effective number is ``min(n_clusters, n_hard)``.
    n_easy_clusters : int, optional
        Easy clusters, default ``n_clusters``; effective ``min(., n_easy)``.
    k : int, default=3
        Sentences kept per hard cluster.
    tau : float or None, default=None
        Similarity threshold of SetDiff / FPDiff: an image "shows" a sentence
        when their cosine similarity is above it. Arrays do not say which
        encoder made them, so None assumes CLIP's 0.25 and warns
        ([`lbee.io.provenance.ProvenanceWarning`][lbee.io.provenance.ProvenanceWarning]); for another
        encoder pass its own threshold (its ``default_tau``).
    slicer : 'ward' or slicer object, default='ward'
        'ward' clusters the hard split ([`lbee.slicers.WardSlicer`][lbee.slicers.WardSlicer]); a
        slicer from `lbee.slicers` (fitted on these images, or unfitted:
        then fitted here with the split as its error signal) supplies the hard
        groups, most important first. The easy side is always Ward-clustered.
    sentences : list of str of length N, optional
        Sentence texts, kept for readable output.
    ward : str, default='auto'
        How Ward clustering is computed: 'exact' (the full linkage), 'knn' (a
        nearest-neighbour graph), 'kmeans' (Ward on k-means centres), or
        'auto' (exact up to 4,000 images, then 'kmeans').
    data : pandas.DataFrame, optional
        Domino style: one row per image. ``embeddings`` (or
        ``image_embeddings``) then names the column whose cells are the (d,)
        vectors, and ``confidence`` / ``hard`` / ``easy`` may name columns too:
        ``lbee.explain(data=df, embeddings="emb", sentence_embeddings=S, confidence="phi")``.
        The DataFrame's index becomes ``Explanation.image_ids``.
    embeddings : str, optional
        The embedding column of ``data``.
    grammar : Grammar, str or path, optional
        A grammar ([`lbee.grammar.Grammar`][lbee.grammar.Grammar], a built-in grammar's name or a ``.grammar.yaml``
        path) whose
        sentences ``sentence_embeddings`` embeds: either all its generated sentences
        ([`lbee.grammar.generate`][lbee.grammar.generate]) or only the ones 'compose' reads
        (`lbee.grammar.embedded_atoms`),
        in that function's order. With it, the hard groups that are pieces of one failure are merged, as in a
        run ([`lbee.core.partition.Partition.merge`][lbee.Partition.merge]), and ``sentences`` defaults to the grammar's
        texts.

    Returns
    -------
    Explanation
        φ (when given) is kept on it for `Explanation.assignments`. Ward's hard clusters come in the order
        the clustering numbers them, not by harm (the function sees no correctness); ``exp.harm_order(omega)``
        gives the order ``lbee describe`` and the reports show them in (error rate × size, the most harmful
        first), from the images' correctness ω.

    See Also
    --------
    lbee.partition : cluster once and describe many times.
    """
    check_choice(method, "method", set(DESCRIBERS))
    return explain_methods(
        image_embeddings,
        sentence_embeddings,
        methods=[method],
        confidence=confidence,
        hard=hard,
        easy=easy,
        a=a,
        n_clusters=n_clusters,
        n_easy_clusters=n_easy_clusters,
        k=k,
        tau=tau,
        slicer=slicer,
        sentences=sentences,
        ward=ward,
        data=data,
        embeddings=embeddings,
        grammar=grammar,
    )[method]


def unassigned_hard(part: Partition, explanations: dict[str, Explanation]) -> IntArray:
    """The hard images in no hard cluster, set as each explanation's ``unassigned``.

    With a grammar the slicer's groups are merged into hypotheses, each of which keeps the images its description
    picks out; the others are listed here, never dropped in silence.

    Returns
    -------
    ndarray of int
        Indices into the n images.
    """
    import numpy as np

    first = next(iter(explanations.values()))
    hard = np.asarray(getattr(part, "hard_mask_", np.zeros(0, bool)), dtype=bool).copy()
    for c in first.hard_clusters:
        hard[np.asarray(c.indices, dtype=np.int64)] = False
    out = np.flatnonzero(hard).astype(np.int64)
    for e in explanations.values():
        e.unassigned = out
    return out
