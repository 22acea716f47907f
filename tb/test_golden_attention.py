"""Golden model: reuse attention, metrics, skip baselines, windowed classifier."""

import numpy as np
import pytest

from kaleido.golden import metrics, reuse_attention, skip_baselines
from kaleido.golden.attention import oracle_product_costs, windowed_classify, windowed_effective
from kaleido.golden.workloads import constant_workload, random_workload, synthetic_video


@pytest.fixture(scope="module")
def video():
    return synthetic_video("hunyuan", (2, 4, 4), "slow", seed=3)


def test_metrics():
    ref = np.array([[1.0, -2.0], [0.5, 4.0]])
    m = metrics(ref + 0.1, ref)
    assert m["mse"] == pytest.approx(0.01)
    assert m["psnr"] == pytest.approx(10 * np.log10(16 / 0.01))
    assert m["max_abs"] == pytest.approx(0.1)
    assert metrics(ref, ref)["psnr"] == float("inf")
    assert metrics(-ref, ref)["cosine"] == pytest.approx(-1)


def test_reuse_off_is_int8_reference(video):
    w = video
    r = reuse_attention(w.q, w.k, w.v, w.grid, w.split, 9, 9, scales=w.scales, reference=w.reference)
    assert np.array_equal(r.output, r.int8_reference)
    assert r.metrics["vs_int8"]["mse"] == 0
    assert r.metrics["vs_float"]["psnr"] > 30  # int8 quantisation alone


def test_reuse_degrades_gracefully(video):
    w = video
    exact = reuse_attention(w.q, w.k, w.v, w.grid, w.split, 5, 4, scales=w.scales)
    coarse = reuse_attention(w.q, w.k, w.v, w.grid, w.split, 3, 1, scales=w.scales)
    assert exact.float_reference is None and "vs_float" not in exact.metrics
    assert coarse.metrics["vs_int8"]["mse"] > exact.metrics["vs_int8"]["mse"] > 0


def test_constant_workload_is_lossless():
    w = constant_workload((2, 2, 3), (2, 3, 3))
    r = reuse_attention(w.q, w.k, w.v, w.grid, w.split, 5, 3, scales=w.scales)
    assert r.metrics["vs_int8"]["mse"] == 0


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"scales": (1.0, 1.0)}, "scales must be three real numbers"),
        ({"scales": (1.0, -1.0, 1.0)}, "finite and positive"),
        ({"scales": None}, "scales must be"),
    ],
)
def test_reuse_attention_wrong_scales(video, bad, message):
    w = video
    with pytest.raises((TypeError, ValueError), match=message):
        reuse_attention(w.q, w.k, w.v, w.grid, w.split, **bad)


def test_reuse_attention_wrong_v(video):
    w = video
    with pytest.raises(ValueError, match="V must have the shape of Q"):
        reuse_attention(w.q, w.k, w.v[:-1], w.grid, w.split, scales=w.scales)
    with pytest.raises(TypeError, match="V must have dtype int8, not int32"):
        reuse_attention(w.q, w.k, w.v.astype(np.int32), w.grid, w.split, scales=w.scales)


def test_skip_baselines_token_level(video):
    w = video
    out = skip_baselines(w.q, w.k, w.v, w.grid, w.split, 5, 3, scales=w.scales)
    n, d = w.q.shape
    oracle = sum(int(c.sum()) for _, c in oracle_product_costs(w.q, w.k, w.grid, w.split, 5, 3))
    assert out["ratios"]["equal"] == pytest.approx(1 - oracle / (2 * n * n * d))
    assert out["ratios"]["paper"] == 0.85
    for label in ("equal", "paper"):
        for name in ("skip_lowest", "skip_reused"):
            assert out[name][label]["mse"] > 0
            assert out["advantage"][label][name] == pytest.approx(out[name][label]["mse"] / out["reuse"]["mse"])
    # at the paper's 85 % both baselines lose to the reuse (paper fig. 9), and skipping more costs more
    assert min(out["advantage"]["paper"].values()) > 1
    for name in ("skip_lowest", "skip_reused"):
        assert out[name]["paper"]["mse"] > out[name]["equal"]["mse"]


def test_skip_lowest_drops_the_lowest_keys_of_each_row(seed):
    from kaleido.golden.attention import skip_lowest_keys

    rng = np.random.default_rng(seed)
    S = rng.integers(-50, 50, (9, 9))
    dropped = skip_lowest_keys(S, 1 / 3)
    assert (dropped.sum(axis=1) == 3).all()
    for i in range(9):
        kept, gone = S[i][~dropped[i]], S[i][dropped[i]]
        assert gone.max() <= kept.min()  # every dropped key scores at most every kept one
    assert not skip_lowest_keys(S, 0.0).any()
    assert (skip_lowest_keys(S, 1.0).sum(axis=1) == 8).all()  # a row keeps at least one key


def test_skip_reused_drops_the_most_reused_keys(video):
    from kaleido.encoding import Reuse
    from kaleido.golden.attention import skip_reused_keys
    from kaleido.golden.reuse import follower_classes

    w = video
    dropped = skip_reused_keys(w.k, w.grid, w.split, 5, 3, 0.25)
    assert (dropped == dropped[0]).all()  # the same keys in every row
    cls = follower_classes(w.k, w.grid, w.split, 5, 3)
    reused = 2 * (cls == Reuse.FULL).sum(axis=1) + (cls == Reuse.PARTIAL).sum(axis=1)
    assert dropped[0].sum() == round(0.25 * w.n)
    assert reused[dropped[0]].min() >= reused[~dropped[0]].max()


def test_windowed_classifier():
    const = constant_workload((2, 4, 4), (2, 2, 2))
    cls, _ = windowed_classify(const.q, const.grid, const.split, w=2, theta1=0.5, theta2=2.0)
    assert set(np.unique(cls)) == {2, 3}  # followers FULL, anchors marked ABSENT
    eff = windowed_effective(const.q, const.grid, const.split, w=4)
    assert np.array_equal(eff, const.q)
    rnd = random_workload((2, 4, 4), (2, 2, 2), seed=1)
    cls, anchor_of = windowed_classify(rnd.q, rnd.grid, rnd.split, w=4, theta1=1e-9, theta2=2e-9)
    assert set(np.unique(cls)) <= {0, 3}
    assert (anchor_of[0] % 4 == 0).all()  # t-channels: windows along x of 4 start at x = 0
    with pytest.raises(ValueError, match="window size w must be an integer >= 2, not 1"):
        windowed_classify(rnd.q, rnd.grid, rnd.split, w=1)
    with pytest.raises(ValueError, match="theta1 < theta2"):
        windowed_classify(rnd.q, rnd.grid, rnd.split, theta1=3, theta2=2)


def test_reuse_attention_rows_are_the_full_rows(seed):
    """``rows`` (issue 16: the quality of long heads in ``kaleido sweep``)
    gives the full computation's rows for those queries, against every key."""
    w = synthetic_video("hunyuan", (2, 4, 6), "fast", seed=seed % 1000)
    full = reuse_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, reference=w.reference)
    rows = np.random.default_rng(seed).choice(w.n, 7, replace=False)
    part = reuse_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, reference=w.reference, rows=rows)
    for a, b in ((full.output, part.output), (full.int8_reference, part.int8_reference)):
        np.testing.assert_allclose(a[rows], b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(full.float_reference[rows], part.float_reference, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="rows must be query indices in 0..47"):
        reuse_attention(w.q, w.k, w.v, w.grid, w.split, scales=w.scales, rows=[48])
