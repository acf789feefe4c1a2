"""scvis (Ding et al. 2018) in PyTorch: a VAE whose latent is also trained with the t-SNE objective."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from .._validation import as_float_matrix, check_positive_int, check_real
from ._base import check_fitted


def batch_transition_probabilities(D2, perplexity, n_steps=24):
    """Row-conditional t-SNE probabilities P (b, b) of one mini-batch, from squared distances.

    Like the reference ``tsne_helper.compute_transition_probability``: each
    row's Gaussian precision is found by bisection within the batch and the
    diagonal is 0; the target entropy is ``log(perplexity) / log(2)`` nats
    (the reference compares a natural-log entropy with log2 of the
    perplexity, so perplexity 10 acts as about 28). An approximation, for
    speed (7 ms instead of 19 ms a batch of 512 on one core): as in
    Barnes-Hut t-SNE each row keeps only its 3 × (effective perplexity)
    nearest neighbours (85 at perplexity 10) and is calibrated on them. On
    well-clustered data this changes nothing; on isotropic Gaussian data the
    full row puts about 4 % of its mass (at most 13 %) beyond them.
    """
    import torch

    b = D2.shape[0]
    target = float(np.log(perplexity) / np.log(2))
    k = int(min(b - 1, 3 * np.ceil(np.exp(target)) + 1))
    d2, nn = torch.topk(
        D2.masked_fill(torch.eye(b, dtype=torch.bool, device=D2.device), float("inf")), k, dim=1, largest=False
    )
    d2 = d2 - d2[:, :1]  # shift by the nearest distance: same P, no underflow
    scale = d2.mean(1, keepdim=True).clamp_min(1e-12)
    lo = torch.log(1e-6 / scale)
    hi = torch.log(1e6 / scale)
    for _ in range(n_steps):
        mid = (lo + hi) / 2
        beta = mid.exp()
        logits = -d2 * beta
        log_z = torch.logsumexp(logits, dim=1, keepdim=True)
        H = log_z + beta * (d2 * torch.exp(logits - log_z)).sum(1, keepdim=True)  # entropy of softmax(logits)
        sharpen = H > target  # entropy too high: raise the precision
        lo = torch.where(sharpen, mid, lo)
        hi = torch.where(sharpen, hi, mid)
    P = torch.softmax(-d2 * ((lo + hi) / 2).exp(), dim=1)
    return torch.zeros_like(D2).scatter_(1, nn, P)


def reference_iterations(n, batch_size=512, max_epoch=100):
    """Training steps of the reference ``scvis train``: ``max_epoch`` epochs, at least 2,000, at most 30,000."""
    per_epoch = max(1, round(n / batch_size))
    steps = per_epoch * max_epoch
    return 2000 if steps < 2000 else (max(30000, per_epoch * 2) if steps > 30000 else steps)


class _VAE:
    """The reference's Gaussian VAE: ELU MLPs, softplus variances, a Student-t likelihood."""

    def __init__(self, d, k, encoder_sizes, decoder_sizes, device):
        import torch
        from torch import nn

        def mlp(sizes):
            layers = []
            for a, b in zip(sizes, sizes[1:]):
                layers += [nn.Linear(a, b), nn.ELU()]
            return nn.Sequential(*layers)

        self.encoder = mlp([d, *encoder_sizes]).to(device)
        self.mu = nn.Linear(encoder_sizes[-1], k).to(device)
        self.sigma2 = nn.Linear(encoder_sizes[-1], k).to(device)
        self.decoder = mlp([k, *decoder_sizes]).to(device)
        self.x_mu = nn.Linear(decoder_sizes[-1], d).to(device)
        self.x_sigma2 = nn.Linear(decoder_sizes[-1], d).to(device)
        self.dof = nn.Parameter(torch.ones(d, device=device))
        self.modules = [self.encoder, self.mu, self.sigma2, self.decoder, self.x_mu, self.x_sigma2]

    def parameters(self):
        return [p for m in self.modules for p in m.parameters()] + [self.dof]

    def weights(self):
        return [m.weight for mod in self.modules for m in mod.modules() if hasattr(m, "weight")]

    def encode(self, x):
        import torch

        h = self.encoder(x)
        return self.mu(h), torch.nn.functional.softplus(self.sigma2(h)).clamp(1e-6, 1e10)

    def decode(self, z):
        import torch

        h = self.decoder(z)
        return self.x_mu(h), torch.nn.functional.softplus(self.x_sigma2(h)).clamp(1e-6, 1e10)


class ScVis(TransformerMixin, BaseEstimator):
    """2-D (or ``n_components``-D) scvis embedding, as the reference ``scvis train`` runs it.

    Ding et al. (2018), shahcompbio/scvis with its default configuration: the
    data divided by its largest absolute value; an ELU encoder d→128→64→32→latent
    and decoder latent→32→32→32→64→128→d with softplus variances; a Student-t
    likelihood with a learned degree of freedom per feature, each point
    weighted by its column sum of P (clipped to [0.01, 2]); the latent KL
    annealed by max(0.1, d / step); the t-SNE term on the sampled latent (P
    row-conditional within the mini-batch, smoothed by 0.1 / b, Student-t Q
    with max(latent_dim − 1, 1) degrees of freedom) weighted by min(step, d); L2 0.001
    on the weights; Adam (lr 0.01, ε 1e-4) with the gradient clipped to global
    norm 10 and to ±3 per value (±0.3 for the encoder's variance head); 100
    epochs of mini-batches of 512, at least 2,000 steps. Unseen points are
    embedded with the encoder mean.

    Differences from the reference: the 10 % drop-connect on the latent
    mean's weights is left out (the embedding is read from the mean, as the
    reference reads it); P keeps each row's nearest neighbours only
    (`batch_transition_probabilities`); weights start from PyTorch's
    default initialisation (the reference: truncated normal with std
    √(2 / fan_in), biases 0.1); Adam's ε = 1e-4 is added after the bias
    correction (TensorFlow adds it before, which makes it larger in the
    first few hundred steps).

    Parameters
    ----------
    n_components : int, default=2
    perplexity : float, default=10.0
    n_iter : int or None, default=None
        Mini-batch steps; None: the reference's rule (`reference_iterations`).
    batch_size : int, default=512
    learning_rate : float, default=0.01
    max_epoch : int, default=100
    l2 : float, default=0.001
    tsne_weight : float, default=1.0
        Extra factor on the reference's t-SNE weight.
    device : str, default='cpu'
    random_state : int or None, default=None

    Attributes
    ----------
    embedding_ : ndarray of shape (n, n_components)
    vae_ : object
        The trained VAE (``vae_.encode(x)`` → latent mean and variance).
    n_iter_ : int
        Steps run.
    """

    def __init__(
        self,
        *,
        n_components=2,
        perplexity=10.0,
        n_iter=None,
        batch_size=512,
        learning_rate=0.01,
        max_epoch=100,
        l2=0.001,
        tsne_weight=1.0,
        device="cpu",
        random_state=None,
    ):
        self.n_components = n_components
        self.perplexity = perplexity
        self.n_iter = n_iter
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_epoch = max_epoch
        self.l2 = l2
        self.tsne_weight = tsne_weight
        self.device = device
        self.random_state = random_state

    def fit(self, X, y=None):
        import torch

        X = as_float_matrix(X, "X")
        n, d = X.shape
        if n < 3:
            raise ValueError(f"scvis needs at least 3 examples; received {n}.")
        k = check_positive_int(self.n_components, "n_components")
        b = min(check_positive_int(self.batch_size, "batch_size"), n)
        steps = (
            reference_iterations(n, b, check_positive_int(self.max_epoch, "max_epoch"))
            if self.n_iter is None
            else check_positive_int(self.n_iter, "n_iter")
        )
        check_real(self.perplexity, "perplexity", minimum=1.0)
        seed = 0 if self.random_state is None else int(self.random_state)
        peak = float(np.abs(X).max())
        self.mean_, self.scale_ = np.zeros(d), (peak if peak > 0 else 1.0)  # the reference's --normalize
        Xs = torch.tensor(X / self.scale_, dtype=torch.float32, device=self.device)
        nu = float(max(k - 1, 1))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            vae = _VAE(d, k, (128, 64, 32), (32, 32, 32, 64, 128), self.device)
            params = vae.parameters()
            sigma_head = set(map(id, vae.sigma2.parameters()))
            opt = torch.optim.Adam(params, lr=self.learning_rate, betas=(0.9, 0.999), eps=1e-4)
            gen = torch.Generator(device="cpu").manual_seed(seed)
            order, pos = torch.randperm(n, generator=gen), 0
            eye = torch.eye(b, dtype=torch.bool, device=self.device)
            for step in range(1, steps + 1):
                if pos + b > n:  # a new epoch, reshuffled
                    order, pos = torch.randperm(n, generator=gen), 0
                idx = order[pos : pos + b].to(self.device)
                pos += b
                x = Xs[idx]
                with torch.no_grad():
                    P = batch_transition_probabilities(torch.cdist(x, x).pow(2), self.perplexity)
                mu, s2 = vae.encode(x)
                z = mu + s2.sqrt() * torch.randn(mu.shape, generator=gen).to(self.device)
                x_mu, x_s2 = vae.decode(z)
                dof = vae.dof.clamp(0.1, 100)
                loglik = torch.distributions.StudentT(dof, x_mu, x_s2.sqrt(), validate_args=False).log_prob(x).sum(1)
                weight = P.sum(0).clamp(0.01, 2.0)
                kl = 0.5 * (mu**2 + s2 - torch.log(s2) - 1).sum(1).mean() * max(0.1, d / step)
                elbo = (loglik * weight).mean() - kl
                num = (1 + torch.cdist(z, z).pow(2) / nu).pow(-(nu + 1) / 2)
                p = P + 0.1 / b
                p = p / p.sum(1, keepdim=True)
                attraction = -(p * torch.log(num)).masked_fill(eye, 0).sum()
                repellant = torch.log(num.sum(1) - 1).sum()
                tsne = (attraction + repellant) / b * min(step, d)
                reg = self.l2 * sum((w**2).sum() / 2 for w in vae.weights())
                loss = self.tsne_weight * tsne + reg - elbo
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 10.0)
                for prm in params:
                    if prm.grad is not None:
                        c = 0.3 if id(prm) in sigma_head else 3.0
                        prm.grad.clamp_(-c, c)
                opt.step()
        self.vae_ = vae
        self.n_iter_ = steps
        self.n_features_in_ = d
        self.embedding_ = self.transform(X)
        return self

    def transform(self, X):
        import torch

        check_fitted(self, "vae_")
        X = as_float_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"`X` has {X.shape[1]} features; scvis was fitted with {self.n_features_in_}.")
        with torch.no_grad():
            xs = torch.tensor((X - self.mean_) / self.scale_, dtype=torch.float32, device=self.device)
            return self.vae_.encode(xs)[0].cpu().double().numpy()
