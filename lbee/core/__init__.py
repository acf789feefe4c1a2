"""The paper's steps: split, clustering, selection, sentence index, explanation, evaluation, metrics."""
