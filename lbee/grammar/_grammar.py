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

from ._words import _says, _word_key

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
    _order: dict = field(default_factory=dict, repr=False, compare=False)  # a subject's place in rendering order
    _saying: dict = field(default_factory=dict, repr=False, compare=False)  # a clause's words -> subjects they name
    _nouns: dict = field(default_factory=dict, repr=False, compare=False)  # a noun's words -> its subjects

    def __post_init__(self):
        self._index.update({s.id: s for s in self.subjects})
        self._order.update({s.id: i for i, s in enumerate(self.subjects)})

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
        """The shortest equivalent conjunction: conditions implied by the others are dropped.

        A presence an attribute implies, and a value, presence or absence another's ``requires`` implies ("open
        water" beside "where the water is a lake"): two conjunctions of the same images have one canonical form (a
        trial's grammar generated both). [`render`][lbee.grammar.Grammar.render] says what a ``requires`` implies.
        """
        out = dict(conditions)
        for key in list(out):
            rest = {k: v for k, v in out.items() if k != key}
            if self.implied(rest).get(key) == out[key]:  # a presence, absence or value the others imply
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
        # what a `requires` implies is said ("open water, where the water is a lake", not "land, where ..."; "a torn
        # box but no label"), but not a presence a subject's own attribute says ("a blue square")
        implied = self.implied(conditions)
        described = {k[0] for k in implied if k[1] != PRESENCE}
        words = [a.values[v] for (subj, attr), v in implied.items() if (a := self._clause(subj, attr)) is not None]
        for w in words:  # "where the square is ..."
            if w not in self._saying:  # once per clause's words: never every subject for every sentence (sweep 32az)
                self._saying[w] = frozenset(s.id for s in self._may_say(w) if _says(s, w))
            described |= self._saying[w]
        said = {k: v for k, v in implied.items() if not (k[1] == PRESENCE and v == TRUE and k[0] in described)}
        conditions = {**said, **conditions}
        positives, negatives, tail, clauses = [], [], [], []
        by_subject: dict[str, dict[str, str]] = {}
        for (subj, a), v in conditions.items():
            by_subject.setdefault(subj, {})[a] = v
        for s in sorted((self._index[x] for x in by_subject), key=lambda s: self._order[s.id]):  # in grammar order
            mine = by_subject[s.id]
            if mine.get(PRESENCE) == FALSE:
                negatives.append(s.noun)
                continue
            words, det, noun, plural = [], None, s.noun, False
            for a in s.attributes:
                if a.id not in mine:
                    continue
                word = a.values[mine[a.id]]
                if a.kind == "clause":
                    clauses.append((s, word, mine))
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
            f"the {_noun(s, mine)} {word}"
            if len(positives) > 1 and not s.setting and not _says(s, word, _noun(s, mine))
            else word
            for s, word, mine in clauses
        ]
        if rest:
            text += (", " if positives or negatives else " ") + ", ".join(rest)
        return text

    def _may_say(self, words):
        """The subjects whose noun ``words`` may say (`_says` decides): found by the words, not by every subject.

        A grammar of 2,000 subjects each with a clause of its own tried every subject for every clause: 250 s
        (sweep 32ba). A noun is looked up by its words as `_says` compares them (`_word_key`), a last word also
        without a plural's 's' or 'es'; only a noun without a letter or digit (no grammar file has one) is always
        tried.
        """
        if not self._nouns:
            for s in self.subjects:
                self._nouns.setdefault(_word_key(s.noun) or None, []).append(s)
        tokens = _word_key(words)
        found = list(self._nouns.get(None, ()))
        for size in {len(k) for k in self._nouns if k is not None}:
            for i in range(len(tokens) - size + 1):
                window = tokens[i : i + size]
                last = window[-1]
                for end in (
                    last,
                    last[:-1] if last.endswith("s") else None,
                    last[:-2] if last.endswith("es") else None,
                ):
                    if end:
                        found += self._nouns.get((*window[:-1], end), ())
        return list({s.id: s for s in found}.values())  # each once

    def _clause(self, subject, attribute):
        """The attribute ``subject.attribute`` when it is a clause, else None."""
        s = self.subject(subject)
        a = None if s is None or attribute == PRESENCE else s.attribute(attribute)
        return a if a is not None and a.kind == "clause" else None

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
    sentence would not say what is hidden (a trial's "A photo partly hidden behind a dark bar"). Naming it is
    saying it as the clause's subject: "partly hidden behind another product" names another product, not its own
    (trial 27: "A shelf photo partly hidden behind another product").
    """
    return any(
        a.kind == "clause" and a.id in mine and _says(subject, a.values[mine[a.id]], definite=True)
        for a in subject.attributes
    )


def _noun(subject, mine):
    """The noun ``subject`` is said with under the conditions ``mine``: a noun-kind value's word, else its own."""
    for a in subject.attributes:
        if a.kind == "noun" and a.id in mine:
            return a.values[mine[a.id]]
    return subject.noun


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


def grammar_yaml(grammar):
    """The YAML text of a grammar, which `lbee.grammar.load_grammar` reads back to the same digest.

    Written beside a set as its grammar copy: the copy with ``--classes`` values, and ``lbee embed``'s.
    """
    import yaml

    def subject(s):
        d = {"id": s.id, "noun": s.noun, "article": s.article}
        if not s.setting:
            d["deniable"] = "true" if s.deniable else "false"
        else:
            d["preposition"] = s.preposition
        if s.plural_noun:
            d["plural"] = s.plural_noun
        if s.bare:
            d["bare"] = s.bare
        d["attributes"] = [
            {
                "id": a.id,
                "kind": a.kind,
                "values": dict(a.values),
                **({"plural": list(a.plural)} if a.plural else {}),
                **({"requires": [f"{x}.{y}={z}" for x, y, z in a.requires]} if a.requires else {}),
            }
            for a in s.attributes
        ]
        if s.setting and not d["preposition"]:
            del d["preposition"]
        return d

    doc = {
        "name": grammar.name,
        "description": grammar.description,
        "lead": grammar.lead,
        "bare": grammar.bare,
        "max_conditions": str(grammar.max_conditions),
        "subjects": [subject(s) for s in grammar.subjects if not s.setting],
        "settings": [subject(s) for s in grammar.subjects if s.setting],
    }
    if not doc["settings"]:
        del doc["settings"]
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
