"""Embeddings from a table of what is in each image: a simulated encoder, for a machine without CLIP weights.

Each row of the table says, per key of a grammar (``subject.attribute``), the image's value. The simulated
encoder of the worlds bench (`lbee.bench.simulated_encoder.SimulatedEncoder`) embeds each image from its row, at a
chosen median atom ROC-AUC and with a real encoder's faults, and each sentence from the conditions it states.
What lbee then finds is what the table says, not what the pixels show: a rehearsal of an audit with CLIP
(docs/howto/no-clip.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The median atom ROC-AUC of the simulated encoder by default: about CLIP's on fine attributes (docs/worlds.md).
DEFAULT_QUALITY = 0.88


@dataclass
class SimulatedEmbeddings:
    """What `simulate_embeddings` returns.

    Attributes
    ----------
    image_embeddings : ndarray of shape (n, d), float32
        One row per row of the table, in its order.
    sentence_embeddings : ndarray of shape (N, d), float32
        One row per sentence of the set, in its order.
    relevance : ndarray of bool, shape (n, N)
        Γ: whether each sentence's conditions hold for each image, by the table.
    ids : list of str
        The images' ids (the table's id column), in row order.
    tau : float
        The encoder's similarity threshold.
    identity : dict
        The encoder's identity, as its provenance records it.
    quality : float
        The median atom ROC-AUC reached.
    """

    image_embeddings: np.ndarray
    sentence_embeddings: np.ndarray
    relevance: np.ndarray
    ids: list
    tau: float
    identity: dict
    quality: float


def simulate_embeddings(table, sentence_set, *, quality=DEFAULT_QUALITY, random_state=0):
    """Embed the images of an attribute table and the sentences of a grammar's sentence set.

    Parameters
    ----------
    table : pandas.DataFrame or path-like
        One row per image: an id column (``image`` or ``path``, as a predictions table's) and one column per key
        of the grammar, ``subject.attribute``, holding the value (an empty cell where the key does not apply; a
        presence may be ``true`` / ``false``). A file is read by `lbee.io.table_reader.read_table`.
    sentence_set : str, path-like or lbee.io.sentences.SentenceSet
        A sentence file written by ``lbee sentences generate GRAMMAR`` (its conditions and grammar beside it).
    quality : float, default=0.88
        The target median atom ROC-AUC, in (0.5, 1): 0.75 a weak encoder's, 0.88 about CLIP's on fine
        attributes, 0.97 a near-perfect one's.
    random_state : int, default=0

    Returns
    -------
    SimulatedEmbeddings

    Raises
    ------
    ValueError
        A sentence set without a grammar, a table without a key's column, or a value the grammar does not know
        (naming the file, the column and the row).
    """
    from ..io.predictions import id_column_of
    from ..io.sentences import SentenceSet, load_sentence_set
    from ..io.table_reader import check_not_empty, check_unique, read_table, table_source, text_column
    from .simulated_encoder import SimulatedEncoder
    from .worlds import NA, AttributeWorld

    q = float(quality)
    if not 0.5 < q < 1.0:
        raise ValueError(f"`quality` is {quality!r}; expected a median ROC-AUC between 0.5 and 1 (e.g. 0.88).")
    sset = sentence_set if isinstance(sentence_set, SentenceSet) else load_sentence_set(sentence_set)
    if sset.grammar is None or sset.conditions is None:
        raise ValueError(
            f"sentence set {sset.name!r} has no grammar: the simulated encoder embeds each sentence from the "
            "conditions it states. Write the sentences with `lbee sentences generate GRAMMAR --out FILE`."
        )
    if not hasattr(table, "columns"):
        table = read_table(table)
    source = table_source(table, "attribute table")
    # the ids as a predictions table's are read: present, visible text, each once (a blank or repeated id was
    # written to ids.txt, and the rows it named could not be told apart)
    check_not_empty(table, "attribute table")
    idc = id_column_of(table, default="attribute table")
    ids = text_column(table, idc, "attribute table")
    check_unique(table, idc, "attribute table", what="image id")
    values = {}
    for column in table.columns:
        if isinstance(column, str) and "." in column:
            cells = table[column]
            if cells.dtype != bool:  # an empty cell: the key does not apply (NA); text as written
                cells = cells.astype(object).where(cells.notna(), NA).map(lambda v: str(v).strip())
            values[tuple(column.split(".", 1))] = cells.to_numpy()
    n = len(table)
    try:
        world = AttributeWorld(
            sset.grammar, values, [], [], np.ones(n, bool), np.ones(n), int(random_state)
        )  # checks the table against the grammar; no failure planted, no model
    except ValueError as exc:
        rows = " (row 1 is the file's first data row)" if ", row " in str(exc) else ""
        raise ValueError(f"{source}: {exc}{rows}{_unread_column_hint(exc, table, sset.grammar)}") from None
    encoder = SimulatedEncoder(sset.grammar, random_state=int(random_state)).fit_quality(world, q)
    x = encoder.embed_images(world).astype(np.float32)
    s = encoder.embed_sentences(sset.conditions).astype(np.float32)
    relevance = np.ones((n, len(sset.conditions)), bool)
    for j, conditions in enumerate(sset.conditions):
        relevance[:, j] = world.holds(conditions)
    reached = float(np.nanmedian(encoder.atom_auc(world, x)))
    identity = {
        "encoder": "simulated",
        "model": f"{sset.grammar.name}-auc{q:g}",
        "weights": f"seed-{int(random_state)}",
    }
    return SimulatedEmbeddings(x, s, relevance, ids, float(encoder.default_tau(world, x)), identity, reached)


def _unread_column_hint(exc, table, grammar):
    """A column not read that names the key the table was said to lack, as " Did you mean ..." ('' when none).

    A column named 'light' for the key 'light.kind' was passed over with "has no column 'light.kind'" (trial 36).
    """
    import difflib
    import re

    missing = re.search(r"has no column '([^']+)'", str(exc))
    if missing is None:
        return ""
    wanted = missing.group(1)
    keys = {key for key, _ in grammar.keys()}
    unread = [c for c in table.columns if isinstance(c, str) and tuple(c.split(".", 1)) not in keys]
    subject, _, attribute = wanted.partition(".")
    near = [c for c in unread if c.strip().lower() in (wanted, subject, attribute, wanted.replace(".", "_"))]
    lowered = {c.lower(): c for c in unread}  # 'Cell.Type' for 'cell.type' (sweep 32au N5)
    near = near or [lowered[c] for c in difflib.get_close_matches(wanted.lower(), list(lowered), 1, 0.75)]
    return f" Did you mean the column {near[0]!r}? (name it {wanted!r})" if near else ""


#: The files `simulate_to_folder` writes, replaced together.
SIMULATED_FILES = (
    "embeddings.npy",
    "embeddings.provenance.json",
    "ids.txt",
    "sentence_embeddings.npy",
    "sentence_embeddings.provenance.json",
    "relevance.npy",
)


def simulate_to_folder(out, table, sentence_set, *, quality=DEFAULT_QUALITY, random_state=0, overwrite=False):
    """`simulate_embeddings`, written into ``out`` as ``lbee embed`` writes embeddings, with Γ beside them.

    ``embeddings.npy`` and ``ids.txt`` (the images, in the table's order), ``sentence_embeddings.npy`` (the
    sentences, in the file's order), each with its provenance record (the encoder and its τ), and
    ``relevance.npy`` (Γ, n × N booleans). Staged and moved in together (`lbee.io.staging`); a folder that holds
    them already is refused unless ``overwrite``, before any work.

    Returns
    -------
    SimulatedEmbeddings
    """
    from pathlib import Path

    from ..io.cache import atomic_save_npy, atomic_write_bytes
    from ..io.provenance import make_provenance, write_embeddings
    from ..io.row_ids import ids_bytes
    from ..io.staging import check_no_replace, recover_leftovers, staged_entries

    out = Path(out)
    inputs = [p for p in (table, sentence_set) if isinstance(p, (str, Path)) and Path(p).is_file()]
    recover_leftovers(out)
    check_no_replace([out / name for name in SIMULATED_FILES], overwrite=overwrite, inputs=inputs)
    from ..io.sentences import SentenceSet, load_sentence_set

    sset = sentence_set if isinstance(sentence_set, SentenceSet) else load_sentence_set(sentence_set)
    sim = simulate_embeddings(table, sset, quality=quality, random_state=random_state)
    texts = [str(t) for t in sset.sentences]
    with staged_entries(out, replaces=SIMULATED_FILES) as stage:
        x, s = sim.image_embeddings, sim.sentence_embeddings
        image_record = make_provenance("image_embeddings", x, identity=sim.identity, tau=sim.tau, row_ids=sim.ids)
        write_embeddings(stage / "embeddings.npy", x, image_record)
        atomic_write_bytes(stage / "ids.txt", ids_bytes(sim.ids))
        record = make_provenance("sentence_embeddings", s, identity=sim.identity, tau=sim.tau, sentences=texts)
        write_embeddings(stage / "sentence_embeddings.npy", s, record)
        atomic_save_npy(stage / "relevance.npy", sim.relevance)
    return sim
