"""Synthetic video workloads and the ``.npz`` exchange format (spec sec. 10).

No video-DiT weights can be downloaded here, so every workload is
synthesised and says so (``Workload.meta["synthetic"]``):

1. a moving video made from a real photograph shipped by scikit-image
   (panned and zoomed; the ``fast`` variant also moves an object across it),
2. patchified to the ``T x H x W`` latent grid and embedded (linear patch
   embedding + LayerNorm, as a DiT block sees its tokens),
3. projected to Q, K, V with seeded random matrices,
4. Q and K channel magnitudes spread log-normally (``spread`` = sigma; real
   DiT queries and keys have a few dominant channels),
5. rotated by real 3-D RoPE with the preset's channel split,
6. quantised symmetrically per tensor to int8, the scales kept.

Random (no correlation) and constant (all reuse) bounds complete the set.
"""

from __future__ import annotations

import dataclasses
import numbers
import os

import numpy as np

from ..checks import as_int8, check_grid, check_split
from ..config import PRESETS

__all__ = [
    "Workload",
    "synthetic_video",
    "video_activations",
    "linear_weights",
    "random_workload",
    "constant_workload",
    "quantise",
    "rope_3d",
    "video_frames",
    "save",
    "load",
    "DEFAULT_SPREAD",
    "MOTIONS",
]

#: default log-normal sigma of Q/K channel magnitudes; see docs/WORKLOADS.md
DEFAULT_SPREAD = 0.5

#: camera motion per frame: (pan x px, pan y px, zoom factor, object speed px)
MOTIONS = {
    "slow": (1.0, 0.5, 1.01, 0.0),
    "fast": (6.0, 3.0, 1.04, 12.0),
}


@dataclasses.dataclass(frozen=True)
class Workload:
    """One attention head: int8 ``q, k, v`` ``(N, d)``, the grid and split,
    per-tensor scales, optional float tensors before quantisation (``qf``,
    ``kf``, ``vf``) and free-form ``meta``."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    grid: tuple
    split: tuple
    q_scale: float = 1.0
    k_scale: float = 1.0
    v_scale: float = 1.0
    qf: np.ndarray | None = None
    kf: np.ndarray | None = None
    vf: np.ndarray | None = None
    meta: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        validate(self.q, self.k, self.v, self.grid, self.split, (self.q_scale, self.k_scale, self.v_scale))
        object.__setattr__(self, "grid", tuple(int(x) for x in self.grid))
        object.__setattr__(self, "split", tuple(int(x) for x in self.split))

    @property
    def scales(self):
        return (self.q_scale, self.k_scale, self.v_scale)

    @property
    def reference(self):
        """Float ``(Q, K, V)`` before quantisation, or None."""
        return None if self.qf is None else (self.qf, self.kf, self.vf)

    @property
    def n(self):
        return self.q.shape[0]

    @property
    def d(self):
        return self.q.shape[1]


def validate(q, k, v, grid, split, scales):
    for name, x in (("q", q), ("k", k), ("v", v)):
        as_int8(name, x)
    if not (q.shape == k.shape == v.shape):
        raise ValueError(f"q, k, v must share one shape (N, d), not {q.shape!r}, {k.shape!r}, {v.shape!r}")
    check_grid(grid, q.shape[0])
    check_split(split, q.shape[1])
    for name, s in zip(("q_scale", "k_scale", "v_scale"), scales, strict=True):
        if not isinstance(s, numbers.Real) or isinstance(s, bool) or not np.isfinite(s) or s <= 0:
            raise ValueError(f"{name} must be a finite positive number, not {s!r}")


def quantise(x: np.ndarray):
    """Symmetric per-tensor int8 quantisation (spec sec. 1): ``s = max|x|/127``,
    ``q = clip(round_half_even(x / s), -128, 127)``. Returns ``(q, s)``."""
    x = np.asarray(x, dtype=np.float64)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    s = peak / 127 if peak > 0 else 1.0
    return np.clip(np.rint(x / s), -128, 127).astype(np.int8), s


def rope_3d(x: np.ndarray, grid, split, base: float = 10000.0) -> np.ndarray:
    """Real 3-D rotary position embedding: t-channels rotated by the frame
    index, x-channels by the column, y-channels by the row. Within a group of
    ``m`` channels, pairs ``(2i, 2i+1)`` rotate by ``pos * base**(-2i/m)``;
    an odd group's last channel is left as is."""
    T, H, W = check_grid(grid, x.shape[0])
    split = check_split(split, x.shape[1])
    t, y, xx = (a.ravel() for a in np.indices((T, H, W)))
    out = np.array(x, dtype=np.float64, copy=True)
    start = 0
    for m, pos in zip(split, (t, xx, y), strict=True):
        half = m // 2
        if half:
            freq = base ** (-2.0 * np.arange(half) / m)
            ang = pos[:, None] * freq[None, :]
            c, s = np.cos(ang), np.sin(ang)
            ev = out[:, start : start + 2 * half : 2].copy()
            od = out[:, start + 1 : start + 2 * half : 2].copy()
            out[:, start : start + 2 * half : 2] = ev * c - od * s
            out[:, start + 1 : start + 2 * half : 2] = ev * s + od * c
        start += m
    return out


def video_frames(grid, motion="slow", *, patch=8, image="astronaut", seed=0) -> np.ndarray:
    """float64 ``(T, H*patch, W*patch, 3)`` frames in [0, 1]: a camera panning
    and zooming over a scikit-image photograph; ``fast`` also sweeps an
    object (a crop of another photograph) across the view."""
    import skimage.data
    from skimage.transform import AffineTransform, resize, warp

    T, H, W = check_grid(grid)
    if motion not in MOTIONS:
        raise ValueError(f"motion must be one of {sorted(MOTIONS)}, not {motion!r}")
    if not isinstance(patch, numbers.Integral) or patch < 1:
        raise ValueError(f"patch must be a positive integer, not {patch!r}")
    try:
        photo = getattr(skimage.data, image)()
    except AttributeError:
        raise ValueError(f"image must name a scikit-image sample image, not {image!r}") from None
    photo = np.asarray(photo, dtype=np.float64) / 255.0
    if photo.ndim == 2:
        photo = np.repeat(photo[..., None], 3, axis=2)
    fh, fw = H * int(patch), W * int(patch)
    # the view covers about half the photograph, leaving room to pan
    scale = 2.0 * max(fh / photo.shape[0], fw / photo.shape[1])
    photo = resize(photo[..., :3], (round(photo.shape[0] * scale), round(photo.shape[1] * scale)), anti_aliasing=True)
    rng = np.random.default_rng(seed)
    vx, vy, zoom, obj_speed = MOTIONS[motion]
    ox = rng.uniform(0, photo.shape[1] - fw - vx * T) if photo.shape[1] - fw - vx * T > 0 else 0.0
    oy = rng.uniform(0, photo.shape[0] - fh - vy * T) if photo.shape[0] - fh - vy * T > 0 else 0.0
    sprite = None
    if obj_speed:
        other = np.asarray(skimage.data.coffee(), dtype=np.float64) / 255.0
        side = max(2, min(fh, fw) // 3)
        sprite = resize(other[100:300, 200:400], (side, side), anti_aliasing=True)
    frames = np.empty((T, fh, fw, 3))
    cy, cx = fh / 2, fw / 2
    for t in range(T):
        z = zoom**t
        # output (col, row) -> photo coordinates: zoom about the view centre, then pan
        tf = AffineTransform(scale=(1 / z, 1 / z), translation=(ox + vx * t + cx - cx / z, oy + vy * t + cy - cy / z))
        frame = warp(photo, tf, output_shape=(fh, fw), mode="reflect")
        if sprite is not None:
            side = sprite.shape[0]
            px = int(round(obj_speed * t)) % max(1, fw - side + 1)
            py = (fh - side) // 2
            frame[py : py + side, px : px + side] = sprite
        frames[t] = frame
    return frames


def _layer_norm(x):
    x = x - x.mean(axis=1, keepdims=True)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)


def _embedded_tokens(rng, grid, motion, seed, patch, image, d_model) -> np.ndarray:
    """The patchified frames, embedded to ``d_model`` and layer-normed:
    float64 ``(N, d_model)``, the input of the Q, K, V projections."""
    frames = video_frames(grid, motion, patch=patch, image=image, seed=seed)
    T, H, W = grid
    tokens = frames.reshape(T, H, patch, W, patch, 3).transpose(0, 1, 3, 2, 4, 5)
    tokens = tokens.reshape(T * H * W, patch * patch * 3)
    embed = rng.standard_normal((tokens.shape[1], d_model)) / np.sqrt(tokens.shape[1])
    return _layer_norm((tokens - tokens.mean()) @ embed)


def video_activations(grid=(4, 8, 8), motion="slow", seed=0, *, d_model=256, patch=8, image="astronaut"):
    """The activations a DiT block's linear layers see, from the same moving
    photograph as :func:`synthetic_video` (the patchified, embedded,
    layer-normed tokens before the projections; the same tokens as
    ``synthetic_video(..., seed=seed, d_model=d_model)`` projects). Returns
    ``(X, scale, Xf)``: int8 ``(N, d_model)``, its scale and the float
    activations."""
    grid = check_grid(grid)
    if not isinstance(d_model, numbers.Integral) or d_model < 1:
        raise ValueError(f"d_model must be a positive integer, not {d_model!r}")
    x = _embedded_tokens(np.random.default_rng(seed), grid, motion, seed, patch, image, int(d_model))
    q, s = quantise(x)
    return q, s, x


def linear_weights(d_in: int, d_out: int, seed: int = 0):
    """A seeded weight matrix of a linear layer (Gaussian, ``1/sqrt(d_in)``
    scale, as at initialisation), quantised to int8: ``(W, scale, Wf)``,
    ``W`` of shape ``(d_in, d_out)``."""
    for name, v in (("d_in", d_in), ("d_out", d_out)):
        if not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{name} must be a positive integer, not {v!r}")
    wf = np.random.default_rng(seed + 7919).standard_normal((int(d_in), int(d_out))) / np.sqrt(d_in)
    w, s = quantise(wf)
    return w, s, wf


def synthetic_video(
    preset="hunyuan",
    grid=(4, 8, 8),
    motion="slow",
    seed=0,
    *,
    spread=DEFAULT_SPREAD,
    patch=8,
    image="astronaut",
    d_model=None,
    rope_base=10000.0,
) -> Workload:
    """A synthetic attention head from a moving photograph (see module doc).

    Parameters
    ----------
    preset : ``"hunyuan"`` or ``"wan"`` (channel split, d = 128), or an
        explicit split ``(d_t, d_x, d_y)``.
    grid : ``(T, H, W)`` latent tokens.
    motion : ``"slow"`` or ``"fast"``.
    seed : seeds the view's start, projections and channel gains.
    spread : log-normal sigma of per-channel-pair Q/K magnitudes; 0 gives
        equal magnitudes.
    """
    if isinstance(preset, str):
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known presets: {sorted(PRESETS)}")
        split = PRESETS[preset]["split"]
    else:
        split = check_split(preset)
    grid = check_grid(grid)
    if not isinstance(spread, numbers.Real) or not 0 <= float(spread) <= 4:
        raise ValueError(f"spread must be a real number in [0, 4], not {spread!r}")
    d = sum(split)
    d_model = d_model or 2 * d
    rng = np.random.default_rng(seed)
    x = _embedded_tokens(rng, grid, motion, seed, patch, image, d_model)
    proj = [rng.standard_normal((d_model, d)) / np.sqrt(d_model) for _ in range(3)]
    qf, kf, vf = (x @ w for w in proj)
    for t in (qf, kf):
        gain = np.exp(float(spread) * rng.standard_normal((d + 1) // 2))
        t *= np.repeat(gain, 2)[:d][None, :]  # one gain per RoPE channel pair
    qf = rope_3d(qf, grid, split, rope_base)
    kf = rope_3d(kf, grid, split, rope_base)
    (q, qs), (k, ks), (v, vs) = quantise(qf), quantise(kf), quantise(vf)
    meta = {
        "synthetic": True,
        "kind": "video",
        "preset": preset if isinstance(preset, str) else None,
        "motion": motion,
        "seed": int(seed),
        "spread": float(spread),
        "image": image,
    }
    return Workload(q, k, v, grid, split, qs, ks, vs, qf, kf, vf, meta)


def random_workload(grid=(4, 8, 8), split=(16, 56, 56), seed=0) -> Workload:
    """Uniform random int8 tensors: no correlation, the lower bound of reuse."""
    grid = check_grid(grid)
    split = check_split(split)
    rng = np.random.default_rng(seed)
    n, d = grid[0] * grid[1] * grid[2], sum(split)
    q, k, v = (rng.integers(-128, 128, (n, d), dtype=np.int8) for _ in range(3))
    return Workload(
        q, k, v, grid, split, 1 / 127, 1 / 127, 1 / 127, meta={"synthetic": True, "kind": "random", "seed": int(seed)}
    )


def constant_workload(grid=(4, 8, 8), split=(16, 56, 56), seed=0) -> Workload:
    """Every token equal (one random row repeated): every follower is FULL,
    the upper bound of reuse."""
    grid = check_grid(grid)
    split = check_split(split)
    rng = np.random.default_rng(seed)
    n, d = grid[0] * grid[1] * grid[2], sum(split)
    q, k, v = (np.repeat(rng.integers(-128, 128, (1, d), dtype=np.int8), n, axis=0) for _ in range(3))
    return Workload(
        q, k, v, grid, split, 1 / 127, 1 / 127, 1 / 127, meta={"synthetic": True, "kind": "constant", "seed": int(seed)}
    )


# ---------------------------------------------------------------------------
# Exchange format
# ---------------------------------------------------------------------------


def save(path, workload: Workload) -> None:
    """Write the exchange format: one ``.npz`` with int8 ``q``, ``k``, ``v``
    ``(N, d)``, int ``grid`` and ``split`` (3 each) and float ``q_scale``,
    ``k_scale``, ``v_scale``."""
    if not isinstance(workload, Workload):
        raise TypeError(f"save() takes a Workload, not {type(workload).__name__}")
    np.savez(
        path,
        q=workload.q,
        k=workload.k,
        v=workload.v,
        grid=np.array(workload.grid, dtype=np.int64),
        split=np.array(workload.split, dtype=np.int64),
        q_scale=np.float64(workload.q_scale),
        k_scale=np.float64(workload.k_scale),
        v_scale=np.float64(workload.v_scale),
    )


def load(path) -> Workload:
    """Read and validate an exchange-format ``.npz`` (see :func:`save`);
    the scales are optional and default to 1."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"workload file {str(path)!r} does not exist")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as err:
        raise ValueError(f"{str(path)!r} is not a readable .npz file: {err}") from None
    with data:
        missing = [key for key in ("q", "k", "v", "grid", "split") if key not in data.files]
        if missing:
            raise ValueError(f"{str(path)!r} lacks the arrays {missing}; it has {sorted(data.files)}")
        arrays = {key: data[key] for key in data.files}
    for key in ("grid", "split"):
        a = arrays[key]
        if a.shape != (3,) or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{str(path)!r}: {key} must be 3 integers, not {a.dtype} {a.shape!r}")
    scales = []
    for key in ("q_scale", "k_scale", "v_scale"):
        if key in arrays:
            a = arrays[key]
            if a.shape != () or not np.issubdtype(a.dtype, np.floating):
                raise ValueError(f"{str(path)!r}: {key} must be a float scalar, not {a.dtype} {a.shape!r}")
            scales.append(float(a))
        else:
            scales.append(1.0)
    return Workload(
        arrays["q"],
        arrays["k"],
        arrays["v"],
        tuple(int(x) for x in arrays["grid"]),
        tuple(int(x) for x in arrays["split"]),
        q_scale=scales[0],
        k_scale=scales[1],
        v_scale=scales[2],
        meta={"source": os.fspath(path)},
    )
