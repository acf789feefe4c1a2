"""The client's HTTP transport: no redirect followed, and every byte of an answer read within one deadline.

``urllib`` bounds each read of the socket by its timeout, not the whole answer: a server that sends its status
line, its headers or a chunked body's framing one byte a second, or ``100 Continue`` without end, held the client
forever (sweep 29). Here the socket under each connection hands its reads to `_DeadlineReader`, which sets the
socket's timeout to what is left of the request's deadline before every read and stops at the deadline.
"""

from __future__ import annotations

import io
import time
import urllib.request


class AnswerTooSlow(TimeoutError):
    """The server's answer did not arrive within the request's deadline."""


class Redirected(Exception):
    """The server answered with a redirect (to ``target``), which the client never follows."""

    def __init__(self, target):
        super().__init__(target)
        self.target = target


class _DeadlineReader(io.RawIOBase):
    def __init__(self, owner):
        self._owner = owner

    def readable(self):
        return True

    def readinto(self, buffer):
        owner = self._owner
        left = owner.deadline - time.monotonic()
        if left <= 0:
            raise AnswerTooSlow("the answer did not arrive in time")
        owner.sock.settimeout(left if owner.per_read is None else min(owner.per_read, left))
        try:
            return owner.sock.recv_into(buffer)
        except TimeoutError:
            if time.monotonic() >= owner.deadline:  # the deadline's timeout, not one read's
                raise AnswerTooSlow("the answer did not arrive in time") from None
            raise

    def close(self):
        if not self.closed:
            self._owner.reader_closed()
        super().close()


class _DeadlineSocket:
    """A connected socket whose reading file (what ``http.client`` reads an answer from) keeps the deadline.

    As with a plain socket's ``makefile``, closing the socket while its reading file is open (``urllib`` does, once
    the headers are in) leaves it open for that file until the file is closed.
    """

    def __init__(self, sock, deadline, per_read):
        self.sock, self.deadline, self.per_read = sock, deadline, per_read
        self._readers, self._closed = 0, False

    def makefile(self, mode="r", *args, **kwargs):
        if "r" not in mode:
            return self.sock.makefile(mode, *args, **kwargs)
        self._readers += 1
        return io.BufferedReader(_DeadlineReader(self))

    def reader_closed(self):
        self._readers -= 1
        if self._closed and self._readers == 0:
            self.sock.close()

    def close(self):
        self._closed = True
        if self._readers == 0:
            self.sock.close()

    def __getattr__(self, name):
        return getattr(self.sock, name)


def _within(http_class, deadline):
    """A connection factory for ``do_open``: ``http_class``'s connections, their sockets wrapped once connected."""

    def make(host, **kwargs):
        conn = http_class(host, **kwargs)
        connect = conn.connect

        def connect_within():
            connect()
            conn.sock = _DeadlineSocket(conn.sock, deadline, conn.timeout)

        conn.connect = connect_within
        return conn

    return make


class _Deadlines:
    def do_open(self, http_class, req, **kwargs):
        return super().do_open(_within(http_class, req.lbee_deadline), req, **kwargs)


class _HTTP(_Deadlines, urllib.request.HTTPHandler):
    pass


class _HTTPS(_Deadlines, urllib.request.HTTPSHandler):
    pass


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect handler that follows none: lbee's API never redirects.

    Following one would send the bearer token to another host and turn a POST into a GET (urllib copies the
    headers and drops the body).
    """

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise Redirected(newurl)


_OPENER = urllib.request.build_opener(_NoRedirects, _HTTP, _HTTPS)


def open_within(req, timeout, deadline):
    """``urllib``'s answer to ``req``: each read within ``timeout`` s, all of it before ``deadline``.

    Parameters
    ----------
    req : urllib.request.Request
    timeout : float
        Seconds one read of the socket may take.
    deadline : float
        `time.monotonic` by which the status line, the headers and the body must all have arrived.

    Raises
    ------
    AnswerTooSlow
        Past the deadline, also while the body is read from the answer returned.
    Redirected
        The server answered with a redirect.
    """
    req.lbee_deadline = deadline
    return _OPENER.open(req, timeout=timeout)
