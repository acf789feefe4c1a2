"""Attribute grammars: atoms, their conjunctions, and one fluent English sentence per conjunction.

A grammar declares *subjects* (things an image may contain: "a square",
"a pedestrian"), *settings* (what every image has: "a background", "the
road"), and on each, *attributes* with their values and the words that say
them. An **atom** (a literal) is one ``(subject, attribute, value)``; a
subject's presence is the attribute ``"presence"`` with the values ``"true"``
and ``"false"`` (the phrase that denies it: "no circle"). A **conjunction** is
a dict ``{(subject, attribute): value}`` — exactly the condition dicts of the
SpotCheck world, so Γ of a grammar sentence on a SpotCheck render is exact.

Rendering puts the positive subjects first ("a large blue square and text"),
the denied ones after "but no" ("but no circle"), then the settings and
clauses ("on a noisy background", "where the square is above the center").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import combinations

#: A condition's key: ``(subject, attribute)``.
Key = tuple[str, str]
#: A conjunction: ``{(subject, attribute): value}``.
Conditions = Mapping[Key, str]

PRESENCE = "presence"
TRUE, FALSE = "true", "false"
#: How an attribute's word enters the sentence.
ATTRIBUTE_KINDS = ("adjective", "determiner", "noun", "clause")


@dataclass(frozen=True)
class Attribute:
    """One attribute of a subject: its values and the words that say them.

    ``kind`` 'adjective' puts the word before the noun ("a *striped* square"),
    'determiner' replaces the article ("*two* squares"; values in ``plural``
    take the plural noun), 'noun' replaces the noun ("a photo of a *dog*"),
    'clause' adds a clause after the objects ("*where the square is above the
    center*"). ``requires`` lists literals the attribute presupposes (a clause
    about the square needs a square).
    """

    id: str
    values: dict
    kind: str = "adjective"
    plural: tuple = ()
    requires: tuple = ()
    line: int = 0


@dataclass(frozen=True)
class Subject:
    """A thing in the image (``setting=False``: may be absent) or a part of every image (``setting=True``)."""

    id: str
    noun: str
    article: str = "a"
    plural_noun: str = ""
    bare: str = ""
    preposition: str = ""
    deniable: bool = False
    setting: bool = False
    attributes: tuple = ()
    line: int = 0

    @cached_property
    def _attributes_by_id(self) -> dict[str, Attribute]:
        by_id: dict[str, Attribute] = {}
        for a in self.attributes:
            by_id.setdefault(a.id, a)
        return by_id

    def attribute(self, name: str) -> Attribute | None:
        # looked up, not scanned: a chain of N 'requires' cost N² a sentence (a 680 KB grammar: 154 s for 20)
        return self._attributes_by_id.get(name)


@dataclass(frozen=True)
class Grammar:
    """A parsed grammar ([`lbee.grammar.load_grammar`][lbee.grammar.load_grammar]).

    Attributes
    ----------
    name : str
    lead : str
        Opens a sentence that names objects ("An image with").
    bare : str
        Opens a sentence that names only settings or clauses ("An image").
    subjects : tuple of Subject
        In rendering order; settings included.
    max_conditions : int
        The default of [`generate`][lbee.grammar.generate].
    source : str
        The file it was read from.
    """

    name: str
    lead: str
    bare: str
    subjects: tuple
    max_conditions: int = 2
    description: str = ""
    source: str = "<grammar>"
    digest: str = ""
    _index: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self._index.update({s.id: s for s in self.subjects})

    def subject(self, name: str) -> Subject | None:
        return self._index.get(name)

    # ---- atoms ---------------------------------------------------------------------------------------------
    def keys(self):
        """Every ``(subject, attribute)`` with its values, in grammar order: list of ((str, str), tuple of str)."""
        out = []
        for s in self.subjects:
            if s.deniable:
                out.append(((s.id, PRESENCE), (TRUE, FALSE)))
            elif not s.setting:
                out.append(((s.id, PRESENCE), (TRUE,)))
            for a in s.attributes:
                out.append(((s.id, a.id), tuple(a.values)))
        return out

    def atoms(self):
        """Every literal ``(subject, attribute, value)`` (presence ``'false'`` for deniable subjects)."""
        return [(k[0], k[1], v) for k, values in self.keys() for v in values]

    # ---- conjunctions --------------------------------------------------------------------------------------
    def implied(self, conditions: Conditions) -> dict[Key, str]:
        """``conditions`` plus all they presuppose, transitively (an attribute of X implies X present; ``requires``).

        A condition implied by another's ``requires`` brings its own presuppositions too (a chain of any length),
        so [`contradiction`][lbee.grammar.Grammar.contradiction] of the result sees every literal the conjunction
        commits to.
        """
        out = dict(conditions)
        todo = list(conditions)
        while todo:  # each key enters ``out`` once, so this ends after at most all the grammar's keys
            subj, attr = todo.pop()
            s = self.subject(subj)
            if s is None or attr == PRESENCE:
                continue
            a = s.attribute(attr)
            needs = [] if s.setting else [(subj, PRESENCE, TRUE)]
            for rs, ra, rv in [*needs, *(a.requires if a is not None else ())]:
                if (rs, ra) not in out:
                    out[(rs, ra)] = rv
                    todo.append((rs, ra))
        return out

    def contradiction(self, conditions: Conditions) -> str | None:
        """Why ``conditions`` can never hold together, or None."""
        for (subj, attr), value in conditions.items():
            s = self.subject(subj)
            if s is None:
                return f"unknown subject {subj!r}"
            if attr == PRESENCE:
                if value not in ((TRUE, FALSE) if s.deniable else (TRUE,)) or s.setting:
                    return f"{subj} cannot have presence {value!r}"
            else:
                found = s.attribute(attr)
                if found is None or value not in found.values:
                    return f"{subj} has no {attr} {value!r}"
        for (subj, attr), value in conditions.items():
            if attr == PRESENCE:
                continue
            s, a = self._index[subj], self._index[subj].attribute(attr)  # known: checked above
            if not s.setting and conditions.get((subj, PRESENCE)) == FALSE:
                return f"{subj} is said absent and {attr} {value}"
            for rs, ra, rv in a.requires if a is not None else ():
                if (rs, ra) in conditions and conditions[(rs, ra)] != rv:
                    return f"{subj} {attr} {value} needs {rs} {ra} {rv}"
        return None

    def canonical(self, conditions: Conditions) -> dict[Key, str]:
        """The shortest equivalent conjunction: presences implied by other conditions are dropped."""
        out = dict(conditions)
        for key in list(out):
            if key[1] == PRESENCE and out[key] == TRUE:
                rest = {k: v for k, v in out.items() if k != key}
                if self.implied(rest).get(key) == TRUE:
                    del out[key]
        return out

    # ---- rendering -----------------------------------------------------------------------------------------
    def render(self, conditions: Conditions) -> str:
        """One English sentence stating every condition of ``conditions`` (a dict (subject, attribute) -> value).

        Raises
        ------
        ValueError
            When the conditions contradict each other or name what the grammar does not have.
        """
        why = self.contradiction(conditions)
        if why is not None:
            raise ValueError(f"grammar {self.name!r}: cannot render {_show(conditions)}: {why}.")
        positives, negatives, tail, clauses = [], [], [], []
        for s in self.subjects:
            mine = {a: v for (subj, a), v in conditions.items() if subj == s.id}
            if not mine:
                continue
            if mine.get(PRESENCE) == FALSE:
                negatives.append(s.noun)
                continue
            words, det, noun, plural = [], None, s.noun, False
            for a in s.attributes:
                if a.id not in mine:
                    continue
                word = a.values[mine[a.id]]
                if a.kind == "clause":
                    clauses.append((s, word))
                elif a.kind == "determiner":
                    det, plural = word, mine[a.id] in a.plural
                elif a.kind == "noun":
                    noun = word
                else:
                    words.append(word)
            if s.setting:
                if not words and noun == s.noun:
                    continue  # only clauses of a setting were asked for
                tail.append(_noun_phrase(s, words, det, noun, plural, prefix=s.preposition))
            elif (set(mine) - {PRESENCE}) and not words and det is None and noun == s.noun and _named(s, mine):
                continue  # only clauses that name the subject: the presence they imply goes unsaid
            else:
                positives.append(_noun_phrase(s, words, det, noun, plural))
        if positives:
            text = f"{self.lead} {_join(positives, 'and')}"
            if negatives:
                text += f" but no {_join(negatives, 'or')}"
        elif negatives:
            text = f"{self.lead} no {_join(negatives, 'or')}"
        else:
            text = self.bare
        # beside another subject, a clause that does not name its own says it ("with a box and a shipping label, the
        # box partly hidden"): after the last noun it read as the label's (sweep 27)
        rest = tail + [
            f"the {s.noun} {word}" if len(positives) > 1 and not s.setting and not _says(s, word) else word
            for s, word in clauses
        ]
        if rest:
            text += (", " if positives or negatives else " ") + ", ".join(rest)
        return text

    def atom_sentence(self, subject, attribute, value):
        """The sentence of one literal ("An image with a blue square", "An image with no circle")."""
        return self.render({(subject, attribute): value})

    def phrase(self, key, value):
        """One literal in the grammar's words, without the sentence's opening ("no circle", "on a noisy background")."""
        text = self.atom_sentence(key[0], key[1], value)
        for lead in (self.lead, self.bare):
            if text.startswith(lead + " "):
                return text[len(lead) + 1 :]
        return text


def _named(subject, mine):
    """Whether a clause ``mine`` gives ``subject`` names it ("where the square is above the center").

    A clause that does not ("partly hidden behind something") is said after the subject's noun phrase, or the
    sentence would not say what is hidden (a trial's "A photo partly hidden behind a dark bar").
    """
    return any(a.kind == "clause" and a.id in mine and _says(subject, a.values[mine[a.id]]) for a in subject.attributes)


def _says(subject, words):
    """Whether ``words`` name ``subject`` (its noun, or its plural)."""
    import re

    return re.search(rf"\b{re.escape(subject.noun)}(s|es)?\b", words, re.IGNORECASE) is not None


def _noun_phrase(s, words, det, noun, plural, prefix=""):
    head = noun
    if plural:
        head = s.plural_noun if s.plural_noun and noun == s.noun else noun + "s"
    body = " ".join([*words, head])
    if det is not None:
        phrase = f"{det} {body}"
    elif not words and s.bare:
        phrase = f"{s.bare} {body}"
    elif s.article:
        phrase = f"{_article(s.article, body)} {body}"
    else:
        phrase = body
    return f"{prefix} {phrase}" if prefix else phrase


def _article(article, following):
    if article in ("a", "an"):
        return "an" if following[:1].lower() in "aeiou" else "a"
    return article


def _join(items, word):
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def _show(conditions):
    return "{" + ", ".join(f"{s}.{a}={v}" for (s, a), v in conditions.items()) + "}"


def format_conditions(conditions):
    """``'square.color=blue; circle.presence=false'``: the sidecar table's cell for one sentence."""
    return "; ".join(f"{s}.{a}={v}" for (s, a), v in conditions.items())


def parse_conditions(cell, *, source="<conditions>", line=0):
    """The inverse of [`format_conditions`][lbee.grammar.format_conditions] (an empty cell is the empty conjunction)."""
    out = {}
    for part in filter(None, (p.strip() for p in str(cell).split(";"))):
        key, eq, value = part.partition("=")
        subj, dot, attr = key.strip().partition(".")
        if not eq or not dot or not subj or not attr or not value.strip():
            raise ValueError(f"{source}, line {line}: condition {part!r} is not 'subject.attribute=value'.")
        if (subj, attr) in out:
            raise ValueError(f"{source}, line {line}: condition {subj}.{attr} is given twice.")
        out[(subj, attr.strip())] = value.strip()
    return out


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
    bound = count_conjunctions(grammar, k)
    if bound > limit:
        raise ValueError(
            f"grammar {grammar.name!r} with up to {k} conditions a sentence allows up to {bound:,} conjunctions, "
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
