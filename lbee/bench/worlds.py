"""Synthetic attribute worlds from any grammar, with planted failures and their confounders.

The SpotCheck bench is the paper's yardstick; these worlds are the describers' development yardstick in any
domain. A world draws, for n images, a value of every attribute of a grammar
([`lbee.grammar.load_grammar`][lbee.grammar.load_grammar])
with a dependence structure, plants failures of 2–4 literals (absences among them) that cover 2–10 % of the
images, gives most failures a *confounder* (a literal outside the failure that holds for ~90 % of its images
against its base rate elsewhere), and a model that is wrong on 90 % of a failure's images and on 3 % of the rest
(label noise). Embeddings come from `lbee.bench.simulated_encoder.SimulatedEncoder`; scoring from
`lbee.bench.world_bench`.

>>> from lbee.bench.worlds import make_world
>>> world = make_world("street_scenes", n=2000, random_state=0)
>>> world.failures[0]                                          # doctest: +SKIP
{('pedestrian', 'distance'): 'far', ('cyclist', 'presence'): 'true'}
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..grammar import FALSE, PRESENCE, TRUE, load_grammar

#: Not applicable: the value of an attribute whose subject is absent (or whose ``requires`` does not hold).
NA = ""
#: The model's error rate inside a failure and outside every failure (label noise).
ERROR_INSIDE, ERROR_OUTSIDE = 0.90, 0.03
#: A failure covers this share of the images (the planted region; SpotCheck-like sizes).
COVERAGE = (0.02, 0.10)
#: Beta parameters of the true class's probability where the model is right and where it is wrong.
CONFIDENCE_RIGHT, CONFIDENCE_WRONG = (10.0, 1.5), (1.5, 4.0)
#: A confounder holds for this share of a failure's images.
CONFOUNDER_INSIDE = 0.90
#: Literals a world's grammar may have: the simulated encoder fits one direction and one noise level per literal,
#: so its cost grows with their number (the shipped families have 31-43; a 6 kB grammar of aliases declared 14,400).
MAX_WORLD_LITERALS = 500


@dataclass
class AttributeWorld:
    """n images of a grammar's world: their attributes, the planted failures and the model's correctness.

    Attributes
    ----------
    grammar : lbee.grammar.Grammar
    values : dict of (str, str) to ndarray of str, shape (n,)
        Each key's value per image (`NA` where it does not apply); presences are 'true' / 'false'.
    failures : list of dict
        The planted failures' canonical conditions ``{(subject, attribute): value}``.
    confounders : list of ((str, str), str) or None
        Each failure's confounder literal.
    correct : ndarray of bool, shape (n,)
        Whether the model is right on the image.
    confidence : ndarray of shape (n,)
        The model's probability of the true class (what ``--confidence-from true_class`` reads).
    random_state : int
    """

    grammar: object
    values: dict
    failures: list
    confounders: list
    correct: np.ndarray
    confidence: np.ndarray
    random_state: int
    notes: list = field(default_factory=list)

    def __post_init__(self):
        self.values = _checked_values(self.grammar, self.values, len(self.correct))

    @property
    def n(self):
        return len(self.correct)

    def holds(self, conditions):
        """Whether each image satisfies ``conditions`` (and what they presuppose): ndarray of bool, shape (n,)."""
        out = np.ones(self.n, bool)
        for key, value in self.grammar.implied(conditions).items():
            out &= self.values[key] == value
        return out

    def failure_masks(self):
        """Each failure's images: ndarray of bool, shape (n, n_failures)."""
        return np.stack([self.holds(f) for f in self.failures], axis=1)

    def literal_holds(self, key, value):
        return self.values[key] == value


def _checked_values(grammar, values, n):
    """``values`` checked against ``grammar``'s keys: n values each, from the key's values or `NA`.

    A subject the grammar never denies may have no presence column (a blood cell in every smear, trial 28): it is
    in every image, as the grammar says, its blank attributes NA (sweep 32aq B1: a row whose attributes were all
    blank was taken as one without it, the contradiction a 'false' in its presence column is refused for).
    """
    out = dict(values)
    for key, allowed in grammar.keys():
        column = f"{key[0]}.{key[1]}"
        if key not in values:
            subject = grammar.subject(key[0])
            if key[1] != PRESENCE or subject.deniable:
                raise ValueError(
                    f"the attribute table has no column {column!r}; expected one per key of the grammar, holding "
                    f"{', '.join(map(repr, (*allowed, *((FALSE,) if key[1] == PRESENCE else ()))))} or NA ('') "
                    "per image"
                )
            out[key] = np.full(n, TRUE)
            continue
        v = np.asarray(values[key])
        # pandas reads a column of true / false as booleans
        v = np.where(v, TRUE, FALSE) if v.dtype == bool else v.astype(str)
        if v.shape != (n,):
            raise ValueError(f"column {column!r} has shape {v.shape}; expected one value per image, ({n},)")
        # a presence holds the grammar's own values: 'false' only for a subject it may deny (sweep 32ap B2: a
        # smear's cell said absent was dropped from Γ with its type and focus)
        ok = set(allowed) if key[1] == PRESENCE else set(allowed) | {NA}
        bad = np.flatnonzero(~np.isin(v, sorted(ok)))
        if len(bad):
            never = key[1] == PRESENCE and v[bad[0]] == FALSE
            import difflib

            near = difflib.get_close_matches(str(v[bad[0]]).lower(), sorted(ok - {NA}), 1, 0.75)
            hint = f" Did you mean {near[0]!r}?" if near else ""  # 'speckeld' (trial 36)
            raise ValueError(
                f"column {column!r}, row {bad[0] + 1}: {str(v[bad[0]])!r} is none of the grammar's values "
                f"({', '.join(map(repr, sorted(ok)))}"
                + (
                    f"; the grammar never says a {grammar.subject(key[0]).noun} is absent)"
                    if never
                    else ("; a presence is never NA: '' is refused)" if key[1] == PRESENCE else "; NA is '')")
                )
                + hint
            )
        out[key] = v
    for key, _ in grammar.keys():  # a value where the row's own columns say the key does not apply
        said = np.flatnonzero((out[key] != NA) & ~_applicable(out, grammar, key, np.arange(n)))
        if len(said):
            raise ValueError(
                f"column {f'{key[0]}.{key[1]}'!r}, row {said[0] + 1}: {str(out[key][said[0]])!r} for "
                f"{_inapplicable(out, grammar, key, said[0])}; leave the cell empty (NA) or correct that column"
            )
    return out


def _inapplicable(values, grammar, key, i):
    """Why ``key`` does not apply to image ``i`` (what `_applicable` found false), in words."""
    s = grammar.subject(key[0])
    if values[(key[0], PRESENCE)][i] != TRUE:
        return f"a {s.noun} the row says is absent ({key[0]}.{PRESENCE} is {str(values[(key[0], PRESENCE)][i])!r})"
    rs, ra, rv = next(r for r in s.attribute(key[1]).requires if values[(r[0], r[1])][i] != r[2])
    return f"a {s.noun} whose {rs}.{ra} is {str(values[(rs, ra)][i])!r}, where the grammar gives it only with {rv!r}"


def _applicable(values, grammar, key, rows):
    """Whether ``key`` applies to each image of ``rows`` (its subject present, what it requires holds)."""
    subject, attribute = key
    s = grammar.subject(subject)
    ok = np.ones(len(rows), bool)
    if attribute == PRESENCE or s.setting:
        return ok
    ok &= values[(subject, PRESENCE)][rows] == TRUE
    for rs, ra, rv in s.attribute(attribute).requires:
        ok &= values[(rs, ra)][rows] == rv
    return ok


class _Sampler:
    """Draws attribute values with a dependence structure: some keys' distributions depend on an earlier key."""

    def __init__(self, grammar, rng):
        self.grammar, self.rng = grammar, rng
        self.keys = grammar.keys()
        self.dist = {}
        for pos, (key, vals) in enumerate(self.keys):
            if key[1] == PRESENCE:
                base = np.array([1.0]) if len(vals) == 1 else np.array([p := rng.uniform(0.35, 0.65), 1 - p])
            else:
                base = rng.dirichlet(np.full(len(vals), 3.0))
            parent = None
            if pos > 0 and rng.random() < 0.4:  # "rain makes wet roads": depends on an earlier key
                parent = int(rng.integers(0, pos))
            cond = None
            if parent is not None and len(vals) > 1:
                pvals = self.keys[parent][1]
                cond = {pv: 0.4 * base + 0.6 * rng.dirichlet(np.full(len(vals), 0.7)) for pv in pvals}
            self.dist[key] = (vals, base, parent, cond)

    def draw(self, key, parent_values):
        """Values of ``key`` for images whose parent key has ``parent_values`` (None: no parent)."""
        vals, base, parent, cond = self.dist[key]
        m = len(parent_values)
        out = np.empty(m, dtype=object)
        groups = [(None, np.arange(m))] if cond is None else [(pv, np.flatnonzero(parent_values == pv)) for pv in cond]
        if cond is not None:  # a parent that does not apply: the base distribution
            groups.append((None, np.flatnonzero(~np.isin(parent_values, list(cond)))))
        for pv, idx in groups:
            p = base if pv is None else cond[pv]
            out[idx] = np.asarray(vals, dtype=object)[self.rng.choice(len(vals), len(idx), p=p)]
        return out

    def _parent_values(self, values, key, rows):
        parent = self.dist[key][2]
        return values[self.keys[parent][0]][rows] if parent is not None else np.full(len(rows), None, dtype=object)

    def sample(self, n):
        values = {key: np.full(n, NA, dtype=object) for key, _ in self.keys}
        rows = np.arange(n)
        for key, _ in self.keys:
            values[key][:] = self.draw(key, self._parent_values(values, key, rows))
        self.fix(values, rows)
        return values

    def fix(self, values, rows):
        """Blank what does not apply and fill what newly applies, in grammar order (presences come first)."""
        rows = np.asarray(rows, dtype=np.int64)
        for key, _ in self.keys:
            ok = _applicable(values, self.grammar, key, rows)
            values[key][rows[~ok]] = NA
            fill = rows[ok & (values[key][rows] == NA)]
            if len(fill):
                values[key][fill] = self.draw(key, self._parent_values(values, key, fill))

    def force(self, values, i, conditions):
        """Make image ``i`` satisfy ``conditions`` (what they presuppose included), keeping the rest consistent."""
        for key, value in self.grammar.implied(conditions).items():
            values[key][i] = value
        self.fix(values, [i])


def _random_failure(world_values, grammar, rng, size):
    """``size`` literals true of one random image: a satisfiable conjunction that the world can hold."""
    n = len(next(iter(world_values.values())))
    i = int(rng.integers(0, n))
    keys = [k for k, vals in grammar.keys() if world_values[k][i] != NA and not (k[1] == PRESENCE and len(vals) == 1)]
    if len(keys) < size:
        return None
    picked = [keys[j] for j in rng.choice(len(keys), size, replace=False)]
    cond = {k: world_values[k][i] for k in picked}
    if any(k[1] == PRESENCE and cond[k] == TRUE for k in picked) and rng.random() < 0.5:
        return None  # prefer values and absences to bare presences (they are what encoders blur)
    if grammar.contradiction(grammar.implied(cond)) is not None:
        return None
    return grammar.canonical(cond)


def check_world_grammar(grammar):
    """The grammar loaded, refused when it has more than `MAX_WORLD_LITERALS` literals (before any world is made)."""
    g = load_grammar(grammar)
    n = len(g.atoms())
    if n > MAX_WORLD_LITERALS:
        raise ValueError(
            f"grammar {g.name!r} has {n:,} literals; a world's grammar has at most {MAX_WORLD_LITERALS} "
            "(MAX_WORLD_LITERALS: the simulated encoder's fit grows with them)."
        )
    return g


def make_world(grammar, *, n=10_000, n_failures=2, confounded=0.8, random_state=0):
    """A synthetic world of ``grammar`` with planted failures (the module docstring).

    Parameters
    ----------
    grammar : Grammar, str or path
        A grammar or a built-in grammar's name.
    n : int, default=10000
    n_failures : int, default=2
    confounded : float, default=0.8
        The share of failures given a confounder.
    random_state : int, default=0

    Returns
    -------
    AttributeWorld
    """
    g = check_world_grammar(grammar)
    rng = np.random.default_rng(random_state)
    sampler = _Sampler(g, rng)
    values = sampler.sample(n)
    notes = []
    failures, masks = [], []
    tries = 0
    while len(failures) < n_failures:
        tries += 1
        if tries > 2000:
            raise ValueError(f"grammar {g.name!r}: could not plant {n_failures} distinct failures in {n} images.")
        cond = _random_failure(values, g, rng, int(rng.integers(2, 5)))
        if cond is None or len(cond) < 2 or any(set(cond) & set(f) for f in failures):
            continue
        target = rng.uniform(0.03, 0.08)
        mask = np.all([values[k] == v for k, v in g.implied(cond).items()], axis=0)
        if mask.mean() > COVERAGE[1]:
            continue
        others = np.any(masks, axis=0) if masks else np.zeros(n, bool)
        free = np.flatnonzero(~mask & ~others)
        need = int(round(target * n)) - int(mask.sum())
        if need > 0:  # enrich: make images of no other failure satisfy it
            for i in rng.choice(free, min(need, len(free)), replace=False):
                sampler.force(values, int(i), cond)
        mask = np.all([values[k] == v for k, v in g.implied(cond).items()], axis=0)
        if any((mask & m).sum() > 0.2 * min(mask.sum(), m.sum()) for m in masks):
            continue
        if not all(np.all([values[k] == v for k, v in g.implied(f).items()], axis=0).any() for f in failures):
            continue
        failures.append(cond)
        masks.append(mask)
    confounders = []
    for f in failures:
        conf = None
        if rng.random() < confounded:
            conf = _plant_confounder(values, g, sampler, f, failures, rng)
        confounders.append(conf)
    fail = np.stack([np.all([values[k] == v for k, v in g.implied(f).items()], axis=0) for f in failures], 1)
    inside = fail.any(axis=1)
    wrong = rng.random(n) < np.where(inside, ERROR_INSIDE, ERROR_OUTSIDE)
    # the true class's probability of a well-trained classifier: mostly near 1 when right (mean 0.87), low when
    # wrong (mean 0.27); the split at μ − aσ still takes the least confident right images into the hard side
    confidence = np.where(wrong, rng.beta(*CONFIDENCE_WRONG, n), rng.beta(*CONFIDENCE_RIGHT, n))
    for j, f in enumerate(failures):
        notes.append(f"failure {j}: {g.render(f)} ({fail[:, j].mean():.1%} of the images)")
    return AttributeWorld(g, values, failures, confounders, ~wrong, confidence, int(random_state), notes)


def _plant_confounder(values, grammar, sampler, failure, failures, rng):
    """Make a literal outside every failure hold for ~90 % of ``failure``'s images; returns it (or None)."""
    mask = np.all([values[k] == v for k, v in grammar.implied(failure).items()], axis=0)
    used = {k for f in failures for k in grammar.implied(f)}
    options = []
    for key, vals in grammar.keys():
        if key in used or (key[1] == PRESENCE and len(vals) == 1):
            continue
        s = grammar.subject(key[0])
        if key[1] != PRESENCE and not (s.setting or not s.deniable) or _requires(s, key[1]):
            continue  # presences and the values of what is always there: forcing them changes nothing else
        for v in vals:
            if key[1] == PRESENCE and v == FALSE:
                continue
            rate = (values[key] == v).mean()
            if 0.15 <= rate <= 0.65:
                options.append((key, v))
    if not options:
        return None
    key, v = options[int(rng.integers(0, len(options)))]
    rows = np.flatnonzero(mask & (values[key] != v))
    for i in rows[rng.random(len(rows)) < CONFOUNDER_INSIDE]:
        sampler.force(values, int(i), {key: v})
    return (key, v)


def _requires(subject, attribute):
    a = subject.attribute(attribute) if attribute != PRESENCE else None
    return bool(a is not None and a.requires)
