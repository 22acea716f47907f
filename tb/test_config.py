import dataclasses

import pytest

from kaleido import KaleidoConfig


def test_presets():
    h = KaleidoConfig.preset("hunyuan")
    w = KaleidoConfig.preset("wan")
    assert h.split == (16, 56, 56) and w.split == (44, 42, 42)
    assert h.d == w.d == 128
    # batches never cross a group: 56 = 16 + 16 + 16 + 8
    assert [n for _, n in h.batches] == [16] + [16, 16, 16, 8] * 2
    assert [n for _, n in w.batches] == [16, 16, 12, 16, 16, 10, 16, 16, 10]
    assert sum(n for _, n in h.batches) == 128


def test_acc_width_derived_from_batch():
    # 16 products of magnitude up to 2**14 -> values up to 2**18 -> 20 signed bits
    assert KaleidoConfig(batch=16).acc_width == 20
    assert KaleidoConfig(batch=1).acc_width == 16
    assert KaleidoConfig(batch=17).acc_width == 20
    assert KaleidoConfig(batch=33).acc_width == 21
    assert KaleidoConfig().buffer_width() == 23  # 128 * 2**14 = 2**21


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        KaleidoConfig().F = 3


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"F": 10}, "threshold F must be in 1..9"),
        ({"F": 0, "P": 0}, "threshold F must be in 1..9"),
        ({"F": 3, "P": 4}, "P <= F"),
        ({"P": 2.5}, "threshold P must be an integer"),
        ({"split": (16, 0, 112)}, "at least 1"),
        ({"split": (16, 56)}, "three integers"),
        ({"batch": 0}, "batch must be at least 1"),
        ({"array_rows": 0}, "array_rows must be at least 1"),
        ({"array_cols": 65}, "at most 64x64"),
        ({"accumulators": 2}, "accumulators must be 3 or 4"),
        ({"acc_width": 19}, "acc_width 19 is too narrow for batch 16"),
        ({"lookahead": -1}, "lookahead must be at least 1"),
        ({"group_thresholds": ((5, 3), (6, 4))}, "three of them"),
        ({"group_thresholds": ((5, 3), (6, 7), (5, 3))}, "P <= F"),
        ({"group_thresholds": 5}, "an (F, P) pair or three"),
        ({"sub_arrays": (3, 1)}, "sub_arrays (3, 1) must divide the 4x4 pass"),
        ({"sub_arrays": (2,)}, "sub_arrays must be two positive integers (rows, columns) or None, not (2,)"),
        ({"sub_arrays": (0, 2)}, "not (0, 2)"),
    ],
)
def test_init_wrong(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        KaleidoConfig(**kwargs)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset 'flux'"):
        KaleidoConfig.preset("flux")


def test_designs():
    """The default is the project's design (issue 14: small arrays and
    small-P pairing), ``one_array`` its reuse on one 4x4 array, ``paper``
    the paper's; another (F, P) without per-group thresholds is uniform."""
    from kaleido.config import DEFAULT_GROUP_THRESHOLDS, DESIGNS

    d, o, p = KaleidoConfig(), KaleidoConfig.one_array(), KaleidoConfig.paper()
    assert d.accumulators == 4 and d.thresholds == DEFAULT_GROUP_THRESHOLDS == ((7, 4), (7, 4), (6, 4))
    assert (d.sub_arrays, d.pv_pairs, o.sub_arrays, o.pv_pairs) == ((1, 1), True, None, False)
    assert o.accumulators == 4 and o.thresholds == DEFAULT_GROUP_THRESHOLDS
    assert p.accumulators == 3 and p.thresholds == ((5, 3),) * 3 and (p.F, p.P) == (5, 3)
    assert (p.sub_arrays, p.pv_pairs) == (None, False)
    assert (d.design, o.design, p.design) == ("default", "one_array", "paper")
    assert sorted(DESIGNS) == ["default", "one_array", "paper"]
    assert KaleidoConfig(pv_pairs=False).design is None  # no design has small arrays without pairing
    assert KaleidoConfig.preset("hunyuan", "one_array") == o
    assert KaleidoConfig(F=6).design is None
    # run-time thresholds keep the build: the hardware is still the named design's
    calibrated = ((5, 4), (6, 4), (6, 4))
    assert d.replace(group_thresholds=calibrated).design is None
    assert d.replace(group_thresholds=calibrated).hardware_design == "default"
    assert o.replace(group_thresholds=calibrated).hardware_design == "one_array"
    assert p.replace(group_thresholds=calibrated).hardware_design == "paper"
    assert KaleidoConfig(F=6).hardware_design is None  # P V's FULL threshold is built in
    assert d.replace(accumulators=3).hardware_design is None
    assert KaleidoConfig.preset("wan", "paper") == KaleidoConfig.paper(split=(44, 42, 42), name="wan")
    assert KaleidoConfig(F=5, P=3).thresholds == ((5, 3),) * 3  # no silent per-group thresholds
    assert d.replace(F=6).thresholds == ((6, 4),) * 3
    assert KaleidoConfig(F=5, P=3, group_thresholds=((7, 4), (7, 4), (6, 4))).thresholds == DEFAULT_GROUP_THRESHOLDS
    assert KaleidoConfig(group_thresholds=[[6, 4], [5, 3], [9, 9]]).thresholds == ((6, 4), (5, 3), (9, 9))
    with pytest.raises(ValueError, match="unknown design 'fast'"):
        KaleidoConfig.preset("hunyuan", "fast")


def test_design_flags():
    """``--design`` picks the design; ``--F``/``--P`` set one pair in every
    group; an unset flag keeps the design's value."""
    import argparse

    from kaleido.config import add_config_arguments, config_from_args

    ap = argparse.ArgumentParser()
    add_config_arguments(ap, ("F", "P", "accumulators"))
    assert config_from_args(ap.parse_args([])) == KaleidoConfig()
    assert config_from_args(ap.parse_args(["--design", "paper"])) == KaleidoConfig.paper()
    assert config_from_args(ap.parse_args(["--design", "paper", "--accumulators", "4"])).thresholds == ((5, 3),) * 3
    assert config_from_args(ap.parse_args(["--F", "6"])).thresholds == ((6, 4),) * 3
    with pytest.raises(SystemExit):
        ap.parse_args(["--design", "fast"])


def test_sub_arrays():
    """Small arrays behind a shared queue (issue 14): the shape, how many,
    the small array's own configuration; one array of the pass's shape is
    spelt ``None`` (so it is the default design, with its tag)."""
    cfg = KaleidoConfig(sub_arrays=(1, 2), pv_pairs=False)
    assert cfg.sub_shape == (1, 2) and cfg.n_arrays == 8
    sub = cfg.sub_config()
    assert (sub.array_rows, sub.array_cols, sub.sub_arrays, sub.n_arrays) == (1, 2, None, 1)
    assert cfg.tag.endswith("_n1x2") and KaleidoConfig(sub_arrays=[2, 2]).sub_arrays == (2, 2)
    one = KaleidoConfig.one_array()
    assert KaleidoConfig(sub_arrays=(4, 4), pv_pairs=False) == one and one.n_arrays == 1
    assert one.sub_shape == (4, 4) and "_n" not in one.tag and "_pp" not in one.tag
    # the default: sixteen 1x1 arrays, small-P pairing
    d = KaleidoConfig()
    assert (d.sub_arrays, d.sub_shape, d.n_arrays, d.pv_pairs) == ((1, 1), (1, 1), 16, True)
    assert d.tag.endswith("_n1x1_pp")
    # a pass of one unit on a side is its own 1x1 array: None
    assert KaleidoConfig(array_rows=1, array_cols=1).sub_arrays is None
