"""One BLAS thread around small products.

Multi-threaded BLAS pays off on big products only: a (1-2) x 512 by 512 x 1,400
product takes ~0.3 ms on one thread but up to 15 ms on two when the machine is
busy (OpenBLAS threads spin waiting for each other), and a 2 x 4,096 by
4,096 x 1,400 one is 15x slower on two busy threads than on one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_CONTROLLER: list[Any] = []  # the threadpoolctl controller, built on first use
_DEPTH = [0]  # one_blas_thread blocks open in this process: an inner one has nothing to change


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """A context manager limiting BLAS to one thread (threadpoolctl; the controller is built once).

    Inside another such block it changes nothing and costs nothing: threadpoolctl's limit reads and sets every
    loaded library's threads (~45 µs), paid thousands of times by a per-class run's small products.
    """
    if _DEPTH[0]:
        _DEPTH[0] += 1
        try:
            yield
        finally:
            _DEPTH[0] -= 1
        return
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    with _CONTROLLER[0].limit(limits=1, user_api="blas"):
        _DEPTH[0] += 1
        try:
            yield
        finally:
            _DEPTH[0] -= 1
