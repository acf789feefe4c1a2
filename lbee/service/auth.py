"""API tokens: created once (printed once), stored as SHA-256 digests, scoped ``read`` or ``submit``.

Tokens are 32 random bytes (``secrets.token_urlsafe``), so a plain SHA-256
digest is enough to store them (no password-style stretching is needed for
secrets that cannot be guessed).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SCOPES = ("read", "submit")
TOKEN_PREFIX = "lbee_"


def digest(token):
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(db, name, scope="read"):
    """A new token named ``name``: returns the token text (shown once; only its digest is stored).

    Raises
    ------
    ValueError
        An empty or taken name, or a scope other than ``read`` / ``submit``.
    """
    from .._validation import MAX_NAME_CHARS, check_name_text
    from .db import Token

    if scope not in SCOPES:
        raise ValueError(f"`scope` is {scope!r}; expected one of {', '.join(SCOPES)}.")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"token name {name!r} must be a non-empty string of at most {MAX_NAME_CHARS} characters.")
    check_name_text(name, "token name")  # one line of visible text: `token list` shows one row per token
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with db.session() as s:
        if s.query(Token).filter(Token.name == name).first() is not None:
            raise ValueError(f"a token named {name!r} exists already; revoke it or pick another name.")
        s.add(Token(name=name, digest=digest(token), prefix=token[: len(TOKEN_PREFIX) + 4], scope=scope))
        s.commit()
    return token


def list_tokens(db):
    """Every token: list of dict (name, scope, prefix, created, revoked)."""
    from .db import Token

    with db.session() as s:
        return [
            {"name": t.name, "scope": t.scope, "prefix": t.prefix, "created": t.created, "revoked": t.revoked}
            for t in s.query(Token).order_by(Token.created)
        ]


def revoke_token(db, name):
    """Revoke the token ``name`` (kept in the table, refused from now on)."""
    from .db import Token, utcnow

    with db.session() as s:
        t = s.query(Token).filter(Token.name == name).first()
        if t is None:
            raise ValueError(f"no token named {name!r}; `lbee serve token list` shows them.")
        if t.revoked is None:
            t.revoked = utcnow()
        s.commit()


def check_token(db, token):
    """The live token row matching ``token``, or None."""
    from .db import Token

    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    d = digest(token)
    with db.session() as s:
        t = s.query(Token).filter(Token.digest == d).first()
    if t is None or t.revoked is not None or not hmac.compare_digest(t.digest, d):
        return None
    return t
