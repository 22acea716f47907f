"""Golden model: nibble-multiply accounting (spec sec. 9)."""

import itertools

import numpy as np
import pytest
from hypothesis import given

from kaleido.encoding import ABSENT, Part, Phase, Reuse, tile_parts
from kaleido.golden import COSTS, op_counts
from kaleido.golden.attention import oracle_product_costs
from kaleido.golden.reuse import follower_classes
from kaleido.loopnest import group_slices, units
from kaleido.tb.strategies import heads, thresholds


def _brute_force(Q, K, grid, split, F, P, kind):
    """Enumerate every pair group and channel, costing it from the spec's
    per-phase rules written out again independently."""
    qc, kc = follower_classes(Q, grid, split, F, P), follower_classes(K, grid, split, F, P)
    t1 = {Reuse.FULL: 0, Reuse.PARTIAL: 1, Reuse.NONE: 2}
    total = 0
    for sl, axis in group_slices(split):
        u = units(grid, axis)
        for c in range(sl.start, sl.stop):
            for (_ai, fi), (_aj, fj) in itertools.product(u, u):
                if kind == "dense":
                    total += 2 * (1 + (fi >= 0)) * (1 + (fj >= 0))
                    continue
                q = Reuse(qc[fi, c]) if fi >= 0 else None
                k = Reuse(kc[fj, c]) if fj >= 0 else None
                cost = 2
                if k is not None:
                    cost += t1[k]
                if q is not None:
                    cost += 0 if q == Reuse.FULL else 2
                if q is not None and k is not None:
                    if kind == "oracle":
                        cost += 0 if Reuse.FULL in (q, k) else (1 if k == Reuse.PARTIAL else 2)
                    elif q == Reuse.FULL:
                        cost += {
                            "hw3": {Reuse.FULL: 2, Reuse.PARTIAL: 1, Reuse.NONE: 0},
                            "hw4": {Reuse.FULL: 0, Reuse.PARTIAL: 0, Reuse.NONE: 0},
                        }[kind][k]
                    else:
                        cost += t1[k]
                total += cost
    return total


@given(heads(max_extent=4, max_group=3), thresholds())
def test_op_counts_match_enumeration(head, FP):
    Q, K, grid, split = head
    F, P = FP
    counts = op_counts(Q, K, grid, split, F, P)
    for kind in ("dense", "oracle", "hw3", "hw4"):
        assert counts[kind] == _brute_force(Q, K, grid, split, F, P, kind), kind


@given(heads(), thresholds())
def test_op_count_order(head, FP):
    Q, K, grid, split = head
    c = op_counts(Q, K, grid, split, *FP)
    n, d = Q.shape
    assert c["dense"] == 2 * n * n * d
    assert c["dense"] >= c["hw3"] >= c["hw4"] >= c["oracle"]
    # three accumulators: every complete pair group costs at least 4 of 8
    assert c["hw3"] * 2 >= c["dense"] - 2 * _unpaired_slack(Q, grid, split)
    # per-product oracle costs add up to the same oracle
    assert sum(int(x.sum()) for _, x in oracle_product_costs(Q, K, grid, split, *FP)) == c["oracle"]


def _unpaired_slack(Q, grid, split):
    """Nibble multiplies of products involving an unpaired token (they may be
    saved below the 50 % cap), a loose bound for the cap check."""
    slack = 0
    n = Q.shape[0]
    for sl, axis in group_slices(split):
        u = units(grid, axis)
        unpaired = int((u[:, 1] < 0).sum())
        slack += 2 * unpaired * n * (sl.stop - sl.start)
    return slack


def test_reuse_off_costs_dense():
    rng = np.random.default_rng(1)
    Q = rng.integers(-128, 128, (27, 5), dtype=np.int8)
    c = op_counts(Q, Q, (3, 3, 3), (1, 2, 2), 9, 9)
    assert c["dense"] == c["hw3"] == c["hw4"] == c["oracle"]


def test_constant_workload_caps():
    """All FULL: three accumulators cost 4 of 8 (50 %), four cost 2 (75 %)."""
    Q = np.full((16, 6), 37, np.int8)
    c = op_counts(Q, Q, (2, 2, 4), (2, 2, 2))
    assert c["hw3"] * 2 == c["dense"]
    assert c["hw4"] * 4 == c["dense"] == c["oracle"] * 4


def test_cost_tables_match_phase_table():
    """The per-phase hardware cost is the number of nibble multiplies the PE's
    decode table fires: a phase fires LO and/or HI at most once each."""
    for acc, kind in ((3, "hw3"), (4, "hw4")):
        for q, k in itertools.product(range(4), range(4)):
            fired = 0
            for phase in Phase:
                need = Part.ZERO
                for part in tile_parts(phase, q, k, acc).values():
                    need |= part
                fired += bin(int(need)).count("1")
            expected = COSTS[kind][q, k]
            assert fired == expected, (kind, q, k)
    assert COSTS["dense"][ABSENT, ABSENT] == 2


@pytest.mark.parametrize("kind", ["dense", "oracle", "hw3", "hw4"])
def test_costs_bounded_by_dense(kind):
    assert (COSTS[kind] <= COSTS["dense"]).all() and (COSTS[kind] >= 2).all()


def test_pv_op_counts_against_a_per_element_enumeration(seed):
    """P V with reuse on V: the counts equal an independent walk over every
    channel and token pair (classified one value at a time), for every rule."""
    from kaleido.encoding import Reuse
    from kaleido.golden.ops import PV_RULES, pv_op_counts
    from kaleido.golden.reuse import lead_eq
    from kaleido.golden.workloads import random_workload
    from kaleido.loopnest import group_slices, pairs

    w = random_workload((3, 3, 5), (2, 3, 2), seed % 1000)
    for F, P in ((5, 3), (3, 1), (9, 9)):
        expected = dict.fromkeys(PV_RULES, 0)
        for sl, axis in group_slices(w.split):
            anchors, followers, unpaired = pairs(w.grid, axis)
            for c in range(sl.start, sl.stop):
                for a, f in zip(anchors, followers, strict=True):
                    eq = int(lead_eq(w.v[a : a + 1, c], w.v[f : f + 1, c])[0])
                    cls = Reuse.FULL if eq >= F else Reuse.PARTIAL if eq >= P else Reuse.NONE
                    for rule, cost in PV_RULES.items():
                        expected[rule] += w.n * cost[cls]
                for rule, cost in PV_RULES.items():
                    expected[rule] += w.n * len(unpaired) * cost[3]
        assert pv_op_counts(w.v, w.grid, w.split, F, P) == expected
        assert expected["dense"] == 2 * w.n * w.n * w.d  # two nibble multiplies per product
        assert expected["dense"] >= expected["full_only"] >= expected["full_partial"]


def test_pv_rules_table():
    """Exhaustively, per class: the pre-add makes a FULL pair one 8x8 product
    (2 nibble multiplies), the shared high nibble a PARTIAL pair 3."""
    from kaleido.encoding import ABSENT, Reuse
    from kaleido.golden.ops import PV_RULES

    assert PV_RULES["full_partial"] == {Reuse.NONE: 4, Reuse.PARTIAL: 3, Reuse.FULL: 2, ABSENT: 2}
    assert all(PV_RULES["dense"][c] == (2 if c == ABSENT else 4) for c in (*Reuse, ABSENT))
    assert PV_RULES["full_only"][Reuse.PARTIAL] == 4


def test_pv_op_counts_bad_input():
    from kaleido.golden.ops import pv_op_counts

    V = np.zeros((8, 3), np.int8)
    with pytest.raises(ValueError, match="n_queries must be a positive integer, not 0"):
        pv_op_counts(V, (2, 2, 2), (1, 1, 1), n_queries=0)
    with pytest.raises(TypeError, match="V must have dtype int8"):
        pv_op_counts(V.astype(np.int16), (2, 2, 2), (1, 1, 1))
