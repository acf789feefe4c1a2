"""scvis (Ding et al. 2018) in PyTorch: a VAE whose latent is also trained with the t-SNE objective."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import as_float_matrix, check_positive_int, check_real
from ._base import check_fitted


def calibrate_precisions(X, perplexity, n_steps=64):
    """Per-point Gaussian precision β_i giving the target perplexity over its 3·perplexity nearest neighbours.

    Returns
    -------
    ndarray of shape (n,)
    """
    from sklearn.neighbors import NearestNeighbors

    n = X.shape[0]
    k = int(min(n - 1, max(3 * perplexity, 5)))
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X)
    D2 = dist[:, 1:] ** 2
    target = np.log(min(perplexity, k))
    lo, hi = np.zeros(n), np.full(n, np.inf)
    beta = np.ones(n) / np.maximum(np.median(D2, axis=1), 1e-12)
    for _ in range(n_steps):
        logits = -D2 * beta[:, None]
        logits -= logits.max(1, keepdims=True)
        P = np.exp(logits)
        P /= P.sum(1, keepdims=True)
        H = -(P * np.log(np.maximum(P, 1e-300))).sum(1)
        sharpen = H > target
        lo = np.where(sharpen, beta, lo)
        hi = np.where(sharpen, hi, beta)
        beta = np.where(np.isinf(hi), beta * 2, (lo + hi) / 2)
    return beta


def batch_affinities(D2, beta):
    """Symmetric joint affinities P (b, b) of one mini-batch from squared distances and precisions."""
    import torch

    b = D2.shape[0]
    logits = (-D2 * beta[:, None]).masked_fill(torch.eye(b, dtype=torch.bool, device=D2.device), -float("inf"))
    P = torch.softmax(logits, dim=1)
    return (P + P.T) / (2 * b)


class ScVis(TransformerMixin, BaseEstimator):
    """2-D (or ``n_components``-D) scvis embedding.

    A Gaussian-latent VAE (encoder d→128→64→latent, decoder latent→64→128→d)
    trained on mini-batches with loss = −ELBO + ``tsne_weight`` · d · KL(P‖Q),
    where P are perplexity-calibrated input affinities (each point's Gaussian
    precision is calibrated once on its nearest neighbours in the whole data,
    then P is renormalised within each mini-batch) and Q Student-t
    affinities of the latent means (1 degree of freedom for 2-D), as in Ding
    et al. (the t-SNE term is scaled by the input dimension). Unseen points are
    embedded with the encoder mean.

    Parameters
    ----------
    n_components : int, default=2
    perplexity : float, default=10.0
    n_iter : int, default=1000
        Mini-batch steps.
    batch_size : int, default=512
    learning_rate : float, default=1e-3
    tsne_weight : float, default=1.0
    device : str, default='cpu'
    random_state : int or None, default=None

    Attributes
    ----------
    embedding_ : ndarray of shape (n, n_components)
    encoder_, decoder_ : torch modules
    """

    def __init__(self, *, n_components=2, perplexity=10.0, n_iter=1000, batch_size=512, learning_rate=1e-3,
                 tsne_weight=1.0, device="cpu", random_state=None):
        self.n_components = n_components
        self.perplexity = perplexity
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.tsne_weight = tsne_weight
        self.device = device
        self.random_state = random_state

    def fit(self, X, y=None):
        import torch
        from torch import nn

        X = as_float_matrix(X, "X")
        n, d = X.shape
        if n < 3:
            raise ValueError(f"scvis needs at least 3 examples; received {n}.")
        k = check_positive_int(self.n_components, "n_components")
        check_positive_int(self.n_iter, "n_iter")
        check_real(self.perplexity, "perplexity", minimum=1.0)
        seed = 0 if self.random_state is None else int(self.random_state)
        self.mean_, self.scale_ = X.mean(0), X.std(0) + 1e-8
        Xn = (X - self.mean_) / self.scale_
        Xs = torch.tensor(Xn, dtype=torch.float32, device=self.device)
        betas = torch.tensor(calibrate_precisions(Xn, self.perplexity), dtype=torch.float32, device=self.device)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            enc = nn.Sequential(nn.Linear(d, 128), nn.ELU(), nn.Linear(128, 64), nn.ELU(), nn.Linear(64, 2 * k))
            dec = nn.Sequential(nn.Linear(k, 64), nn.ELU(), nn.Linear(64, 128), nn.ELU(), nn.Linear(128, d))
            log_var_x = nn.Parameter(torch.zeros(d, device=self.device))
            enc.to(self.device)
            dec.to(self.device)
            opt = torch.optim.Adam([*enc.parameters(), *dec.parameters(), log_var_x], lr=self.learning_rate,
                                   weight_decay=1e-5)
            gen = torch.Generator(device="cpu").manual_seed(seed)
            b = min(int(self.batch_size), n)
            dof = max(k - 1, 1)
            for _ in range(int(self.n_iter)):
                idx = torch.randperm(n, generator=gen)[:b].to(self.device)
                x = Xs[idx]
                h = enc(x)
                mu, logvar = h[:, :k], h[:, k:].clamp(-10, 10)
                z = mu + torch.randn(mu.shape, generator=gen).to(self.device) * torch.exp(0.5 * logvar)
                recon = dec(z)
                nll = 0.5 * (((x - recon) ** 2) / log_var_x.exp() + log_var_x).sum(1).mean()
                kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(1).mean()
                with torch.no_grad():
                    P = batch_affinities(torch.cdist(x, x).pow(2), betas[idx])
                W = (1 + torch.cdist(mu, mu).pow(2) / dof).pow(-(dof + 1) / 2)
                W = W * (1 - torch.eye(b, device=self.device))
                Q = W / W.sum()
                tsne = (P * (torch.log(P.clamp_min(1e-12)) - torch.log(Q.clamp_min(1e-12)))).sum()
                loss = nll + kl + self.tsne_weight * d * tsne
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.encoder_, self.decoder_ = enc.eval(), dec.eval()
        self.n_features_in_ = d
        self.embedding_ = self.transform(X)
        return self

    def transform(self, X):
        import torch

        check_fitted(self, "encoder_")
        X = as_float_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"`X` has {X.shape[1]} features; scvis was fitted with {self.n_features_in_}.")
        with torch.no_grad():
            xs = torch.tensor((X - self.mean_) / self.scale_, dtype=torch.float32, device=self.device)
            return self.encoder_(xs)[:, : self.n_components].cpu().double().numpy()
