"""Nibble-multiply accounting for ``Q K^T`` (spec sec. 9).

Costs are counted per 2x2 pair group (one PE) and channel; a dense product
of two int8 values is two 8x4 nibble multiplies, so a full pair group costs 8.
Tables are indexed ``[q, k]`` by the follower classes of the row pair and of
the column pair, with index 3 (``ABSENT``) for an unpaired token.
"""

from __future__ import annotations

import numpy as np

from ..checks import check_qk, check_thresholds
from ..encoding import ABSENT, Reuse
from .reuse import classes

__all__ = [
    "COSTS",
    "cost_table",
    "op_counts",
    "t1_cost",
    "t2_cost",
    "t3_cost",
    "class_histograms",
    "PV_RULES",
    "pv_op_counts",
]

_F, _P, _N = Reuse.FULL, Reuse.PARTIAL, Reuse.NONE


def t1_cost(k):
    """Nibble multiplies of T1 = (i, j'): column reuse only."""
    return {_F: 0, _P: 1, _N: 2}[k]


def t2_cost(q):
    """Nibble multiplies of T2 = (i', j): a row-side PARTIAL is no reuse."""
    return 0 if q == _F else 2


def t3_cost(kind, q, k):
    """Nibble multiplies of T3 = (i', j') for cost ``kind``."""
    if kind == "oracle":
        return 0 if (q == _F or k == _F) else (1 if k == _P else 2)
    if kind == "hw4" and q == _F and k != _N:
        return 0
    if q == _F:  # three accumulators cannot catch T0's product for T3
        return {_F: 2, _P: 1, _N: 0}[k]
    return {_F: 0, _P: 1, _N: 2}[k]


def cost_table(kind: str) -> np.ndarray:
    """4x4 int64 cost table ``[q, k]`` in nibble multiplies for ``kind`` in
    ``dense``, ``oracle``, ``hw3``, ``hw4``."""
    if kind not in ("dense", "oracle", "hw3", "hw4"):
        raise ValueError(f"cost kind must be 'dense', 'oracle', 'hw3' or 'hw4', not {kind!r}")
    table = np.zeros((4, 4), dtype=np.int64)
    for q in (_N, _P, _F):
        for k in (_N, _P, _F):
            table[q, k] = 8 if kind == "dense" else 2 + t1_cost(k) + t2_cost(q) + t3_cost(kind, q, k)
        # query pair against an unpaired key: T0 plus T2
        table[q, ABSENT] = 4 if kind == "dense" else 2 + t2_cost(q)
    for k in (_N, _P, _F):
        # unpaired query against a key pair: T0 plus T1
        table[ABSENT, k] = 4 if kind == "dense" else 2 + t1_cost(k)
    table[ABSENT, ABSENT] = 2
    return table


COSTS = {kind: cost_table(kind) for kind in ("dense", "oracle", "hw3", "hw4")}


def class_histograms(Z, grid, split, F, P):
    """Per channel, how many row (or column) units have each class 0..3:
    int64 ``(d, 4)``; unpaired tokens count as class 3."""
    hist = np.zeros((Z.shape[1], 4), dtype=np.int64)
    for sl, _, _, unpaired, cls in classes(Z, grid, split, F, P):
        for v in (0, 1, 2):
            hist[sl, v] = (cls == v).sum(axis=0)
        hist[sl, ABSENT] = len(unpaired)
    return hist


def op_counts(Q, K, grid, split, F=5, P=3) -> dict:
    """Nibble-multiply counts of ``Q K^T`` at the level of one PE per 2x2
    pair group: ``dense``, ``oracle`` (every pairwise reuse), ``hw3`` (three
    accumulators) and ``hw4`` (four accumulators). Plain Python ints."""
    grid, split = check_qk(Q, K, grid, split)
    F, P = check_thresholds(F, P)
    hq = class_histograms(Q, grid, split, F, P)
    hk = class_histograms(K, grid, split, F, P)
    return {kind: int(np.einsum("cq,ck,qk->", hq, hk, table)) for kind, table in COSTS.items()}


#: Candidate V-reuse rules for P V (issue 12): nibble multiplies per query
#: row of one anchor/follower token pair at one channel, by the follower's
#: class (NONE, PARTIAL, FULL), and of one unpaired token (ABSENT). V's reuse
#: runs along the contraction (tokens): a FULL follower turns ``p a + p' f``
#: into ``(p + p') a`` (a pre-add, one 8x8 multiply: 2 nibble multiplies);
#: a PARTIAL one shares the high nibble, ``(p + p') hi(a) + p lo(a) + p'
#: lo(f)`` (3). ``dense`` reuses nothing; ``full_only`` takes FULL pairs
#: only; ``full_partial`` both (it is also the oracle along the fixed
#: directions at nibble granularity).
PV_RULES = {
    "dense": {Reuse.NONE: 4, Reuse.PARTIAL: 4, Reuse.FULL: 4, ABSENT: 2},
    "full_only": {Reuse.NONE: 4, Reuse.PARTIAL: 4, Reuse.FULL: 2, ABSENT: 2},
    "full_partial": {Reuse.NONE: 4, Reuse.PARTIAL: 3, Reuse.FULL: 2, ABSENT: 2},
}


def pv_op_counts(V, grid, split, F=5, P=3, n_queries: int | None = None) -> dict:
    """Nibble-multiply counts of ``P V`` with reuse on V (column side, the
    channel groups and directions of Q and K), per :data:`PV_RULES`:
    ``n_queries`` (default ``N``) query rows, each over every token pair and
    unpaired token of every channel. P has no reuse, so every row costs the
    same. Plain Python ints."""
    from ..checks import as_int8, check_grid, check_split, is_int

    as_int8("V", V)
    grid = check_grid(grid, V.shape[0])
    split = check_split(split, V.shape[1])
    F, P = check_thresholds(F, P)
    n_queries = V.shape[0] if n_queries is None else n_queries
    if not is_int(n_queries) or n_queries < 1:
        raise ValueError(f"n_queries must be a positive integer, not {n_queries!r}")
    hist = class_histograms(V, grid, split, F, P).sum(axis=0)  # pairs per class, unpaired tokens
    return {
        rule: int(n_queries) * sum(int(hist[c]) * cost[c] for c in (Reuse.NONE, Reuse.PARTIAL, Reuse.FULL, ABSENT))
        for rule, cost in PV_RULES.items()
    }
