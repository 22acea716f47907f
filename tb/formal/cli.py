"""`make formal` (``python -m kaleido.tb.formal``): every proof of
:data:`~kaleido.tb.formal.registry.PROOFS`, or ``--only`` some, in a
process pool, into ``build/formal/report.json``.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from .base import (
    SOLVERS,
    Proof,
    checked_steps,
    covers,
    run_sby,
    timed_out,
)
from .registry import PROOFS


def main(argv: list[str] | None = None) -> int:
    """Run every proof (``--only`` a comma-separated subset) and write
    ``build/formal/report.json``: ``{block: {property: {status, engine,
    mode, depth, seconds}}}``; exit 1 when one fails."""
    import argparse
    import json
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ap = argparse.ArgumentParser(prog="python -m kaleido.tb.formal", description="make formal: SymbiYosys proofs")
    ap.add_argument("--only", default="")
    ap.add_argument("--out", default="build/formal/report.json")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="update the report's entries instead of replacing it")
    ap.add_argument(
        "--bmc",
        type=int,
        default=0,
        metavar="DEPTH",
        help="run the proofs as BMCs of DEPTH from reset instead (a counterexample is then a real trace)",
    )
    ap.add_argument(
        "--solver",
        choices=SOLVERS,
        default=None,
        help="run every named proof with this SMT solver instead of its own (Proof.solver)",
    )
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(PROOFS)
    for n in names:
        if n not in PROOFS:
            raise SystemExit(f"unknown proof {n!r}; known: {sorted(PROOFS)}")
    if args.bmc < 0:
        raise SystemExit(f"--bmc must be a depth >= 1, not {args.bmc}")
    proofs = {n: _variant(PROOFS[n], args.bmc, args.solver) for n in names}
    root = os.path.dirname(args.out) or "."
    report: dict = {}
    failed = []

    os.makedirs(root, exist_ok=True)

    def save() -> None:
        """Write the report after each proof (merged into the file under a
        lock with ``--keep``: another run may be writing it too)."""
        import fcntl

        with open(f"{args.out}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            merged = report
            if args.keep and os.path.exists(args.out):
                with open(args.out) as f:
                    merged = json.load(f)
                for block, props in report.items():
                    merged.setdefault(block, {}).update(props)
            with open(f"{args.out}.tmp", "w") as f:
                json.dump(merged, f, indent=2)
            os.replace(f"{args.out}.tmp", args.out)

    with ProcessPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(_timed, name, root, args.bmc, args.solver): name for name in names}
        for done in as_completed(futures):
            name = futures[done]
            ok, log, seconds, reached = done.result()
            p = proofs[name]
            entry = report_entry(p, ok, log, seconds, reached, os.path.join(root, name))
            status = entry["status"]
            report.setdefault(p.block, {})[p.prop] = entry
            save()
            print(f"{name:28s} {entry['status']:5s} {p.mode:5s} depth {p.depth:2d} {seconds:7.1f} s", flush=True)
            if status == "timeout":
                print(f"  stopped after {p.timeout} s: no counterexample in steps 0 .. {entry['checked_steps'] - 1}")
            elif not ok:
                failed.append(name)
                print(log)
    print(f"{len(names) - len(failed)} of {len(names)} proofs pass; {args.out}")
    return 1 if failed else 0


def report_entry(
    p: Proof, ok: bool, log: str, seconds: float, reached: dict[str, int | None], workdir: str
) -> dict[str, Any]:
    """One proof's entry in `make formal`'s report: its status (``pass``,
    ``timeout`` with the steps checked, ``fail``), engine, mode, depth,
    seconds, and its ``why``, memories and covers where it has them."""
    status = "pass" if ok else "timeout" if timed_out(log) else "fail"
    entry: dict[str, Any] = {"status": status, "engine": f"smtbmc {p.solver}", "mode": p.mode}
    entry.update(depth=p.depth, seconds=round(seconds, 1))
    if status == "timeout":
        entry["checked_steps"] = checked_steps(p, workdir)
    if p.why:
        entry["why"] = p.why
    if p.map_memories:
        entry["memories"] = "flip-flops"
    if p.mode == "cover":
        entry["covers"] = {c: ("reached" if step is not None else "unreached") for c, step in reached.items()}
        entry["steps"] = {c: step for c, step in reached.items() if step is not None}
    return entry


def _variant(proof: Proof, bmc: int = 0, solver: str | None = None) -> Proof:
    """``proof`` as a BMC of depth ``bmc`` from reset if given, with
    ``solver`` if given. A BMC from reset runs on yices unless ``solver``
    says otherwise: a proof's own solver is chosen for its own mode (the
    scheduler's partition is on z3 for its induction, and its depth-28 BMC
    from reset with a seeded bug finds the trace in 11 s on yices, 255 to
    379 s on z3)."""
    if bmc:
        proof = dataclasses.replace(proof, mode="bmc", depth=bmc, solver="yices")
    return dataclasses.replace(proof, solver=solver) if solver else proof


def _timed(
    name: str, root: str, bmc: int = 0, solver: str | None = None
) -> tuple[bool, str, float, dict[str, int | None]]:
    """Run one proof (by name: a process pool cannot send its builder),
    as a BMC of depth ``bmc`` from reset and with ``solver`` if given."""
    import time

    proof = _variant(PROOFS[name], bmc, solver)
    t0 = time.time()
    work = os.path.join(root, name)
    ok, log = run_sby(proof, work)
    seconds = time.time() - t0
    return ok, log, seconds, covers(proof, work) if proof.mode == "cover" else {}
