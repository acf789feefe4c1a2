"""Where torch work runs: one rule for the encoders, the models and the VQA backends."""


def resolve_device(device=None):
    """'cuda' when a GPU is present and ``device`` is None, else ``device`` or 'cpu'."""
    if device:
        return str(device)
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
