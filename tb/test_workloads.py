"""Synthetic workloads and the .npz exchange format."""

import numpy as np
import pytest

from kaleido.golden import effective, reuse_scores
from kaleido.golden.reuse import follower_classes
from kaleido.golden.workloads import (
    Workload,
    constant_workload,
    load,
    quantise,
    random_workload,
    rope_3d,
    save,
    synthetic_video,
)


def test_quantise():
    x = np.array([-2.0, -1.0, 0.0, 0.5, 1.0])
    q, s = quantise(x)
    assert q.dtype == np.int8 and s == pytest.approx(2 / 127)
    assert list(q) == [-127, -64, 0, 32, 64]  # 31.75 -> 32, 63.5 -> 64 (half-even)
    assert quantise(np.zeros(3))[1] == 1.0


def test_rope_is_a_rotation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24, 9))
    y = rope_3d(x, (2, 3, 4), (3, 4, 2))
    # per rotated pair the norm is kept; token 0 (all positions 0) is unchanged
    assert np.allclose(y[0], x[0])
    assert np.allclose(np.hypot(y[:, 0], y[:, 1]), np.hypot(x[:, 0], x[:, 1]))
    assert np.allclose(y[:, 2], x[:, 2])  # odd group: the last channel stays
    assert not np.allclose(y, x)


@pytest.mark.parametrize("motion", ["slow", "fast"])
def test_synthetic_video(motion):
    w = synthetic_video("wan", (2, 4, 6), motion, seed=1)
    assert w.q.shape == (48, 128) and w.q.dtype == np.int8 and w.split == (44, 42, 42)
    assert w.meta["synthetic"] and w.meta["motion"] == motion
    assert np.abs(w.q).max() == 127  # the scale uses the full range
    w2 = synthetic_video("wan", (2, 4, 6), motion, seed=1)
    assert np.array_equal(w.q, w2.q) and np.array_equal(w.v, w2.v)  # seeded
    assert not np.array_equal(w.q, synthetic_video("wan", (2, 4, 6), motion, seed=2).q)


def test_video_has_more_reuse_than_random_and_spread_matters():
    def full_fraction(w):
        c = follower_classes(w.q, w.grid, w.split)
        return (c[c != 3] == 2).mean()

    video = synthetic_video("hunyuan", (4, 8, 8), "slow", seed=0)
    assert full_fraction(video) > 2 * full_fraction(random_workload((4, 8, 8), seed=0))
    flat = synthetic_video("hunyuan", (4, 8, 8), "slow", seed=0, spread=0.0)
    assert full_fraction(video) > full_fraction(flat)
    assert full_fraction(constant_workload((4, 8, 8))) == 1.0


def test_slow_has_more_reuse_than_fast():
    def saved(w):
        c = follower_classes(w.q, w.grid, w.split)
        return (c[c != 3] == 2).mean()

    assert saved(synthetic_video(grid=(4, 8, 8), motion="slow")) > saved(synthetic_video(grid=(4, 8, 8), motion="fast"))


def test_save_load_roundtrip(tmp_path):
    w = synthetic_video("hunyuan", (2, 2, 3), "fast", seed=4)
    save(tmp_path / "w.npz", w)
    r = load(tmp_path / "w.npz")
    for name in ("q", "k", "v"):
        assert np.array_equal(getattr(r, name), getattr(w, name))
    assert r.grid == w.grid and r.split == w.split and r.scales == w.scales
    assert (reuse_scores(r.q, r.k, r.grid, r.split) == reuse_scores(w.q, w.k, w.grid, w.split)).all()


def test_load_defaults_scales(tmp_path):
    q = np.zeros((4, 3), np.int8)
    np.savez(tmp_path / "x.npz", q=q, k=q, v=q, grid=[1, 2, 2], split=[1, 1, 1])
    assert load(tmp_path / "x.npz").scales == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(
    "arrays, message",
    [
        ({"q": np.zeros((4, 3), np.int16)}, "q must have dtype int8, not int16"),
        ({"grid": [2, 2, 2]}, r"grid \(2, 2, 2\) holds 8 tokens, but the tensor has N = 4"),
        ({"split": [1, 1, 2]}, "sums to 4, but the head dimension d is 3"),
        ({"grid": [1.0, 2.0, 2.0]}, "grid must be 3 integers"),
        ({"split": [1, 2]}, "split must be 3 integers"),
        ({"k": np.zeros((4, 2), np.int8)}, "q, k, v must share one shape"),
        ({"q_scale": np.float64(-1.0)}, "q_scale must be a finite positive number"),
        ({"v": None}, r"lacks the arrays \['v'\]"),
    ],
)
def test_load_rejects(tmp_path, arrays, message):
    q = np.zeros((4, 3), np.int8)
    data = {"q": q, "k": q, "v": q, "grid": [1, 2, 2], "split": [1, 1, 1], **arrays}
    np.savez(tmp_path / "bad.npz", **{k: v for k, v in data.items() if v is not None})
    with pytest.raises((TypeError, ValueError), match=message):
        load(tmp_path / "bad.npz")


def test_load_missing_and_garbage(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load(tmp_path / "nope.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is not a readable .npz file"):
        load(tmp_path / "junk.npz")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: synthetic_video("flux"), "unknown preset 'flux'"),
        (lambda: synthetic_video(motion="warp"), "motion must be one of"),
        (lambda: synthetic_video(grid=(0, 2, 2)), "at least 1"),
        (lambda: synthetic_video(spread=-1), "spread must be a real number in"),
        (lambda: synthetic_video(image="nonexistent_picture"), "must name a scikit-image sample image"),
        (
            lambda: Workload(
                np.zeros((4, 3)), np.zeros((4, 3), np.int8), np.zeros((4, 3), np.int8), (1, 2, 2), (1, 1, 1)
            ),
            "q must have dtype int8, not float64",
        ),
    ],
)
def test_generator_rejects(call, message):
    with pytest.raises((TypeError, ValueError), match=message):
        call()


def test_effective_on_workload_keeps_anchors():
    w = synthetic_video(grid=(2, 4, 4))
    assert np.array_equal(effective(w.k, w.grid, w.split)[0], w.k[0])
