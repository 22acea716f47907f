"""One design point of the exploration: :class:`Candidate` (its levers,
checked on construction, and the :class:`kaleido.config.KaleidoConfig`
it runs with), the adaptive threshold modes :data:`ADAPTIVE`, and the two
reference points every family starts from, :data:`PAPER` and
:data:`DEFAULT`. The sweep's lists of candidates are
:mod:`kaleido.explore.candidate_sets`'."""

from __future__ import annotations

import dataclasses

from ..config import KaleidoConfig
from ..golden.grouped import check_group_thresholds
from ..stage_timing import DISPATCHES, ISSUES, ORDERS

__all__ = ["ADAPTIVE", "Candidate", "PAPER", "DEFAULT"]


#: adaptive threshold modes (:func:`measure`)
ADAPTIVE = (None, "uniform", "group", "group-calibrated")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One design point. ``thresholds``: one ``(F, P)`` or three (t, x, y);
    ``v_full``: V's FULL threshold per group (default each group's ``F``);
    ``adaptive``: ``None``, ``"uniform"`` (per head, the fastest rung of
    :data:`LADDER` at or above the floor), ``"group"`` (that, then each
    group's ``F`` lowered while the floor holds) or ``"group-calibrated"``
    (``"group"``'s choice on :func:`calibration_spec`'s head, the same
    layer on other input, at ``margin`` dB above the floor, applied to this
    head); ``rtl``: ``yes``,
    ``config`` or ``no`` (see module doc); ``area``: the cost estimate."""

    name: str
    family: str
    thresholds: tuple = (5, 3)
    v_full: tuple | None = None
    accumulators: int = 3
    rows: int = 4
    cols: int = 4
    arrays: int = 1
    order: str = "lfsr"
    window: int | None = None
    issue: str = "array"
    #: how passes reach several arrays (:data:`kaleido.stage_timing.DISPATCHES`)
    dispatch: str = "round-robin"
    #: ``(r, c)``: each ``rows x cols`` pass split over ``r x c`` arrays in step
    sub_array: tuple | None = None
    lookahead: int = 4
    adaptive: str | None = None
    #: dB above the floor a ``"group-calibrated"`` candidate chooses at
    margin: float = 0.0
    pv_small: int | None = None
    #: ``(rows, cols)``: P V on one array of that shape (16 PEs) instead of
    #: the candidate's Q K^T arrays (the core's P V stage is one 4x4 ``PvArray``)
    pv_shape: tuple | None = None
    rtl: str = "yes"
    area: str = "the built design"
    note: str = ""

    def __post_init__(self):
        check_group_thresholds(self.thresholds)
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, not {self.order!r}")
        if self.issue not in ISSUES:
            raise ValueError(f"issue must be one of {ISSUES}, not {self.issue!r}")
        if self.dispatch not in DISPATCHES:
            raise ValueError(f"dispatch must be one of {DISPATCHES}, not {self.dispatch!r}")
        if self.sub_array is not None:
            r, c = self.sub_array
            if self.issue != "array" or self.arrays != 1 or self.rows % r or self.cols % c:
                raise ValueError(
                    f"sub_array {r}x{c} splits one {self.rows}x{self.cols} array's passes (issue 'array'), "
                    f"not {self.arrays} arrays with issue {self.issue!r}"
                )
        if self.adaptive not in ADAPTIVE:
            raise ValueError(f"adaptive must be one of {ADAPTIVE}, not {self.adaptive!r}")
        if not isinstance(self.margin, (int, float)) or not 0 <= self.margin <= 20:
            raise ValueError(f"margin must be a number of dB in [0, 20], not {self.margin!r}")
        if self.pv_small is not None and (
            isinstance(self.pv_small, bool) or not isinstance(self.pv_small, int) or not 1 <= self.pv_small <= 16
        ):
            raise ValueError(f"pv_small must be None or an integer in 1..16, not {self.pv_small!r}")
        if self.pv_shape is not None and (
            not isinstance(self.pv_shape, tuple)
            or len(self.pv_shape) != 2
            or not all(isinstance(x, int) and x > 0 for x in self.pv_shape)
            or self.pv_shape[0] * self.pv_shape[1] != 16
        ):
            raise ValueError(f"pv_shape must be None or (rows, cols) of one 16-PE array, not {self.pv_shape!r}")
        if self.rtl not in ("yes", "config", "no"):
            raise ValueError(f"rtl must be 'yes', 'config' or 'no', not {self.rtl!r}")
        if self.rows * self.cols * self.arrays != 16:
            raise ValueError(
                f"candidates compare at 16 PEs: {self.arrays} x {self.rows}x{self.cols} has "
                f"{self.rows * self.cols * self.arrays}"
            )

    def config(self, split) -> KaleidoConfig:
        fp = check_group_thresholds(self.thresholds)
        return KaleidoConfig.one_array(
            F=fp[0][0],
            P=fp[0][1],
            group_thresholds=fp,
            split=tuple(split),
            accumulators=self.accumulators,
            array_rows=self.rows,
            array_cols=self.cols,
            lookahead=self.lookahead,
        )


#: the paper's design, as built: (5, 3), three accumulators, one 4x4 array, scheduler and matcher
PAPER = Candidate("paper", "paper", note="the paper's design (spec sec. 5-8), KaleidoConfig.paper()")

#: the project's default reuse on one 4x4 array (``KaleidoConfig.one_array()``,
#: the default design until the small arrays became it): per-group
#: thresholds t (7,4) x (7,4) y (6,4) on Q K^T at run time, P V's FULL
#: threshold 7, four accumulators. The candidate keeps its name "default"
#: (the results' label); the default design is the built candidate
#: "default 16x 1x1 queue, P V 4x4 + small-P pairs" (:func:`small_p_candidates`)
DEFAULT = Candidate(
    "default",
    "default",
    ((7, 4), (7, 4), (6, 4)),
    v_full=(7, 7, 7),
    accumulators=4,
    area="4 accumulators (measured) + run-time per-group threshold registers (docs/SYNTH.md)",
    note="the default reuse on one 4x4 array, KaleidoConfig.one_array()",
)
