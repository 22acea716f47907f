"""What issue 43's goals need of a design, from one head's measured figures.

A design misses a goal by a number; this module says what would have to
change to meet it, with the design's own reuse, so a reader sees whether
a goal is a matter of better hardware or of more reuse.

* :func:`energy_headroom`: the head's energy savings if every operation
  the reuse leaves cost what a dense operation costs, operand reads
  included (each compute stage's dense energy but its buffer writes scaled
  by the share of its operations left), with the operations the design
  computes (``hw``) and the fewest an exact reuse could (``oracle``), the
  dispatch free. The softmax, the drains' buffer writes and the DRAM
  traffic are the same in both cores: a reuse cannot save them, and if they
  alone exceed ``dense / goal`` no compute stage can meet it.
* :func:`area_headroom`: the core area (and the logic beside the design's
  own buffers) allowed at the measured speedup in time, and the speedup
  the built area would need; the same at the paper's chip denominator.

Both are ceilings of a kind, not bounds: a design could also save operand
reads the dense core makes, or shrink buffers both cores have.
"""

from __future__ import annotations

__all__ = ["GOALS", "COMPUTE_STAGES", "UNSCALED_KINDS", "energy_headroom", "area_headroom", "headroom", "headroom_line"]

#: issue 43's goals: energy savings per head, throughput per mm^2 (one core;
#: the paper's chip), speedup in time
GOALS = {"energy_savings": 1.3, "per_mm2_core": 1.2, "per_mm2_chip": 1.5, "time_speedup": 1.5}
#: the stages whose operations the reuse removes (the softmax, dispatch and
#: io are not scaled)
COMPUTE_STAGES = ("qk", "pv")
#: the event kinds no reuse scales: a stage's buffer writes (the drains of
#: S and of partial O, once per output whatever the reuse) and DRAM traffic
UNSCALED_KINDS = ("sram_write_byte", "dram_byte")


def _check_goal(name: str, goal: float) -> None:
    if not goal > 0:
        raise ValueError(f"{name} must be positive, not {goal!r}")


def _pj(events: dict, pj: dict, kinds=None) -> float:
    return sum(n * pj[k] for k, n in events.items() if kinds is None or k in kinds)


def energy_headroom(events: dict, pj: dict, ops: dict, goal: float = GOALS["energy_savings"]) -> dict:
    """``events``: ``{stage: {"kaleido": {kind: n}, "dense": {kind: n}}}``
    and ``pj`` (``{kind: pJ}``), :func:`kaleido.energy.attention_energy`'s
    ``events`` and ``table["pj"]`` (SRAM at flat prices), with ``qk`` and
    ``pv``; ``ops``: ``{stage: {"dense": n, "oracle": n, "hw": n}}`` for
    ``qk`` and ``pv`` (the cycle model's). A stage's dense energy but its
    :data:`UNSCALED_KINDS` scales with its operations. Returns ``measured``
    (dense / Kaleido), ``ceiling`` (``hw`` and ``oracle``: the savings at a
    dense operation's cost), ``fixed_share`` (what no reuse scales, of the
    dense head), ``keep_max`` (the largest share of the scalable dense
    energy a design may spend to meet ``goal``; at most 0: unreachable)
    and ``keep`` (``hw``, ``oracle``: the share the operations left would
    spend)."""
    _check_goal("goal", goal)
    missing = [s for s in COMPUTE_STAGES if s not in events or s not in ops]
    if missing:
        raise ValueError(f"energy_headroom needs the stages {list(COMPUTE_STAGES)}; missing {missing}")
    for s in COMPUTE_STAGES:
        if not ops[s].get("dense", 0) > 0:
            raise ValueError(f"stage {s!r}: dense ops must be positive, not {ops[s].get('dense')!r}")
    dense = sum(_pj(v["dense"], pj) for v in events.values())
    kaleido = sum(_pj(v["kaleido"], pj) for v in events.values())
    kinds = [k for k in pj if k not in UNSCALED_KINDS]
    scalable = {s: _pj(events[s]["dense"], pj, kinds) for s in COMPUTE_STAGES}
    compute = sum(scalable.values())
    fixed = dense - compute

    def left(which: str) -> float:
        return sum(scalable[s] * ops[s][which] / ops[s]["dense"] for s in COMPUTE_STAGES)

    return {
        "goal": goal,
        "measured": dense / kaleido,
        "ceiling": {w: dense / (fixed + left(w)) for w in ("hw", "oracle")},
        "fixed_share": fixed / dense,
        "keep_max": (dense / goal - fixed) / compute,
        "keep": {w: left(w) / compute for w in ("hw", "oracle")},
    }


def area_headroom(eff: dict, goals: dict | None = None) -> dict:
    """``eff``: :func:`kaleido.efficiency.efficiency`'s figures (with
    ``core_sram``). Returns per level ``core`` and ``chip``: ``goal``,
    ``measured`` (throughput per mm^2), ``time_needed`` (the speedup in
    time the built area needs: goal x area ratio) and ``area_ratio_max``
    (the area ratio allowed at the measured speedup: speedup / goal); for
    the core also the area at flat SRAM prices: ``area_mm2``,
    ``area_budget_mm2`` and ``logic_budget_mm2`` (that budget less the
    design's own buffers), ``logic_mm2`` and ``dense_logic_mm2``."""
    goals = {**GOALS, **(goals or {})}
    for key in ("per_mm2_core", "per_mm2_chip"):
        _check_goal(key, goals[key])
    if not eff.get("core_sram"):
        raise ValueError("area_headroom needs the cores' buffers (efficiency's core_sram): re-run `make synth`")
    time = eff["time_speedup"]
    out: dict = {}
    for level in ("core", "chip"):
        goal, ratio = goals[f"per_mm2_{level}"], eff["area_ratio"][level]
        out[level] = {
            "goal": goal,
            "measured": time / ratio,
            "time_needed": goal * ratio,
            "area_ratio_max": time / goal,
        }
    flat = eff["core_sram"]["flat"]
    budget = flat["dense_mm2"]["total"] * time / goals["per_mm2_core"]
    out["core"].update(
        area_mm2=flat["kaleido_mm2"]["total"],
        area_budget_mm2=budget,
        logic_budget_mm2=budget - flat["kaleido_mm2"]["buffers"],
        logic_mm2=flat["kaleido_mm2"]["logic"],
        dense_logic_mm2=flat["dense_mm2"]["logic"],
    )
    return out


def headroom(energy: dict, eff: dict | None) -> dict:
    """Both, from :func:`kaleido.efficiency.head_energy`'s result (which
    carries ``ops``) and the design's efficiency (``None`` or an error:
    energy only)."""
    out = {"energy": energy_headroom(energy["events"], energy["table"]["pj"], energy["ops"])}
    if eff and "error" not in eff and eff.get("core_sram"):
        out["area"] = area_headroom(eff)
    return out


def headroom_line(room: dict) -> str:
    """One printable line of :func:`headroom`'s figures."""
    e = room["energy"]
    text = (
        f"goals (issue 43): energy {e['goal']}x less needs the compute stages at <= {e['keep_max']:.1%} of dense "
        f"(at a dense op's cost: ops built {e['keep']['hw']:.1%}, oracle {e['keep']['oracle']:.1%}; "
        f"savings {e['ceiling']['hw']:.3f}x, oracle {e['ceiling']['oracle']:.3f}x)"
    )
    if "area" not in room:
        return text
    core, chip = room["area"]["core"], room["area"]["chip"]
    return (
        f"{text}; {core['goal']}x per mm^2 needs a time speedup of {core['time_needed']:.2f}x at this core area "
        f"(or logic <= {core['logic_budget_mm2']:.4f} mm^2, built {core['logic_mm2']:.4f}); "
        f"{chip['goal']}x per chip mm^2 needs {chip['time_needed']:.2f}x"
    )
