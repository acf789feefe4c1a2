"""Turning sentences into yes/no questions (LBEE app. C.3).

Rules cover the templates of every built-in sentence set; a per-set override
file ``sentence_sets/<name>.questions.tsv`` (``sentence<TAB>question`` lines)
supplies hand-written questions, and [`questions_for`][vqa.questions_for] lists the sentences
no rule could convert.
"""

from __future__ import annotations

import re

SUFFIX = " Reply simply with 'yes' or 'no'."

# (pattern, template) tried in order; {x} is the rest of the sentence
_RULES = [
    (r"^an? (?:image|photo|picture) taken (.+)$", "Was the image taken {x}?"),
    (r"^an? (?:image|photo|picture) (?:of|showing) (.+)$", "Does the image show {x}?"),
    (r"^an? (?:image|photo|picture) with (.+)$", "Does the image have {x}?"),
    (r"^an? (?:image|photo|picture) on (.+)$", "Is the image on {x}?"),
    (r"^an? (?:image|photo|picture) where (.+)$", "In the image, is it true that {x}?"),
    (r"^an? (?:image|photo|picture) that is (.+)$", "Is the image {x}?"),
    (r"^(an? .*(?:image|photo|drawing|painting|cartoon|rendering|screenshot|scan))$", "Is this {x}?"),
    (r"^(an? (?:drawing|painting|cartoon|sketch|screenshot|3d rendering|aerial photo)\b.*)$", "Is this {x}?"),
]


def sentence_to_question(sentence, suffix=SUFFIX):
    """The yes/no question for one sentence, or None when no rule applies.

    >>> sentence_to_question("An image taken at night")
    "Was the image taken at night? Reply simply with 'yes' or 'no'."
    """
    if not isinstance(sentence, str) or not sentence.strip():
        raise ValueError(f"`sentence` must be a non-empty string; received {sentence!r}.")
    s = sentence.strip().rstrip(".")
    for pattern, template in _RULES:
        m = re.match(pattern, s, flags=re.IGNORECASE)
        if m:
            x = m.group(1)
            if template.startswith("Is this"):
                x = x[0].lower() + x[1:]
            return template.format(x=x) + suffix
    return None


def read_overrides(path):
    """``sentence<TAB>question`` lines (``#`` comments) -> dict."""
    from lbee.io.confinement import read_text_file  # bounded, a regular file: /dev/zero took 4.3 GB (sweep 23)

    out = {}
    text = read_text_file(path, "Questions file", encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            raise ValueError(f"{path}: line {lineno} needs 'sentence<TAB>question'.")
        sentence, question = (p.strip() for p in line.split("\t", 1))
        if not question:
            raise ValueError(f"{path}: line {lineno} has an empty question.")
        out[sentence] = question
    return out


def questions_for(sentences, overrides=None, suffix=SUFFIX):
    """Questions for a list of sentences.

    Parameters
    ----------
    sentences : list of str
    overrides : dict or path-like, optional
        Hand-written questions, used before the rules.

    Returns
    -------
    questions : list of str or None
        None where neither an override nor a rule applies.
    unconverted : list of str
        The sentences without a question.
    """
    if overrides is not None and not isinstance(overrides, dict):
        overrides = read_overrides(overrides)
    overrides = overrides or {}
    questions, missing = [], []
    for s in sentences:
        q = overrides.get(s) or sentence_to_question(s, suffix)
        if q is None:
            missing.append(s)
        questions.append(q)
    return questions, missing


def builtin_overrides(set_name):
    """The override file shipped for a built-in set, or None."""
    from lbee.io.sentences import builtin_dir

    path = builtin_dir() / f"{set_name}.questions.tsv"
    return read_overrides(path) if path.is_file() else None
