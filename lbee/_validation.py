"""Input checks shared by the public functions.

Every check raises ``ValueError`` (bad values) or ``TypeError`` (bad types)
with a message that names the argument, what was received and what is
expected.
"""

from __future__ import annotations

import numbers
import re
import reprlib
import unicodedata
from collections.abc import Collection
from types import FrameType
from typing import Any, Literal, overload

import numpy as np

from .typing import BoolArray, FloatArray

#: Largest seed accepted anywhere (a SpotCheck world, ``@random:SEED``, ``--seed``): numpy's legacy generator and
#: scikit-learn's ``random_state`` take seeds in [0, 2**32 - 1]; a seed outside fails deep inside a run.
MAX_SEED = 2**32 - 1
#: A number written by a user (a table cell, a command-line value): ASCII digits, an optional sign, point and
#: exponent. Python's ``int()`` / ``float()`` also take ``1_000`` (1000), full-width or other scripts' digits and
#: ``inf`` / ``nan``: a typo must not become a value.
NUMBER_PATTERN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def parse_number(text: str, kind: type = float) -> Any:
    """``text`` as ``kind`` (int or float) when it matches `NUMBER_PATTERN` (an int: digits only); else ValueError."""
    t = text.strip()
    if not NUMBER_PATTERN.fullmatch(t) or (kind is int and not t.lstrip("+-").isdigit()):
        raise ValueError(f"{text!r} is not {'an integer' if kind is int else 'a number'} in ASCII digits")
    return kind(t)


#: A user's value quoted in a message is cut to this many characters (and says how long it was): a value can be
#: megabytes long (a YAML alias, a pasted file), and its full repr would be built and sent with every error.
SHOWN_CHARS = 80


class _Short(reprlib.Repr):
    """reprlib's cut repr, also for subclasses of str, list and dict (reprlib names types by their class name)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = SHOWN_CHARS
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 4
        self.maxlevel = 3

    def repr1(self, x: Any, level: int) -> str:
        bases: tuple[type[Any], ...] = (str, list, tuple, dict)
        for base in bases:
            if isinstance(x, base) and type(x) is not base:
                plain: Any = x if base is dict else base(x)
                return str(getattr(self, f"repr_{base.__name__}")(plain, level))
        return str(super().repr1(x, level))


_SHORT = _Short()


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` cut at about ``limit`` characters, saying how long a longer value was.

    Never builds the full repr, so quoting a gigabyte value in a message costs as little as quoting a word. A date
    or time (YAML reads ``2001-12-14`` as one) is shown as its ISO text, not as ``datetime.datetime(...)``.
    """
    import datetime
    import math

    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value.isoformat()} (a date or time: quote it to make it text)"
    if isinstance(value, int) and value.bit_length() > 3 * limit:  # never str(): Python may refuse to write it
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # the count, or one more
        return f"{'a negative' if value < 0 else 'an'} integer of about {digits:,} digits"
    text = _SHORT.repr(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    if isinstance(value, str) and len(value) > limit - 2:
        text += f" ({len(value):,} characters)"
    elif isinstance(value, (list, tuple, dict, set)) and len(value) > 4:
        text += f" ({len(value):,} items)"
    return text


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    for kind, words in ((dict, "a mapping"), (list, "a list")):  # YAML's own classes are no user's words
        if isinstance(value, kind):
            return f"{words} {shown(kind(value))}"
    return f"{type(value).__name__} {shown(value)}"


def as_float_matrix(value: Any, name: str, *, allow_empty: bool = False) -> FloatArray:
    """Return ``value`` as a finite float64 matrix of shape (rows, cols)."""
    if value is None:
        raise TypeError(f"`{name}` is required: received None, expected an array-like of shape (n, d).")
    if np.iscomplexobj(value):
        raise TypeError(f"`{name}` holds complex numbers; expected real values of shape (n, d).")
    try:
        arr: FloatArray = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"`{name}` must be a numeric array-like of shape (n, d); received {_describe(value)} ({exc})."
        ) from None
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D of shape (n, d); received shape {arr.shape}.")
    if not allow_empty and (arr.shape[0] == 0 or arr.shape[1] == 0):
        raise ValueError(f"`{name}` is empty: received shape {arr.shape}, expected at least one row and one column.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"`{name}` contains {bad} NaN or inf value(s); expected finite values only.")
    return arr


def as_unit_rows(value: Any, name: str) -> FloatArray:
    """Return ``value`` as float64 rows of unit L2 norm (zero rows are an error).

    Scale-safe: each row is first divided by its largest absolute value, so
    rows scaled by 1e300 (whose squared norm overflows) or 1e-300 (whose
    squared norm underflows) keep their direction.
    """
    arr = as_float_matrix(value, name)
    peak = np.abs(arr).max(axis=1, keepdims=True)
    if np.any(peak == 0):
        rows = np.flatnonzero(peak[:, 0] == 0)[:5].tolist()
        raise ValueError(
            f"`{name}` has all-zero rows (first indices, from 0: {rows}); a zero vector has no direction to compare."
        )
    arr = arr / peak
    unit: FloatArray = arr / np.linalg.norm(arr, axis=1, keepdims=True)
    return unit


def as_float_vector(value: Any, name: str, n: int | None = None) -> FloatArray:
    """Return ``value`` as a finite float64 vector, of length ``n`` when given."""
    if value is None:
        raise TypeError(f"`{name}` is required: received None, expected an array-like of shape ({n or 'n'},).")
    try:
        arr: FloatArray = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a numeric array-like; received {_describe(value)}.") from None
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D; received shape {arr.shape}.")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"`{name}` has length {arr.shape[0]}; expected {n} (one value per image).")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` is empty; expected at least one value.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"`{name}` contains {bad} NaN or inf value(s); expected finite values only.")
    return arr


def as_bool_vector(value: Any, name: str, n: int) -> BoolArray:
    """Return ``value`` as a boolean mask of length ``n``."""
    arr: BoolArray = np.asarray(value)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"`{name}` must be a boolean mask of shape ({n},); received shape {arr.shape}.")
    if arr.dtype != bool:
        if arr.dtype.kind in "iu" and np.all((arr == 0) | (arr == 1)):
            arr = arr.astype(bool)
        else:
            raise TypeError(f"`{name}` must be a boolean mask; received dtype {arr.dtype}.")
    return arr


def as_bool_matrix(value: Any, name: str, shape: tuple[int, ...]) -> BoolArray:
    """Return ``value`` as a boolean matrix of the given shape."""
    arr: BoolArray = np.asarray(value)
    if arr.shape != tuple(shape):
        raise ValueError(f"`{name}` must have shape {tuple(shape)}; received shape {arr.shape}.")
    if arr.dtype != bool:
        if arr.dtype.kind in "iuf" and np.all((arr == 0) | (arr == 1)):
            arr = arr.astype(bool)
        else:
            raise TypeError(f"`{name}` must hold booleans (or 0/1); received dtype {arr.dtype}.")
    return arr


def check_positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer >= {minimum}; received {_describe(value)}.")
    if value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}; received {value}.")
    return int(value)


#: Longest name accepted (a dataset or job name, a name in a query): it shows in every page, folder and log line.
MAX_NAME_CHARS = 200
#: Unicode categories refused in a name: control (NUL, line breaks, tabs), format (invisible, reordering),
#: surrogates and line / paragraph separators. A database may refuse them (PostgreSQL: U+0000) and a
#: page or log line cannot show them.
_NAME_REFUSED = ("Cc", "Cf", "Cs", "Zl", "Zp")


def check_name_text(value: Any, name: str, *, max_chars: int = MAX_NAME_CHARS) -> str:
    """``value`` if it is a name: a string on one line of visible characters, at most ``max_chars`` long.

    The one rule for dataset and job names and the names a query filters by (API, YAML configs, service).
    The message quotes the refused character's code point, never the whole value (it may be huge).
    """
    import unicodedata

    if not isinstance(value, str):
        raise ValueError(f"`{name}` is {_describe(value)}; expected a string.")
    if len(value) > max_chars:
        raise ValueError(f"`{name}` has {len(value):,} characters; expected at most {max_chars}.")
    for i, c in enumerate(value):
        if unicodedata.category(c) in _NAME_REFUSED:
            raise ValueError(
                f"`{name}` holds U+{ord(c):04X} (a control or invisible character) at position {i + 1}; "
                "expected a name of visible characters on one line."
            )
    bad = line_break_in(value)  # the one rule of what does not show (blank-drawn, ignorable characters)
    if bad is not None:
        i = value.index(bad)
        raise ValueError(
            f"`{name}` holds U+{ord(bad):04X} (an invisible or blank-drawn character) at position {i + 1}; "
            "expected a name of visible characters on one line."
        )
    if not any(not c.isspace() and not unicodedata.category(c).startswith("M") for c in value):
        raise ValueError(f"`{name}` is blank (spaces or accents only); expected a name that shows.")
    if value != value.strip():  # 'm' and 'm ' would be two names that read as one
        raise ValueError(f"`{name}` is {shown(value)}, with spaces at an end; expected the name without them.")
    return value


def check_seed(value: Any, name: str) -> int:
    """A seed in [0, `MAX_SEED`] (numpy's generator range): the one rule for API, CLI, config and service."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= MAX_SEED:
        raise ValueError(f"`{name}` is {shown(value)}; expected an integer seed in [0, {MAX_SEED}] (2**32 - 1).")
    return int(value)


@overload
def check_real(value: Any, name: str, *, minimum: float | None = None, allow_none: Literal[False] = False) -> float: ...


@overload
def check_real(value: Any, name: str, *, minimum: float | None = None, allow_none: bool) -> float | None: ...


def check_real(value: Any, name: str, *, minimum: float | None = None, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; received {_describe(value)}.")
    out = float(value)
    if not np.isfinite(out):
        raise ValueError(f"`{name}` must be finite; received {out}.")
    if minimum is not None and out < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}; received {out}.")
    return out


def check_choice(value: Any, name: str, choices: Collection[str]) -> str:
    """``value`` when it is one of ``choices``; else a ValueError listing them, with the nearest one suggested."""
    if not isinstance(value, str) or value not in choices:
        import difflib

        near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"`{name}` must be one of {sorted(choices)}; received {value!r}{hint}.")
    return value


def caller_stacklevel() -> int:
    """The ``stacklevel`` of `warnings.warn` that names the first caller outside lbee (from the function calling this).

    A warning raised deep inside lbee then points at the user's line, whichever public function they called.
    """
    import os
    import sys

    package = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(2)  # 1: the function that warns; counted from warnings.warn's caller
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class KeyTwice(ValueError):
    """A JSON object writes a key twice (the key, cut to 80 characters, is the argument)."""


def once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object from ``pairs`` (``json.loads``' object_pairs_hook), refusing a key written twice.

    json keeps the last of two values in silence: which one did the writer mean?
    """
    out = {}
    for key, value in pairs:
        if key in out:
            raise KeyTwice(key[:80])
        out[key] = value
    return out


def loads_each_key_once(text: str) -> Any:
    """``json.loads(text)``, refusing a key written twice (``ValueError`` naming it)."""
    import json

    try:
        return json.loads(text, object_pairs_hook=once_each)
    except KeyTwice as exc:
        raise ValueError(f"the key {exc.args[0]!r} is written twice in one object; expected each key once") from None


#: What `line_break_in` finds, as messages say it.
INVISIBLE = "a line break, tab, control character, invisible character or leading combining mark"


def line_break_in(text: str) -> str | None:
    r"""The first character of ``text`` that would split a sentence across lines or cells, or hide in it; or None.

    Any ``str.splitlines`` boundary (``\n``, ``\r``, U+0085, U+2028, U+2029, ...), a tab, another control
    character, or a Unicode format character (category Cf: zero-width spaces and joiners, bidirectional
    overrides, a soft hyphen), another default-ignorable or blank-drawn character (variation selectors, Hangul
    fillers, U+2800), or a leading combining mark, which makes two sentences that look the same differ, or
    reorders what is shown: grammar words and ``--classes`` names are refused with one.
    """
    if text and unicodedata.category(text[0]).startswith("M"):  # a combining mark with no letter to sit on
        return text[0]
    if text.isascii() and text.isprintable():  # the usual id or sentence
        return None
    # at C speed where nothing is refused: a per-character loop took 2 ms an id of 4,096 characters, every row
    if text.isprintable() or _PRINTABLE_HERE.sub("", text).isprintable():
        found = _IGNORABLE_CLASS.search(text)
        return None if found is None else found.group()
    return next((c for c in text if _breaks_a_line(c)), None)  # something is refused: find the first


# Unicode's Default_Ignorable_Code_Point ranges outside category Cf (variation selectors, Hangul fillers, the
# combining grapheme joiner, Mongolian free variation selectors, ...), and U+2800, a braille cell drawn blank:
# NFKC folds none of them, so "a" and "a\ufe0f" would be two sentences that look alike.
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)


# The characters `str.isprintable` refuses that `_breaks_a_line` lets through: spaces other than ' ' (Zs), private
# use (Co) and surrogates (Cs); and the ignorable ranges, which are printable.
_PRINTABLE_HERE = re.compile(
    "[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd\ud800-\udfff]"
)
_IGNORABLE_CLASS = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _IGNORABLE) + "]")


def _breaks_a_line(c: str) -> bool:
    """Whether ``c`` would split a sentence across lines or cells (a tab), or is invisible (a format character)."""
    if unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cf", "Cn"):  # \t \n \r \x85 U+2028 U+2029; U+200B U+202E
        return True  # Cn: unassigned, drawn as nothing or a box (U+2065, an ignorable of the future)
    code = ord(c)
    return any(lo <= code <= hi for lo, hi in _IGNORABLE)
