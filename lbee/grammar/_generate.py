"""Sentences from a grammar: every canonical conjunction of up to ``max_conditions`` conditions, rendered."""

from __future__ import annotations

import math
from itertools import combinations

from ._grammar import FALSE, PRESENCE, Grammar, Key, _show


def count_conjunctions(grammar, max_conditions):
    """An upper bound on the conjunctions of 1..``max_conditions`` conditions (distinct keys, one value each).

    The elementary symmetric sums of the keys' value counts; computed in
    O(keys × max_conditions), so a request for 10⁸ sentences is refused before any is made.
    """
    sizes = [len(v) for _, v in grammar.keys()]
    e = [1] + [0] * max_conditions
    for m in sizes:
        for j in range(max_conditions, 0, -1):
            e[j] += e[j - 1] * m
    return sum(e[1:])


def _log10_bound(sizes: list[int], max_conditions: int, *, budget: int = 10_000_000) -> tuple[float, bool]:
    """log10 of `count_conjunctions`, in floats: the same sums in the log domain, vectorised over the sizes.

    On integers of thousands of digits the exact sums took 190 s for a 700 kB grammar of 16,000 subjects, only to
    refuse it (sweep 32ay B3). The sums go up to ``max_conditions`` while keys × conditions stays within ``budget``
    and always past the count of 30 digits: with 120,000 keys and as many conditions, the full sums took minutes
    (sweep 32az). Returns the magnitude and whether it is the whole count's (else the count is larger).
    """
    import numpy as np

    sizes = [m for m in sizes if m > 0]
    n = len(sizes)
    depth = min(max_conditions, n)
    if n * depth > budget:  # the j-condition sums are at least C(n, j): past 30 digits the count is refused anyway
        digits = (math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) for j in range(1, depth + 1))
        past = next((j for j, d in enumerate(digits, 1) if d >= 30 * math.log(10)), depth)
        depth = max(past, min(depth, budget // max(n, 1)))
    log_e = np.full(depth + 1, -np.inf)
    log_e[0] = 0.0
    for m in sizes:
        log_e[1:] = np.logaddexp(log_e[1:], log_e[:-1] + math.log(m))
    return float(np.logaddexp.reduce(log_e[1:]) / math.log(10)), depth == min(max_conditions, n)


def generate(
    grammar: Grammar, max_conditions: int | None = None, *, limit: int = 200_000
) -> tuple[list[str], list[dict[Key, str]], dict[str, int]]:
    """Every non-contradictory, canonical conjunction of 1..``max_conditions`` conditions, rendered.

    Parameters
    ----------
    grammar : Grammar
    max_conditions : int, optional
        Default ``grammar.max_conditions``.
    limit : int, default=200000
        Refuse (``ValueError``) when the upper bound of [`count_conjunctions`][lbee.grammar.count_conjunctions] exceeds
        it.

    Returns
    -------
    sentences : list of str
    conditions : list of dict
        Each sentence's conjunction (canonical: presences implied by an attribute are left out).
    stats : dict
        ``considered`` (conjunctions tried), ``contradictory``, ``duplicates`` and ``kept``.

    Raises
    ------
    ValueError
        When two different conjunctions render the same sentence (case and spacing aside): a sentence file
        holds each sentence once, so the grammar must say them differently.
    """
    k = grammar.max_conditions if max_conditions is None else max_conditions
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"`max_conditions` must be a positive integer; received {k!r}.")
    keys = grammar.keys()
    if k > len(keys):
        raise ValueError(
            f"`max_conditions`={k} is larger than the {len(keys)} attributes (presence included) of "
            f"grammar {grammar.name!r}: a conjunction gives each attribute at most one value. Use "
            f"{len(keys)} or less (`lbee sentences generate --max-conditions`, or the grammar's max_conditions)."
        )
    magnitude, whole = _log10_bound([len(v) for _, v in keys], k)  # exact below 30 digits (cheap), else its size
    bound = count_conjunctions(grammar, k) if magnitude < 29 and whole else None
    if bound is None or bound > limit:
        count = f"up to {_count(bound) if bound is not None else f'about 10^{int(magnitude):,}'}"
        count = count if whole else f"more than 10^{int(magnitude):,}"
        raise ValueError(
            f"grammar {grammar.name!r} with up to {k} conditions a sentence allows {count} conjunctions, "
            f"over the limit of {limit:,} sentences to enumerate; allow fewer conditions (`lbee sentences generate "
            "--max-conditions`, or the grammar's max_conditions); the 'compose' describer searches longer "
            "conjunctions without enumerating them."
        )
    seen: set[frozenset[tuple[Key, str]]] = set()
    texts: dict[str, dict[Key, str]] = {}
    sentences: list[str] = []
    conds: list[dict[Key, str]] = []
    stats = {"considered": 0, "contradictory": 0, "duplicates": 0}
    for size in range(1, k + 1):
        for combo in combinations(keys, size):
            for values in _product([v for _, v in combo]):
                stats["considered"] += 1
                c = {key: val for (key, _), val in zip(combo, values)}
                if grammar.contradiction(grammar.implied(c)) is not None:
                    stats["contradictory"] += 1
                    continue
                c = grammar.canonical(c)
                sig = frozenset(c.items())
                if sig in seen:
                    stats["duplicates"] += 1
                    continue
                seen.add(sig)
                text = grammar.render(c)
                said = texts.setdefault(" ".join(text.split()).casefold(), c)
                if said is not c:  # a sentence file holds each sentence once: two conjunctions, one text
                    raise ValueError(
                        f"grammar {grammar.name!r}: conditions {_show(said)} and {_show(c)} are both said "
                        f"{text!r}; give their values different words."
                    )
                sentences.append(text)
                conds.append(c)
    stats["kept"] = len(sentences)
    return sentences, conds, stats


def _product(lists):
    if not lists:
        yield ()
        return
    for v in lists[0]:
        for rest in _product(lists[1:]):
            yield (v, *rest)


def embedded_atoms(grammar: Grammar) -> tuple[list[str], list[dict[Key, str]]]:
    """The sentences whose embeddings the 'compose' describer reads, in the order `generate` lists them.

    One per literal that states a presence or a value ("An image with a circle", "An image with a blue
    square"); "no X" is never embedded (it is composed as 1 − P(X)), nor is any conjunction (a product of
    its literals). Embedding these rows alone is enough for ``lbee.explain(..., method="compose",
    grammar=grammar)``; they are also the single-condition rows of ``generate(grammar)``, in the same order.

    Returns
    -------
    sentences : list of str
    conditions : list of dict
        Each sentence's one condition ``{(subject, attribute): value}``.
    """
    sentences, conds, _ = generate(grammar, 1)
    keep = [i for i, c in enumerate(conds) if not any(a == PRESENCE and v == FALSE for (_, a), v in c.items())]
    return [sentences[i] for i in keep], [conds[i] for i in keep]


def _count(n: int) -> str:
    """``n`` with thousands separators, or its order of magnitude past 30 digits (a 2,300-digit count: sweep 32ax)."""
    if n < 10**30:
        return f"{n:,}"
    return f"about 10^{int(n.bit_length() * math.log10(2)):,}"
