"""A simulated image–text encoder for attribute worlds: a chosen quality, and the faults real encoders have.

Every literal a grammar can state gets a random direction in R^d. An image's embedding is the sum of the
directions of the literals it holds, plus nuisance directions (what varies in every photo and no sentence
states) and isotropic noise whose scale sets the quality: `SimulatedEncoder.fit_quality` finds the
noise that gives a target median atom ROC-AUC (0.75 is CLIP-like on fine attributes, 0.99 a near-perfect
encoder). The faults, each with its own weight:

- **binding leaks**: values said with the same words share a word direction ("red" of a car and of a traffic
  light), so "a red car" also fires on a red traffic light;
- **hypernyms**: subjects come in pairs that share a direction ("a person" for a cyclist), so each one's
  presence fires on the other;
- **presence that depends on attributes**: one value of each subject (a distant pedestrian) weakens the
  subject's presence signal;
- **nuisance directions** of large variance that no sentence states;
- **weak negation**: "no X" is embedded close to X, as caption-trained encoders do.

Sentences of any conjunction are embedded (the prototype describers need every generated sentence); 'compose'
reads only the atoms (`lbee.grammar.embedded_atoms`).
"""

from __future__ import annotations

import numpy as np

from ..grammar import FALSE, PRESENCE, TRUE, embedded_atoms

#: The fault weights (see the module docstring), the defaults of `SimulatedEncoder`.
FAULTS = {"leak": 0.5, "hypernym": 0.5, "weak_presence": 0.45, "nuisance": 0.8, "negation": 0.6}


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


class SimulatedEncoder:
    """Embeds an `AttributeWorld`'s images and its grammar's sentences.

    Parameters
    ----------
    grammar : lbee.grammar.Grammar
    dim : int, default=256
    n_nuisance : int, default=8
    random_state : int, default=0
    **faults : float
        Overrides of `FAULTS`.

    Attributes
    ----------
    noise : float
        The isotropic noise's scale (std of its projection on any unit direction); set by `fit_quality`.
    """

    def __init__(self, grammar, *, dim=256, n_nuisance=8, random_state=0, **faults):
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}; expected some of {sorted(FAULTS)}.")
        self.grammar, self.dim, self.faults = grammar, int(dim), {**FAULTS, **faults}
        rng = np.random.default_rng(random_state)
        self._rng_seed = int(rng.integers(2**32))
        self.u = {}  # (key, value) -> direction of the literal itself
        self.strength = {}  # how strongly images show it: some attributes are easy to see, some hard
        for key, vals in grammar.keys():
            for v in vals:
                if not (key[1] == PRESENCE and v == FALSE):
                    self.u[(key, v)] = _unit(rng.normal(size=dim))
                    self.strength[(key, v)] = rng.uniform(0.6, 1.4)
        words = {}  # a value's words -> a direction shared by every subject said to have them
        for s in grammar.subjects:
            for a in s.attributes:
                for w in a.values.values():
                    words.setdefault(w.casefold(), _unit(rng.normal(size=dim)))
        self.word = words
        subjects = [s.id for s in grammar.subjects if not s.setting and s.deniable]
        order = list(rng.permutation(subjects))
        self.group = {}  # subject -> the direction it shares with its pair
        for i in range(0, len(order) - 1, 2):
            h = _unit(rng.normal(size=dim))
            self.group[order[i]] = self.group[order[i + 1]] = h
        self.weak = {}  # subject -> (attribute, value) that weakens its presence
        for s in grammar.subjects:
            if not s.setting and s.attributes:
                a = s.attributes[int(rng.integers(0, len(s.attributes)))]
                self.weak[s.id] = (a.id, list(a.values)[int(rng.integers(0, len(a.values)))])
        self.negation = _unit(rng.normal(size=dim))
        self.lead = _unit(rng.normal(size=dim))
        self.nuisance = _unit(rng.normal(size=(n_nuisance, dim)))
        self.noise = 1.0

    # ---- the image side ------------------------------------------------------------------------------------
    def _literal_image_vector(self, key, value):
        subject, attribute = key
        s = self.grammar.subject(subject)
        vec = self.u[(key, value)].copy()
        if attribute == PRESENCE:
            if subject in self.group:
                vec += self.faults["hypernym"] * self.group[subject]
        else:
            vec += self.faults["leak"] * self.word[s.attribute(attribute).values[value].casefold()]
        return vec

    def signal(self, world):
        """The noiseless embeddings: ndarray of shape (n, dim)."""
        x = np.zeros((world.n, self.dim))
        for (key, value), _ in self.u.items():
            holds = world.values[key] == value
            if not holds.any():
                continue
            amp = holds.astype(float)
            if key[1] == PRESENCE and key[0] in self.weak:
                attr, weak_value = self.weak[key[0]]
                amp[world.values[(key[0], attr)] == weak_value] *= self.faults["weak_presence"]
            elif key[1] != PRESENCE:
                amp *= 0.8
            x += np.outer(amp * self.strength[(key, value)], self._literal_image_vector(key, value))
        return x

    def _draws(self, n):
        rng = np.random.default_rng(self._rng_seed + n)  # the same draws at every noise level (monotone quality)
        return rng.normal(size=(n, len(self.nuisance))), rng.normal(size=(n, self.dim))

    def embed_images(self, world, *, noise=None, signal=None):
        """Unit float32 image embeddings, ndarray of shape (n, dim)."""
        base = self.signal(world) if signal is None else signal
        z, eps = self._draws(world.n)
        x = base + self.faults["nuisance"] * z @ self.nuisance + (self.noise if noise is None else noise) * eps
        return _unit(x).astype(np.float32)

    # ---- the text side -------------------------------------------------------------------------------------
    def _literal_text_vector(self, key, value):
        subject, attribute = key
        s = self.grammar.subject(subject)
        if attribute == PRESENCE:
            present = self.u[(key, TRUE)] + self.faults["hypernym"] * self.group.get(subject, 0.0)
            if value == FALSE:  # weak negation: "no X" lies near X
                return _unit(_unit(present) + self.faults["negation"] * self.negation)
            return _unit(present)
        vec = self.u[(key, value)] + self.faults["leak"] * self.word[s.attribute(attribute).values[value].casefold()]
        if not s.setting and (subject, PRESENCE) in dict(self.grammar.keys()):
            vec = vec + 0.6 * self.u[((subject, PRESENCE), TRUE)]
        return _unit(vec)

    def embed_sentences(self, conditions):
        """Unit float32 embeddings of the sentences of ``conditions`` (a list of conjunctions), shape (N, dim)."""
        out = np.empty((len(conditions), self.dim))
        for j, c in enumerate(conditions):
            out[j] = sum((self._literal_text_vector(k, v) for k, v in c.items()), 0.5 * self.lead)
        return _unit(out).astype(np.float32)

    # ---- quality -------------------------------------------------------------------------------------------
    def atom_auc(self, world, image_embeddings=None):
        """Each embedded atom's ROC-AUC (its similarity against whether it holds), ndarray of shape (A,)."""
        from scipy.stats import rankdata

        _, conds = embedded_atoms(self.grammar)
        x = self.embed_images(world) if image_embeddings is None else image_embeddings
        sims = x @ self.embed_sentences(conds).T
        truth = np.stack([world.holds(c) for c in conds], axis=1)
        ranks = rankdata(sims, axis=0)
        pos = truth.sum(0)
        neg = len(truth) - pos
        with np.errstate(invalid="ignore", divide="ignore"):
            auc = ((ranks * truth).sum(0) - pos * (pos + 1) / 2) / (pos * neg)
        return auc  # NaN for an atom that holds for every image or for none

    def fit_quality(self, world, median_auc, *, tol=0.002):
        """Set `noise` so that the median atom ROC-AUC on ``world`` is ``median_auc``. Returns self."""
        if not 0.5 < median_auc < 1:
            raise ValueError(f"`median_auc` must lie in (0.5, 1); received {median_auc!r}.")
        base = self.signal(world)
        lo, hi = np.log(1e-3), np.log(20.0)
        for _ in range(40):
            mid = (lo + hi) / 2
            q = np.nanmedian(self.atom_auc(world, self.embed_images(world, noise=np.exp(mid), signal=base)))
            if abs(q - median_auc) < tol:
                break
            lo, hi = (mid, hi) if q > median_auc else (lo, mid)
        self.noise = float(np.exp(mid))
        return self

    def default_tau(self, world, image_embeddings=None):
        """A relevance threshold for this encoder: the median over atoms of the midpoint of its two classes."""
        _, conds = embedded_atoms(self.grammar)
        x = self.embed_images(world) if image_embeddings is None else image_embeddings
        sims = x @ self.embed_sentences(conds).T
        mids = []
        for j, c in enumerate(conds):
            t = world.holds(c)
            if t.any() and (~t).any():
                mids.append((sims[t, j].mean() + sims[~t, j].mean()) / 2)
        return float(np.median(mids))
