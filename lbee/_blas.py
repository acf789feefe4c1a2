"""One BLAS thread around small products.

Multi-threaded BLAS pays off on big products only: a (1-2) x 512 by 512 x 1,400
product takes ~0.3 ms on one thread but up to 15 ms on two when the machine is
busy (OpenBLAS threads spin waiting for each other), and a 2 x 4,096 by
4,096 x 1,400 one is 15x slower on two busy threads than on one.
"""

from __future__ import annotations

from typing import Any

_CONTROLLER: list[Any] = []  # the threadpoolctl controller, built on first use


def one_blas_thread() -> Any:
    """A context manager limiting BLAS to one thread (threadpoolctl; the controller is built once)."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
