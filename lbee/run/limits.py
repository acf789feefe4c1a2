"""The documented range of every numeric setting: one place for the API, the CLI, YAML configs and the service.

[`lbee.run.settings.RunSettings`][lbee.RunSettings] (the analysis knobs), the entry parser of
``lbee report`` / ``lbee serve`` (`lbee.reports.config_entries`) and the
config's JSON Schema read these; ``docs/errors.md`` lists them. Each bound keeps
one request from asking for unbounded work (a cluster count of 10⁸, a sweep of
a million points) while staying far above what an analysis uses.
"""

from __future__ import annotations

from .._validation import MAX_SEED

__all__ = [
    "IGNORE_INDEX_RANGE",
    "MAX_A",
    "MAX_BATCH_SIZE",
    "MAX_CLASSES_SHOWN",
    "MAX_CLUSTERS",
    "MAX_IMAGE_SIZE",
    "MAX_BATCH_PIXELS",
    "MAX_TRIALS",
    "MAX_K",
    "MAX_NUM_CLASSES",
    "MAX_NUM_WORKERS",
    "MAX_O",
    "MAX_SEED",
    "MAX_SWEEP_POINTS",
    "MAX_THUMBNAILS",
    "SLICER_OPTIONS",
    "SWEEP_RANGES",
]

#: Hard (and easy) clusters C: LBEE uses 15 (5 per class). A run forms at most one cluster per image of its split
#: (more are capped, with a warning), and each cluster costs a description and a merge test.
MAX_CLUSTERS = 1000
#: Sentences kept per hard cluster.
MAX_K = 100
#: Split margin a (in standard deviations): beyond it no image is hard or easy.
MAX_A = 10.0
#: Severity o of the failure sentences (in standard deviations of ω).
MAX_O = 10.0
#: A mask value (``ignore_index``): a 32-bit label.
IGNORE_INDEX_RANGE = (-(2**31), 2**31 - 1)
#: Values in one sweep grid (``sweep: {K: [...], C: [...], o: [...]}``, ``lbee sweep --k-grid``): each is a
#: full describe.
MAX_SWEEP_POINTS = 50
#: A sweep grid's values: (type, lowest, highest), the range of the knob each one sets.
SWEEP_RANGES = {"K": (int, 1, MAX_K), "C": (int, 1, MAX_CLUSTERS), "o": (float, 0.0, MAX_O)}
#: Thumbnails per group on the report page, and classes shown.
MAX_THUMBNAILS = 200
MAX_CLASSES_SHOWN = 1000
#: Images per encoder batch, and data-loader processes.
MAX_BATCH_SIZE = 65_536
MAX_NUM_WORKERS = 256
#: A model's classes and its input side in pixels: a million classes made a 2 GB output layer of a small network,
#: and a 16,384-pixel side a 3 GB input tensor per image (ImageNet-21k has 21,841 classes; a model's input side is
#: rarely above 518).
MAX_NUM_CLASSES = 100_000
MAX_IMAGE_SIZE = 1024
#: Input pixels of one batch of a model (image_size² × images): the batch shrinks to fit (at 224 px, 334 images;
#: at 1,024 px, 16). Four 4,096-px images asked a resnet18 for more than 6 GB.
MAX_BATCH_PIXELS = 64 * 512 * 512
#: Noise draws per image and σ of `lbee sensitivity` (each draw is two images held in memory with the others of
#: that image): 1,500 took 2 GB for one image.
MAX_TRIALS = 100
#: The most conjunctions `lbee sentences generate --limit` may allow: each is a sentence to embed, and 131 M of them
#: took 2.8 GB before a sentence was written.
MAX_SENTENCE_LIMIT = 2_000_000
#: Iterations of a slicer's fit (Domino's EM, PlaneSpot's scvis), PCA dimensions, and a likelihood weight.
#: Domino's EM iterations, and its work: iterations × mixture components (a 300-byte job of 100,000 × 1,000 was
#: about 8 hours of a worker on 2,000 images; the default is 100 × 25).
MAX_EM_ITERATIONS = 1_000
MAX_EM_WORK = 100_000
#: scvis training steps PlaneSpot may be given (its own rule: 100 epochs of 512 images, at least 2,000 steps; a step
#: is about 0.12 s on 2,000 images here, so 50,000 held a job worker for 1.7 h).
MAX_SCVIS_STEPS = 5_000
MAX_DIMENSIONS = 16_384
MAX_WEIGHT = 1e6
#: The options a config or a job may give each slicer (``slicers: [{domino: {n_slices: 8}}]``): the range of each
#: number, ``"seed"`` for a seed, None for a choice or a flag (the slicer checks it). Its class takes others that
#: belong to the library, never to a config: Ward's ``memory`` (a folder on the machine that runs the job) and
#: PlaneSpot's ``device``.
SLICER_OPTIONS = {
    "ward": {"n_clusters": (1, MAX_CLUSTERS), "a": (0.0, MAX_A), "ward": None},
    "domino": {
        "n_slices": (1, MAX_CLUSTERS),
        "n_mixture_components": (1, MAX_CLUSTERS),
        "n_pca_components": (1, MAX_DIMENSIONS),
        "y_log_likelihood_weight": (0.0, MAX_WEIGHT),
        "y_hat_log_likelihood_weight": (0.0, MAX_WEIGHT),
        "max_iter": (1, MAX_EM_ITERATIONS),
        "tol": (0.0, 1.0),
        "reg_covar": (0.0, 1.0),
        "init_params": None,
        "confusion_noise": (0.0, 1.0),
        "random_state": "seed",
    },
    "planespot": {
        "reducer": None,
        "weight": (0.0, MAX_WEIGHT),
        "min_components": (1, MAX_CLUSTERS),
        "max_components": (1, MAX_CLUSTERS),
        "n_slices": (1, MAX_CLUSTERS),
        "soft_errors": None,
        "perplexity": (1.0, 1000.0),
        "scvis_iter": (1, MAX_SCVIS_STEPS),
        "random_state": "seed",
    },
}
