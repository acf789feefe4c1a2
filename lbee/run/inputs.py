"""What a run reads: loading a `DatasetSpec` into arrays (embeddings, sentences, Γ).

`load_inputs` embeds and reads what every model of a dataset shares; `lbee.run.scores.model_scores` computes one
model's φ and ω, and `lbee.run.preflight.preflight` checks what can be checked in seconds.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .identity import is_random_spec
from .models import encoder_caveat, load_encoder
from .preflight import preflight, tau_assumed_for
from .scores import align_scores, model_scores, with_manifest_labels
from .specs import DatasetSpec, ModelSpec, RunInputs, Scores, probabilities_kind


def provenance_tau(ds, image_prov, sentence_prov, sentences, encoder, encoder_tau):
    """The provenance rule for a run's embeddings ([`lbee.io.provenance`][lbee.io.provenance]); returns the encoder's τ.

    Embeddings of two encoders, or sentence embeddings of another sentence list, are refused; τ comes from the
    encoder used now, else from the files' provenance; with bare files and no τ in the settings, a warning names
    the CLIP τ assumed.
    """
    from ..core.selection import CLIP_TAU
    from ..io.provenance import check_pair, warn_assumed_tau

    declared = check_pair(
        image_prov,
        sentence_prov,
        sentences=sentences,
        encoder_identity=None if encoder is None else encoder.identity(),
        encoder_tau=None if encoder is None else encoder_tau,
        image_name=_named("image_embeddings", ds.image_embeddings),
        sentence_name=_named("sentence_embeddings", ds.sentence_embeddings),
    )
    if encoder is not None:
        return encoder_tau
    bare = tau_assumed_for(ds, {"image_embeddings": image_prov, "sentence_embeddings": sentence_prov}, declared)
    if bare:
        warn_assumed_tau(CLIP_TAU, bare)
    return declared


def _named(field, path):
    """How provenance messages name an input: the field and, when it is a file, the file."""
    return field if path is None else f"{field} {str(path)!r}"


def _relevance(ds, ids, sents, paths=None):
    rel = ds.relevance
    if rel is None:
        return None, "none"
    from ..io.relevance import load_relevance

    ((kind, path),) = rel.items()
    label = "ground truth" if kind == "ground_truth" else "VQA pseudo ground truth"
    return load_relevance(path, ids, sents, image_paths=paths), f"{label}: {Path(path).name}"


def _spotcheck_inputs(ds, out_dir, device, log):
    from ..spotcheck import CorruptECError, ExperimentalConfiguration, make_ec

    if ds.encoder != "spotcheck":
        raise ValueError(
            f"dataset {ds.name!r}: a SpotCheck world is described with its own encoder "
            f"(encoder: spotcheck); received encoder {ds.encoder!r}."
        )
    if "path" in ds.spotcheck:
        ec = ExperimentalConfiguration.load(ds.spotcheck["path"])
    else:
        seed = ds.spotcheck["seed"]
        ec_dir = None if out_dir is None else Path(out_dir) / "ec"
        ec = None
        from ..io.own_store import foreign_in_tree

        # a rerun reuses its world unless corrupt, or another user can change it (sweep 32al BL3)
        if ec_dir is not None and (ec_dir / "ec.json").exists() and not foreign_in_tree(ec_dir):
            try:
                ec = ExperimentalConfiguration.load(ec_dir)
            except CorruptECError:
                ec = None
        # the world of `seed` may be a later candidate (ec.seed = seed * 1000 + attempt) when the gate rejected some
        if ec is None or ec.verification.get("random_state", ec.seed) != seed:
            log(f"  generating SpotCheck world (seed {seed}) ...")
            ec = make_ec(seed, log=log)
            if ec_dir is not None:
                ec.save(ec_dir)
    return spotcheck_inputs(ds, ec, load_encoder("spotcheck", device=device))


def spotcheck_inputs(ds, ec, encoder):
    """`RunInputs` of a SpotCheck world in memory: its test renders, sentences and exact Γ.

    Parameters
    ----------
    ds : DatasetSpec
        ``relevance`` is ``"ground_truth"`` (exact Γ), a Γ file, or None.
    ec : lbee.spotcheck.ExperimentalConfiguration
    encoder : Encoder
        The SpotCheck encoder.
    """
    from ..encoders.embedding import embed_sentences
    from ..io.sentences import load_sentence_set
    from ..spotcheck import spotcheck_sentences

    if ec.model is None:
        raise ValueError(f"dataset {ds.name!r}: the EC has no trained model (model.pt).")
    enc = encoder
    images = ec.images["test"]
    if ds.sentence_set in (None, "spotcheck"):  # the hand-written set of the SpotCheck world
        sents = spotcheck_sentences()
        texts, conds, grammar, name = [s for s, _, _ in sents], [c for _, c, _ in sents], None, "spotcheck"
    else:  # a grammar's set over the world's attributes (the demo's and the bench's: 'spotcheck.grammar')
        sset = load_sentence_set(ds.sentence_set)
        if sset.conditions is None:
            raise ValueError(
                f"dataset {ds.name!r}: a SpotCheck world needs the sentences of a grammar over its "
                f"attributes (e.g. 'spotcheck.grammar'); {ds.sentence_set!r} has no conditions."
            )
        texts, conds, grammar, name = list(sset.sentences), list(sset.conditions), sset.grammar, sset.name
    ids = [f"test/{i:05d}" for i in range(len(images))]
    rel, source = None, "none"
    if ds.relevance == "ground_truth":
        rel, source = spotcheck_relevance(ec.attributes["test"], conds, grammar), "ground truth (SpotCheck attributes)"
    elif ds.relevance is not None:
        rel, source = _relevance(ds, ids, texts)
    notes = [f"True blindspot {i}: {d}" for i, d in enumerate(ec.describe_blindspots())]
    return RunInputs(
        enc.encode_arrays(images),
        embed_sentences(enc, texts),
        texts,
        ids,
        None,
        list(images),
        ec.true_labels("test"),
        rel,
        source,
        enc.default_tau,
        enc.identity(),
        name,
        notes=notes,
        spotcheck=ec,
        sentence_conditions=None if grammar is None else conds,
        grammar=grammar,
    )


def spotcheck_relevance(attributes, conditions, grammar=None):
    """Exact Γ (n, N) of sentences with conditions on SpotCheck renders (presences implied by attributes counted).

    An absent object keeps default attribute values in the world, so "a blue
    circle" needs "circle present" spelled out: the grammar's
    [`implied`][lbee.grammar.Grammar.implied] adds it.
    """
    from ..spotcheck import relevance_matrix

    full = [grammar.implied(c) for c in conditions] if grammar is not None else list(conditions)
    return relevance_matrix(attributes, full)


def _precomputed_ids(ds):
    """Image ids of precomputed embeddings without images: the first model's predictions table, in row order."""
    from ..io.images import read_table
    from ..scoring.confidence import scores_from_table

    model = ds.models[0] if ds.models else None
    if model is None or model.predictions is None or Path(model.predictions).is_dir():
        raise ValueError(
            "precomputed image embeddings without images need a predictions table (rows in the same order)."
        )
    ids, _ = scores_from_table(
        read_table(model.predictions), kind=ds.settings.confidence_from, probabilities=probabilities_kind(ds)
    )
    return list(ids)


def _id_source(ds, rival):
    """Where a run's image ids come from, as messages name it."""
    if rival is not None:
        return f"the RIVAL10 split of {str(ds.rival10['path'])!r}"
    if ds.images is not None:
        return f"the images of {str(ds.images)!r}"
    return f"the predictions table {str(ds.models[0].predictions)!r}"


def _image_inputs(ds, cache_dir, device, progress, log=lambda msg: None):
    from ..io.sentences import load_sentence_set

    rival = None
    if ds.rival10 is not None:
        from ..rival10 import load_rival10

        rival = load_rival10(ds.rival10["path"], ds.rival10.get("split", "test"), class_map=ds.rival10.get("class_map"))
        sset_name, sents = "rival10", list(rival.sentences)
    else:
        sset = load_sentence_set(ds.sentence_set)
        sset_name, sents = sset.name, list(sset.sentences)
    conditions, grammar = (None, None) if rival is not None else (sset.conditions, sset.grammar)
    failures, enc, hashes, reals = [], None, None, None
    if rival is not None:
        ids, paths, labels = list(rival.ids), [str(p) for p in rival.paths], np.asarray(rival.labels)
    elif ds.images is not None:
        from ..io.images import discover_images

        imgs = discover_images(ds.images)
        ids, paths, labels = list(imgs.ids), list(imgs.paths), imgs.labels
    else:
        if ds.image_embeddings is None:
            raise ValueError(
                f"dataset {ds.name!r} needs images (a folder or manifest) or precomputed image embeddings."
            )
        ids, paths, labels = _precomputed_ids(ds), None, None
    from ..io.provenance import check_row_ids, load_embeddings

    image_prov = sentence_prov = None
    if ds.image_embeddings is not None:
        from ..io.arrays import embeddings_file

        img_path = embeddings_file(ds.image_embeddings, "image_embeddings")  # a file, or lbee embed's folder
        emb, image_prov = load_embeddings(img_path, "image_embeddings", kind="image_embeddings")
        from_folder = ds.images is not None and Path(ds.images).is_dir()
        if emb.ndim == 2:  # rows named beside the array (lbee embed's ids.txt) must be the run's images, in order
            folder = (image_prov or {}).get("images_folder")
            check_row_ids(
                img_path,
                emb.shape[0],
                ids,
                "image_embeddings",
                against=_id_source(ds, rival),
                images_folder=folder,
                run_files=paths,
                from_folder=from_folder,
                ids_sha256=(image_prov or {}).get("ids_sha256"),
            )
        if emb.ndim != 2 or emb.shape[0] != len(ids):
            where = f"image of {str(ds.images)!r}" if ds.images is not None else "row of the predictions table"
            raise ValueError(
                f"image_embeddings {Path(img_path).name!r} has shape {emb.shape}; expected "
                f"({len(ids)}, d), one row per {where}."
            )
        ok = np.ones(len(ids), bool)
        shown = _as_given(ds.image_embeddings)
        encoder_id, encoder_tau = {"encoder": "precomputed", "image_embeddings": shown}, None
        if image_prov is not None:  # the encoder travels with the embeddings
            encoder_id = dict(image_prov["encoder"], image_embeddings=shown)
            if image_prov.get("data_sha256"):  # so that an export can find these very rows again (trial 21)
                encoder_id["image_embeddings_sha256"] = image_prov["data_sha256"]
    else:
        from ..encoders.embedding import embed_images

        # every report of a whole-dataset run carries the banner (lbee.run.identity): a warning would say it twice
        caveat = encoder_caveat(ds.encoder, ds.images)
        if caveat is not None and ds.settings.per_class and not is_random_spec(ds.encoder):
            import warnings

            warnings.warn(caveat, UserWarning, stacklevel=2)
        enc = load_encoder(ds.encoder, device=device)
        res = embed_images(
            enc,
            paths,
            cache_dir=cache_dir,
            batch_size=ds.batch_size,
            num_workers=ds.num_workers,
            progress=progress,
            strict=ds.strict,
        )
        emb, ok, failures, encoder_id, encoder_tau, hashes, reals = (
            res.embeddings,
            res.ok,
            res.failures,
            enc.identity(),
            enc.default_tau,
            res.hashes,
            res.real_paths,
        )
        if caveat is not None and not is_random_spec(ds.encoder):  # recorded with the run: its reports show it
            encoder_id = dict(encoder_id, caveat=caveat)
        # what was computed and what was reused: a rerun (or a resumed service job) reads its log truthfully
        log(
            f"  images: {res.n_encoded} embedded, {int(ok.sum()) - res.n_encoded} read from the embedding cache, "
            f"{len(failures)} unreadable"
        )
    if ds.sentence_embeddings is not None:
        sen, sentence_prov = load_embeddings(ds.sentence_embeddings, "sentence_embeddings", kind="sentence_embeddings")
        rows_checked = False
        if sentence_prov is None:  # no record of their sentences: lbee embed's sentences.txt beside them, if there
            from ..io.row_ids import check_sentence_rows

            rows_checked = check_sentence_rows(ds.sentence_embeddings, sents)
        if sen.ndim != 2 or sen.shape[0] != len(sents):
            more = (  # a twenty-first user embedded every line of a generated file, its '#' header too
                " A sentence file's '#' lines and blank lines are no sentences: embed only what `lbee sentences "
                "show FILE` lists."
                if sen.ndim == 2 and sen.shape[0] > len(sents)
                else ""
            )
            raise ValueError(
                f"sentence_embeddings has shape {sen.shape}; expected ({len(sents)}, d) for the "
                f"{len(sents)} sentences of {sset_name!r}.{more}"
            )
    elif enc is not None:
        from ..encoders.embedding import embed_sentences

        sen = embed_sentences(enc, sents, cache_dir=cache_dir)
    else:
        raise ValueError("image_embeddings needs sentence_embeddings too (the same joint space).")
    encoder_tau = provenance_tau(ds, image_prov, sentence_prov, sents, enc, encoder_tau)
    if enc is None and ds.image_embeddings is not None and ds.sentence_embeddings is not None:
        from ..io.bare_arrays import warn_one_bare

        warn_one_bare(  # said here once, with both records as read (the preflight reads no folder's)
            image_prov,
            sentence_prov,
            _named("image_embeddings", ds.image_embeddings),
            _named("sentence_embeddings", ds.sentence_embeddings),
            rows_checked=rows_checked,
        )
    ids = [i for i, good in zip(ids, ok) if good]
    thumbnails = _image_files(paths, hashes, ok, reals)
    paths = None if paths is None else [p for p, good in zip(paths, ok) if good]
    labels = None if labels is None else np.asarray(labels)[ok]
    if rival is not None and ds.relevance in (None, "ground_truth"):  # the attribute labels: exact Γ
        rel, source = np.asarray(rival.relevance)[ok], "ground truth (RIVAL10 attribute labels)"
    else:  # with the images' paths: an id naming another folder's existing file matches none (sweep 32ay B4)
        rel, source = _relevance(ds, ids, sents, paths)
    return RunInputs(
        emb,
        sen,
        sents,
        ids,
        paths,
        thumbnails,
        labels,
        rel,
        source,
        encoder_tau,
        encoder_id,
        sset_name,
        failures=[_skipped_as_given(p, why) for p, why in failures],
        sentence_conditions=None if conditions is None else list(conditions),
        grammar=grammar,
    )


def load_inputs(ds, *, cache_dir=None, device=None, progress=False, out_dir=None, log=None):
    """Embed and read what every model of ``ds`` shares.

    Parameters
    ----------
    ds : DatasetSpec
    cache_dir : path-like, optional
        Embedding cache.
    device : str, optional
    progress : bool, default=False
    out_dir : path-like, optional
        Where a generated SpotCheck world is saved (and reused on rerun).
    log : callable, optional
        Receives one line per step.

    Returns
    -------
    RunInputs
    """
    log = log or (lambda msg: None)
    if ds.spotcheck is not None:
        return _spotcheck_inputs(ds, out_dir, device, log)
    return _image_inputs(ds, cache_dir, device, progress, log)


# Specs, scores and the preflight live in their own modules; their names stay importable from here.
__all__ = [
    "DatasetSpec",
    "ModelSpec",
    "RunInputs",
    "Scores",
    "align_scores",
    "load_inputs",
    "model_scores",
    "preflight",
    "provenance_tau",
    "spotcheck_inputs",
    "spotcheck_relevance",
    "with_manifest_labels",
]


def _image_files(paths, hashes, ok, reals=None):
    """The embedded images as `lbee.io.images.ImageFile` (real path, digest of the bytes embedded), or ``paths``.

    ``reals``: each file's real path when it was hashed (`lbee.encoders.embedding.ImageEmbeddings.real_paths`).

    A report's thumbnails and its table's paths come from these: a folder swapped while the run worked showed
    another folder's pictures (sweep 32r). Without digests (precomputed embeddings beside images): the paths.
    """
    if paths is None or hashes is None:
        return None if paths is None else [p for p, good in zip(paths, ok) if good]
    from ..io.images import ImageFile

    reals = reals or [None] * len(paths)
    return [ImageFile(r or os.path.realpath(p), h) for p, h, r, good in zip(paths, hashes, reals, ok) if good]


def _skipped_as_given(path, why):
    """A skipped image and why, as a run's outputs record them.

    Under ``lbee serve``: the path relative to the data root, and no root in the reason (sweep 32d: explanation.json
    and the report showed the root to every reader).
    """
    from ..io.confinement import data_root

    shown, root = _as_given(path), data_root()
    if root is not None:
        for base in {str(root), str(Path(root).resolve())}:
            why = str(why).replace(base.rstrip("/") + "/", "")
    return shown, why


def _as_given(path):
    """A path as a run's outputs record it: relative to the data root under ``lbee serve``, else as given.

    A service's answers show no server path.
    """
    from ..io.confinement import data_root, inside

    root = data_root()
    if root is not None and inside(Path(path).resolve(), Path(root).resolve()):
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    return str(path)
