"""Array aliases for the annotations of lbee (as ``cleanlab.typing``): what a function takes and returns.

Shapes are in the docstrings (numpydoc); these name the dtypes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

#: Anything ``np.asarray`` accepts: a list, a tuple, an array, a DataFrame column ...
ArrayLike = npt.ArrayLike
#: A float64 array (embeddings, φ, ω, scores).
FloatArray = npt.NDArray[np.float64]
#: An int64 array (indices into the images or the sentences, labels).
IntArray = npt.NDArray[np.int64]
#: A boolean array (split masks, Γ).
BoolArray = npt.NDArray[np.bool_]
#: An array whose dtype the function does not fix.
AnyArray = npt.NDArray[Any]

__all__ = ["AnyArray", "ArrayLike", "BoolArray", "FloatArray", "IntArray"]
