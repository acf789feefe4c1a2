"""Sentence sets: plain-text files, one sentence per line, ``#`` comments.

Built-in sets live in ``sentence_sets/`` (shipped in the wheel as
``lbee.sentence_sets``); a user's own file works the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path


@dataclass(frozen=True)
class SentenceSet:
    """A named list of sentences.

    Attributes
    ----------
    name : str
    sentences : tuple of str
    header : str
        The leading comment block (what the set is for and how it was built).
    path : str
    """

    name: str
    sentences: tuple
    header: str
    path: str

    def __len__(self):
        return len(self.sentences)


def builtin_dir():
    """The folder of the built-in sentence sets (and their ``.questions.tsv`` overrides)."""
    return _builtin_dir()


def _builtin_dir():
    try:
        return Path(str(resources.files("lbee.sentence_sets")))
    except ModuleNotFoundError:  # running from a source tree that was not installed
        return Path(__file__).resolve().parents[2] / "sentence_sets"


def list_sentence_sets():
    """Names of the built-in sentence sets, sorted."""
    return sorted(p.stem for p in _builtin_dir().glob("*.txt"))


def parse_sentences(text, source="<text>"):
    """Parse sentence-file text.

    Blank lines are separators; lines starting with ``#`` are comments (the
    first comment block is the header). A leading byte order mark is dropped. A duplicated sentence (case-insensitive)
    or a file with no sentence raises ``ValueError`` naming the line.

    Returns
    -------
    sentences : list of str
    header : str
    """
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark must not become part of the first sentence
        text = text[1:]
    sentences, header, seen = [], [], {}
    in_header = True
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if in_header:
                header.append(line.lstrip("#").strip())
            continue
        if not line:
            continue
        in_header = False
        key = line.casefold()
        if key in seen:
            raise ValueError(f"{source}: line {lineno} repeats the sentence of line {seen[key]}: {line!r}.")
        seen[key] = lineno
        sentences.append(line)
    if not sentences:
        raise ValueError(f"{source}: no sentence found; expected one sentence per line ('#' starts a comment).")
    return sentences, "\n".join(header).strip()


def load_sentence_set(name_or_path):
    """Load a built-in set by name, or a sentence file by path.

    Parameters
    ----------
    name_or_path : str or path-like
        A name from :func:`list_sentence_sets` or a path to a text file.

    Returns
    -------
    SentenceSet
    """
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"`name_or_path` must be a set name or a path; received {type(name_or_path).__name__}.")
    path = Path(name_or_path)
    if not path.is_file():
        builtin = _builtin_dir() / f"{name_or_path}.txt"
        if not builtin.is_file():
            raise ValueError(
                f"Unknown sentence set {str(name_or_path)!r}: not a file and not a built-in set. "
                f"Built-in sets: {', '.join(list_sentence_sets())}."
            )
        path = builtin
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read sentence file {str(path)!r}: {exc}.") from None
    sentences, header = parse_sentences(text, source=str(path))
    return SentenceSet(path.stem, tuple(sentences), header, str(path))
