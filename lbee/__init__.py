"""lbee: find, and describe in plain language, where a computer-vision model fails.

The public API::

    exp = lbee.explain(image_embeddings, sentence_embeddings, confidence=phi)
    result = lbee.audit(image_embeddings, sentence_embeddings, sentences=texts, probs=probs, labels=labels)
    lbee.write_run_folder(result, "runs/audit")  # as lbee describe --out --html writes a run
    scores = lbee.evaluate(exp, relevance, performance)
    lbee.failure_sentences(relevance, performance)

Heavy libraries (torch, faiss, transformers, open_clip) are imported lazily.
"""

from ._version import __version__

try:
    from .core.evaluation import evaluate, failure_sentences
    from .core.explain import explain, explain_methods
    from .core.explanation import EasyCluster, Explanation, HardCluster
    from .core.partition import Partition, partition
    from .core.selection import METHODS
    from .core.split import split_by_confidence
    from .reports.run_folder import write_run_folder
    from .run.audit import audit
    from .run.settings import RunSettings
except ModuleNotFoundError as _exc:  # a core dependency missing (a wheel installed with --no-deps): said so
    from ._dependencies import raise_missing

    raise_missing(_exc)

__all__ = [
    "__version__",
    "audit",
    "write_run_folder",
    "explain",
    "explain_methods",
    "partition",
    "Partition",
    "RunSettings",
    "evaluate",
    "failure_sentences",
    "split_by_confidence",
    "Explanation",
    "HardCluster",
    "EasyCluster",
    "METHODS",
]
