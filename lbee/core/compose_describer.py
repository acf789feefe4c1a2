"""The 'compose' describer's explanation of a partition's hard groups (`lbee.core.compose`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .compose import ComposeSearch
from .explanation import EasyCluster, Explanation, HardCluster
from .hypotheses import with_twin
from .selection import COMPOSE
from .sentence_index import SentenceIndex

if TYPE_CHECKING:
    from .partition import Partition


def compose_explanation(
    part: Partition, search: ComposeSearch, index: SentenceIndex, k: int, tau: float, sentences: list[str] | None
) -> Explanation:
    """Up to ``k`` conjunctions per hard group of ``part``, rendered by the grammar; new sentences are appended.

    Merged hypotheses (`Partition.merge`) keep the descriptions they were found by; the slicer's groups are
    searched (`ComposeSearch.search`), with their matched easy cluster as the twin.
    """
    texts = list(sentences) if sentences is not None else [f"sentence {i}" for i in range(index.n_sentences)]
    where = {t: i for i, t in enumerate(texts)}
    hard: list[HardCluster] = []
    for i, g in enumerate(part.hard_groups_):
        twin = part.easy_groups_[int(part.matches_[i])]
        found = (
            search.search(g, twin=twin, k=k)
            if part.hypotheses_ is None
            else with_twin(search, part.hypotheses_[i].descriptions[:k], twin)
        )
        ids: list[int] = []
        details: list[dict[str, Any]] = []
        for c in found:
            text = index.grammar.render(c.conditions)
            if text not in where:
                where[text] = len(texts)
                texts.append(text)
            ids.append(where[text])
            details.append(
                {
                    "conditions": c.conditions,
                    "hard_share": c.hard_share,
                    "easy_share": c.easy_share,
                    "twin_share": c.twin_share,
                }
            )
        hard.append(
            HardCluster(g, part.hard_prototypes_[i], int(part.matches_[i]), ids, [c.lift for c in found], details)
        )
    easy = [EasyCluster(g, p) for g, p in zip(part.easy_groups_, part.easy_prototypes_)]
    params = dict(
        part.params,
        k=k,
        tau=tau,
        n_sentences=len(texts),
        method=COMPOSE,
        n_base_sentences=int(index.n_sentences),
        grammar=index.grammar.name,
    )
    return Explanation(hard, easy, COMPOSE, params, texts)
