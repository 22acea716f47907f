"""``make mutate`` (issue 19): seeded bugs, each applied to a scratch copy
of the tree and run against the fast suite; killed or survived, in
``build/mutate/report.json``.

A mutant is one exact text replacement in one file. It must match exactly
once, so a mutant that drifts from the code fails loudly instead of
silently testing nothing (``tb/test_mutate.py`` checks every mutant
applies, in the default suite). An equivalent mutant (one no test can
kill, because it does not change behaviour) names its reason and is left
out of the kill rate.

A mutant runs in stages, stopping at the first that fails (issue 46, item
5): its own ``tests`` (part of the fast suite, so a kill there is a kill
by the fast suite, only sooner), the whole fast suite, then its
``proofs``: the formal proofs ``make test`` runs (``tb/test_formal.py``'s
``test_proof``, not ``slow``), which the fast suite leaves out. A mutant
only a proof fails is killed in ``make test`` and reported ``killed_by:
"proof"``. Scores are per file group (:func:`group_of`), against the goal
of :data:`GOAL` each.

The record and the file groups are :mod:`kaleido.tb.mutant`'s; the
catalogue, :data:`MUTANTS`, is four modules' lists, in this order:
``tb/mutants_datapath.py`` (the RTL datapath), ``tb/mutants_model.py``
(the cycle model and the design exploration), ``tb/mutants_stages.py``
(the later RTL stages) and ``tb/mutants_targeted.py`` (issue 46's, each
naming its own tests). This module runs them and reports.

``python -m kaleido.tb.mutate [--only NAME,...] [--jobs N] [--targeted] [--merge] [--resume]
[--order auto|none|FILE]``

Before the mutants, a baseline run of the fast suite on the unchanged tree
(``--order auto``) checks that it passes and records each test's duration;
each mutant then runs the suite's tests shortest first (the same tests,
another order), so most seeded bugs die in seconds, not after the slow
core tests. The report is written after each mutant; ``--resume`` goes on
from an interrupted run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

from kaleido.tb.mutant import GROUPS as GROUPS
from kaleido.tb.mutant import ORDER_ENV, RECORD_ENV, Mutant, group_of
from kaleido.tb.mutants_datapath import DATAPATH
from kaleido.tb.mutants_model import MODEL
from kaleido.tb.mutants_stages import STAGES
from kaleido.tb.mutants_targeted import TARGETED

__all__ = [
    "Mutant",
    "MUTANTS",
    "GOAL",
    "apply",
    "run",
    "group_of",
    "scores",
    "stages_of",
    "percent_down",
    "scratch_lock",
    "FAST_SUITE",
]

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: the fast suite, stopping at the first failure; a test running past
#: ``TEST_TIMEOUT`` seconds fails (pytest-timeout): a mutant that makes a
#: simulation wait forever is killed there, not hours later at its cycle limit.
#: ``tb/test_mutate.py`` is left out: in a mutated tree the mutant's own text
#: is gone, so its check that every mutant applies fails on every mutant (a
#: false kill, not a test of the mutant). ``tb/test_lint.py`` (ruff, mypy) is
#: left out too: a seeded bug that leaves a name unused fails the linter, which
#: says nothing of the tests' strength
TEST_TIMEOUT = 600
FAST_SUITE = [
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    f"--timeout={TEST_TIMEOUT}",
    "-m",
    "not rtl and not soak and not slow and not formal",
    "--ignore=tb/test_mutate.py",
    "--ignore=tb/test_lint.py",
    "tb",
]

#: a mutant's proofs, with ``make test``'s marks (pyproject.toml's default
#: ``-m`` leaves out only ``soak`` and ``slow``)
PROOF_SUITE = ["-x", "-q", "-p", "no:cacheprovider", f"--timeout={TEST_TIMEOUT}", "-m", "not soak and not slow"]

#: the kill rate each file group should reach
GOAL = 0.95

#: every mutant, in the order they run and are reported
MUTANTS = [*DATAPATH, *MODEL, *STAGES, *TARGETED]


def _copy_tree(dest: pathlib.Path, root: pathlib.Path = ROOT) -> pathlib.Path:
    """A fresh scratch copy of the tree at ``dest`` (no build, git or venv)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        root,
        dest,
        symlinks=True,
        ignore=shutil.ignore_patterns(
            "build",
            ".git",
            ".venv",
            "__pycache__",
            ".pytest_cache",
            ".hypothesis",
            "*.egg-info",
            # tool caches another test process may be writing meanwhile (a race in copytree)
            ".mypy_cache",
            ".ruff_cache",
        ),
    )
    return dest


def apply(mutant: Mutant, dest: str | os.PathLike, root: pathlib.Path = ROOT) -> pathlib.Path:
    """A scratch copy of the tree at ``dest`` with ``mutant`` applied;
    raises ``ValueError`` unless ``old`` occurs exactly once."""
    dest = pathlib.Path(dest)
    text = (root / mutant.path).read_text()
    if text.count(mutant.old) != 1:
        raise ValueError(
            f"mutant {mutant.name!r}: {mutant.old!r} occurs {text.count(mutant.old)} times in {mutant.path}"
        )
    _copy_tree(dest, root)
    (dest / mutant.path).write_text(text.replace(mutant.old, mutant.new))
    return dest


def _git_clone(tree: pathlib.Path, root: pathlib.Path) -> None:
    """Give the scratch ``tree`` a git repository of its own sharing
    ``root``'s objects, at ``root``'s HEAD, its index that commit: the
    tests that read the history or compare the tree with HEAD (the
    synthesis report's staleness, ``tb/test_efficiency.py``) see the
    checkout's history and the mutated file as a change. Without it git
    finds the checkout around ``build/`` and looks for ``build/.../hdl`` in
    its history: a provenance test fails on every mutant, a false kill."""
    if not (root / ".git").exists():
        return
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "-q", "--bare", "--shared", str(root), str(tree / ".git")], check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    for args in (["config", "core.bare", "false"], ["update-ref", "--no-deref", "HEAD", head.stdout.strip()]):
        subprocess.run([*git, "-C", str(tree), *args], check=True)
    subprocess.run([*git, "-C", str(tree), "read-tree", "HEAD"], check=True)


def _env(tree: pathlib.Path, order: str | os.PathLike | None = None, record: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "KALEIDO_SEED": os.environ.get("KALEIDO_SEED", "1")}
    if order:
        env[ORDER_ENV] = str(pathlib.Path(order).resolve())
    if record:
        env[RECORD_ENV] = record
    return env


def baseline(work: str | os.PathLike, durations: str | os.PathLike, jobs: int = 2, deselect=()) -> dict:
    """The fast suite on an unchanged copy of the tree, each test's
    duration recorded into ``durations`` (the order :func:`run` takes).
    Returns ``passed``, ``failed`` (the tests that failed: a mutant run
    would count them as kills; ``--deselect`` them) and ``seconds``."""
    tree = _copy_tree(pathlib.Path(work))
    _git_clone(tree, ROOT)
    path = pathlib.Path(durations).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    suite = [*FAST_SUITE[1:-1], *(f"--deselect={d}" for d in deselect), FAST_SUITE[-1]]  # every test, no -x
    cmd = [sys.executable, "-m", "pytest", *(["-n", str(jobs)] if jobs > 1 else []), *suite]
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=tree, env=_env(tree, record=str(path)), capture_output=True, text=True)
    failed = _failed(proc.stdout) if proc.returncode else []
    return {"passed": proc.returncode == 0, "failed": failed, "seconds": round(time.time() - t0, 1)}


def _write(report: dict, out: str) -> dict:
    """``report`` with its summary into ``out``; returns the scores."""
    groups = scores(report)
    summary = {**groups["all"], "groups": {k: v for k, v in groups.items() if k != "all"}}
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump({"summary": summary, "mutants": report}, f, indent=2)
    return groups


def _failed(output: str) -> list[str]:
    """The tests pytest names as failed (its short summary, ``-ra``)."""
    out = []
    for line in output.splitlines():
        for tag in ("FAILED ", "ERROR "):
            if line.startswith(tag):
                out.append(line[len(tag) :].split(" - ")[0].strip())
    return out


def stages_of(
    mutant: Mutant, args: list[str] | None, targeted: bool, deselect: tuple[str, ...] = ()
) -> list[tuple[str, list[str]]]:
    """The runs a mutant goes through, in order: its own tests, the fast
    suite (``args`` instead when given; left out with ``targeted`` when the
    mutant names tests; without the tests ``deselect`` names), its proofs."""
    if args is not None:
        return [("fast", list(args))]
    stages = []
    if mutant.tests:
        stages.append(("tests", [*FAST_SUITE[:-1], *mutant.tests]))
    if not (targeted and mutant.tests):
        stages.append(("fast", [*FAST_SUITE[:-1], *(f"--deselect={d}" for d in deselect), FAST_SUITE[-1]]))
    if mutant.proofs:
        stages.append(("proof", [*PROOF_SUITE, *(f"tb/test_formal.py::test_proof[{p}]" for p in mutant.proofs)]))
    return stages


def run(
    mutant: Mutant,
    work: str | os.PathLike,
    args: list[str] | None = None,
    jobs: int = 2,
    timeout: float = 7200,
    targeted: bool = False,
    deselect: tuple[str, ...] = (),
    order: str | os.PathLike | None = None,
) -> dict:
    """Apply ``mutant`` in ``work`` and run its stages there (:func:`stages_of`;
    ``args`` instead when given); killed when pytest fails, ``killed_by``
    the stage (``"fast"`` for its own tests or the fast suite, ``"proof"``),
    ``failed`` the tests that failed. ``timeout`` (seconds) bounds each
    stage as a backstop: past it the run counts as a hang, killed. It must
    exceed the whole suite's time on the machine, or a survivor would be
    counted killed; single hung tests are caught by ``TEST_TIMEOUT``.
    ``targeted``: a mutant with ``tests`` skips the whole fast suite (a
    quick check; a survivor then has ``fast_suite: "targeted"``).
    ``deselect``: tests of the fast suite left out (ones that fail on the
    unchanged tree, which would kill every mutant), named in the result.
    ``order``: a durations file (:func:`baseline`): the tests run shortest
    first, so a seeded bug meets its quickest test first (the same tests
    run; only the order changes)."""
    tree = apply(mutant, work)
    _git_clone(tree, ROOT)
    env = _env(tree, order)
    t0 = time.time()
    killed, killed_by, failed, tail, ran = False, None, [], [], []
    for stage, stage_args in stages_of(mutant, args, targeted, deselect):
        ran.append(stage)
        cmd = [sys.executable, "-m", "pytest", *(["-n", str(jobs)] if jobs > 1 else []), *stage_args]
        proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
            killed, tail = proc.returncode != 0, output.strip().splitlines()[-3:]
            failed = _failed(output) if killed else []
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # pytest and its xdist workers
            proc.communicate()
            killed, tail, failed = True, [f"timeout after {timeout:g} s (a hang)"], []
        if killed:
            killed_by = "proof" if stage == "proof" else "fast"
            break
    return {
        "killed": killed,
        "killed_by": killed_by,
        "failed": failed,
        "stages": ran,
        "fast_suite": "targeted" if targeted and mutant.tests and "fast" not in ran else "whole",
        "deselected": list(deselect) if "fast" in ran else [],
        "seconds": round(time.time() - t0, 1),
        "area": mutant.area,
        "group": mutant.group,
        "suite": mutant.suite,
        "path": mutant.path,
        "equivalent": mutant.equivalent,
        "tail": tail,
    }


def percent_down(rate: float) -> str:
    """A rate in percent, rounded down to 0.1 (94.96 % is not 95.0 %)."""
    return f"{math.floor(rate * 1000) / 10:.1f} %"


def scores(report: dict) -> dict:
    """Per file group: mutants, non-equivalent ones, killed, killed only by
    a proof, the rate and whether it meets :data:`GOAL`; and ``all``."""
    groups: dict = {}
    for name, r in report.items():
        group = r.get("group") or group_of(r["path"])
        for key in (group, "all"):
            g = groups.setdefault(key, {"mutants": 0, "non_equivalent": 0, "killed": 0, "killed_by_proof": []})
            g["mutants"] += 1
            if not r["equivalent"]:
                g["non_equivalent"] += 1
                g["killed"] += bool(r["killed"])
                if r["killed"] and r.get("killed_by") == "proof":
                    g["killed_by_proof"].append(name)
    for g in groups.values():
        g["rate"] = g["killed"] / max(1, g["non_equivalent"])
        g["goal"] = GOAL
        g["meets_goal"] = g["killed"] >= GOAL * g["non_equivalent"]
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])))


def scratch_lock(folder: pathlib.Path):
    """An exclusive lock on ``folder/.lock``, or SystemExit: two runs sharing
    one scratch tree would delete each other's files, and every test of the
    other would then fail, a false kill."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another make mutate runs in {folder}: wait for it, or give this one another --out") from None
    return handle


def _order(args, todo: list[Mutant], work: pathlib.Path) -> str | None:
    """The durations file the mutants' fast suite runs in order of (``--order``),
    from a baseline run when ``auto`` and some mutant runs the whole suite;
    exits naming the tests that fail on the unchanged tree."""
    if args.order == "none" or not todo or (args.targeted and all(m.tests for m in todo)):
        return None
    if args.order != "auto":
        if not os.path.exists(args.order):
            raise SystemExit(f"--order: no durations file {args.order!r}")
        return args.order
    path = pathlib.Path(args.out).parent / "durations.json"
    print(f"baseline: the fast suite on the unchanged tree, each test's duration into {path}", flush=True)
    base = baseline(work, path, args.jobs, tuple(args.deselect))
    if not base["passed"]:
        failing = ", ".join(base["failed"]) or "see pytest's output"
        raise SystemExit(f"the fast suite fails on the unchanged tree ({failing}): fix it or --deselect it")
    print(f"baseline: passed in {base['seconds']:.0f} s", flush=True)
    return str(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated mutant names (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--timeout", type=float, default=7200, help="seconds per stage; past it the mutant is a hang: killed"
    )
    ap.add_argument(
        "--targeted",
        action="store_true",
        help="a mutant with its own tests runs those and its proofs, not the whole fast suite (a quick check)",
    )
    ap.add_argument("--merge", action="store_true", help="keep the other mutants' results of an earlier --out")
    ap.add_argument(
        "--deselect",
        action="append",
        default=[],
        help="a fast-suite test to leave out (one failing on the unchanged tree); repeatable, named in the report",
    )
    ap.add_argument("--out", default="build/mutate/report.json")
    ap.add_argument(
        "--order",
        default="auto",
        help="the fast suite's order: 'auto' (a baseline run on the unchanged tree records each test's duration "
        "into durations.json beside --out, then every mutant runs the tests shortest first), a durations file, "
        "or 'none' (the suite's own order)",
    )
    ap.add_argument("--resume", action="store_true", help="with --merge: skip the mutants --out already has")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    known = {m.name: m for m in MUTANTS}
    for n in names:
        if n not in known:
            raise SystemExit(f"unknown mutant {n!r}; known: {sorted(known)}")
    todo = [known[n] for n in names] if names else MUTANTS
    report: dict = {}
    if (args.merge or args.resume) and os.path.exists(args.out):
        with open(args.out) as f:
            report = {k: v for k, v in json.load(f)["mutants"].items() if k in known}
    if args.resume:
        todo = [m for m in todo if m.name not in report]
    work = pathlib.Path(args.out).parent / "tree"
    lock = scratch_lock(work.parent)  # held until the mutants are done
    order = _order(args, todo, work)
    for m in todo:
        report[m.name] = r = run(
            m,
            work,
            jobs=args.jobs,
            timeout=args.timeout,
            targeted=args.targeted,
            deselect=tuple(args.deselect),
            order=order,
        )
        verdict = f"killed ({r['killed_by']})" if r["killed"] else "SURVIVED"
        by = r["failed"][0] if r["failed"] else ""
        print(f"{m.name:36s} {verdict:15s} {r['seconds']:7.1f} s  {m.group}: {m.area}  {by}", flush=True)
        _write(report, args.out)  # after each mutant: an interrupted run resumes with --resume
    shutil.rmtree(work, ignore_errors=True)
    lock.close()
    groups = _write(report, args.out)
    print(f"score per file group (goal {GOAL:.0%} each; killed by a proof = killed in make test):")
    for key, g in groups.items():
        mark = "" if g["meets_goal"] else f"  BELOW the {GOAL:.0%} goal"
        proof = f", {len(g['killed_by_proof'])} only by a proof" if g["killed_by_proof"] else ""
        rate = percent_down(g["rate"])
        print(f"  {key:24s} {g['killed']:3d} of {g['non_equivalent']:3d} killed  {rate:>7s}{proof}{mark}")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
