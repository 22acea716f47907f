"""``kaleido sweep DIR --out OUT`` (issue 16): every head of a directory of
exchange-format ``.npz`` files through the cycle model, on Dask.

A directory holds one ``.npz`` per head (:func:`kaleido.golden.workloads.save`)
and optionally a ``manifest.json`` (:data:`MANIFEST`, docs/SWEEP.md) naming
each file's model, prompt, denoising step, layer and head with its grid and
split; without one every ``*.npz`` is a head (step, layer and head read from
names such as ``s3_l12_h7.npz`` when they follow that pattern). The heads are
checked before any work starts, so a bad directory fails at once with the
file and value at fault.

Each (configuration, head) is one task: :func:`evaluate` loads the head and
runs :func:`kaleido.model.run_model`, :func:`kaleido.model.attention_stages`,
:func:`kaleido.energy.attention_energy` and
:func:`kaleido.golden.reuse_attention` (every query, or ``quality_rows``
of a long head). The tasks run on a ``distributed.LocalCluster`` (``workers`` processes, one thread each) or on
an existing cluster (``scheduler`` address; its workers must see ``DIR`` at
the same path). :func:`sweep` writes ``heads.csv`` and ``heads.parquet``
(one row per configuration and head), ``summary.json`` (per configuration the
whole-model speedup: the sum of dense cycles over the sum of cycles) and
plots.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Sequence

import numpy as np

from .checks import check_grid, check_split
from .config import KaleidoConfig

__all__ = [
    "MANIFEST",
    "MANIFEST_FORMAT",
    "Head",
    "SweepConfig",
    "discover",
    "configurations",
    "evaluate",
    "sweep",
    "summarise",
    "write_manifest",
]

#: the manifest's file name inside a head directory
MANIFEST = "manifest.json"
#: the manifest's ``format`` field
MANIFEST_FORMAT = "kaleido-heads/1"

_NAME = re.compile(r"s(?P<step>\d+)_l(?P<layer>\d+)_h(?P<head>\d+)\.npz$")


@dataclasses.dataclass(frozen=True)
class Head:
    """One head of a sweep: its file (absolute), where it comes from and its
    geometry (as the file holds it)."""

    file: str
    model: str
    prompt: str
    step: int
    layer: int
    head: int
    grid: tuple[int, int, int]
    split: tuple[int, int, int]
    n: int
    d: int


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """One hardware configuration of a design-space sweep."""

    F: int = 5
    P: int = 3
    accumulators: int = 3
    variant: str = "full"
    batch: int = 16
    lookahead: int = 4
    array_rows: int = 4
    array_cols: int = 4
    arrays: int = 1

    @property
    def name(self) -> str:
        return (
            f"F{self.F}P{self.P}_a{self.accumulators}_{self.variant}"
            f"_b{self.batch}_L{self.lookahead}_{self.array_rows}x{self.array_cols}x{self.arrays}"
        )

    def kaleido(self, split) -> KaleidoConfig:
        """The point's :class:`KaleidoConfig`: one array (or ``arrays``) of
        ``array_rows x array_cols``, ``P V`` unpaired (the sweep's space is
        the paper's knobs; the default design's small arrays are not one
        of them)."""
        return KaleidoConfig.one_array(
            split=tuple(split),
            F=self.F,
            P=self.P,
            group_thresholds=None,  # a sweep point is one (F, P) in every group
            accumulators=self.accumulators,
            batch=self.batch,
            lookahead=self.lookahead,
            array_rows=self.array_rows,
            array_cols=self.array_cols,
        )


def configurations(
    thresholds: Sequence[tuple[int, int]] = ((5, 3),),
    accumulators: Sequence[int] = (3,),
    variants: Sequence[str] = ("full",),
    **fixed,
) -> list[SweepConfig]:
    """The design space: every combination of ``thresholds`` (F, P),
    ``accumulators`` and ``variants``, the other :class:`SweepConfig`
    fields ``fixed``; each is checked (an invalid one names its value)."""
    from .model import VARIANTS

    out = []
    for (F, P), acc, variant in itertools.product(thresholds, accumulators, variants):
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
        if not isinstance(fixed.get("arrays", 1), int) or fixed.get("arrays", 1) < 1:
            raise ValueError(f"arrays must be a positive integer, not {fixed.get('arrays')!r}")
        c = SweepConfig(F=F, P=P, accumulators=acc, variant=variant, **fixed)
        c.kaleido((1, 1, 1))  # KaleidoConfig checks F, P, accumulators, batch, lookahead, array size
        out.append(c)
    if len({c.name for c in out}) != len(out):
        raise ValueError(f"the design space repeats a configuration: {[c.name for c in out]}")
    return out


def _int_triple(value, what: str) -> tuple[int, int, int]:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 3
        or not all(isinstance(x, int) and not isinstance(x, bool) for x in value)
    ):
        raise ValueError(f"{what} must be three integers, not {value!r}")
    return (int(value[0]), int(value[1]), int(value[2]))


def _npz_geometry(path: str) -> tuple[tuple[int, int, int], tuple[int, int, int], int, int]:
    """Grid, split, N and d of an exchange-format file, checked (the error
    names the file and the value at fault); reads only the headers of q,
    k, v."""
    from .golden.workloads import load

    try:
        w = load(path)
    except (ValueError, TypeError) as err:
        msg = str(err)
        raise ValueError(msg if path in msg else f"{path!r}: {msg}") from None
    return w.grid, w.split, w.n, w.d


def discover(directory: str | os.PathLike) -> list[Head]:
    """The heads of ``directory``: its ``manifest.json`` if it has one, else
    every ``*.npz`` in name order. Every file is opened and checked (q, k,
    v int8 of one shape, grid and split matching it, and the manifest's
    grid and split equal to the file's)."""
    directory = os.fspath(directory)
    if not os.path.exists(directory):
        raise FileNotFoundError(f"sweep directory {directory!r} does not exist")
    if not os.path.isdir(directory):
        raise ValueError(f"sweep input {directory!r} is not a directory")
    manifest = os.path.join(directory, MANIFEST)
    heads: list[Head] = []
    if os.path.exists(manifest):
        try:
            with open(manifest) as f:
                data = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{manifest!r} is not valid JSON: {err}") from None
        if not isinstance(data, dict) or not isinstance(data.get("heads"), list):
            raise ValueError(f"{manifest!r} must be an object with a 'heads' list (format {MANIFEST_FORMAT})")
        if data.get("format", MANIFEST_FORMAT) != MANIFEST_FORMAT:
            raise ValueError(f"{manifest!r}: format must be {MANIFEST_FORMAT!r}, not {data.get('format')!r}")
        for i, entry in enumerate(data["heads"]):
            where = f"{manifest!r} heads[{i}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
                raise ValueError(f"{where} must be an object with a 'file' name, not {entry!r}")
            path = os.path.join(directory, entry["file"])
            if not os.path.exists(path):
                raise FileNotFoundError(f"{where}: file {path!r} does not exist")
            grid, split, n, d = _npz_geometry(path)
            for key, have in (("grid", grid), ("split", split)):
                if key in entry and _int_triple(entry[key], f"{where} {key}") != have:
                    raise ValueError(f"{where}: {key} {entry[key]!r} does not match the file's {key} {list(have)!r}")
            ids = {}
            for key in ("step", "layer", "head"):
                value = entry.get(key, i if key == "head" else 0)
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"{where}: {key} must be a non-negative integer, not {value!r}")
                ids[key] = value
            heads.append(
                Head(
                    os.path.abspath(path),
                    str(entry.get("model", data.get("model", ""))),
                    str(entry.get("prompt", data.get("prompt", ""))),
                    ids["step"],
                    ids["layer"],
                    ids["head"],
                    grid,
                    split,
                    n,
                    d,
                )
            )
    else:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".npz"))
        for i, name in enumerate(files):
            path = os.path.join(directory, name)
            grid, split, n, d = _npz_geometry(path)
            m = _NAME.search(name)
            step, layer, head = (int(m["step"]), int(m["layer"]), int(m["head"])) if m else (0, 0, i)
            heads.append(Head(os.path.abspath(path), "", "", step, layer, head, grid, split, n, d))
    if not heads:
        raise ValueError(f"sweep directory {directory!r} holds no heads: no {MANIFEST} and no .npz files")
    return heads


def write_manifest(directory: str | os.PathLike, heads: Sequence[dict], *, model: str = "", prompt: str = "") -> str:
    """Write ``manifest.json`` for ``heads`` (dicts with ``file``, ``step``,
    ``layer``, ``head``, ``grid``, ``split`` and optionally ``model`` and
    ``prompt``) into ``directory``; returns its path."""
    path = os.path.join(os.fspath(directory), MANIFEST)
    entries = []
    for h in heads:
        e = {k: h[k] for k in ("file", "step", "layer", "head")}
        e["grid"] = [int(x) for x in check_grid(h["grid"])]
        e["split"] = [int(x) for x in check_split(h["split"])]
        for k in ("model", "prompt"):
            if k in h:
                e[k] = h[k]
        entries.append(e)
    with open(path, "w") as f:
        json.dump({"format": MANIFEST_FORMAT, "model": model, "prompt": prompt, "heads": entries}, f, indent=1)
    return path


def evaluate(
    head: Head,
    config: SweepConfig,
    quality_max_n: int = 4096,
    energy_table: str | None = None,
    quality_rows: int = 512,
) -> dict:
    """One row of the sweep table: ``head`` on ``config``. Cycles and ops of
    ``Q K^T`` (:func:`kaleido.model.run_model`), the whole attention's
    (:func:`kaleido.model.attention_stages`), energy
    (:func:`kaleido.energy.attention_energy`) and the attention output's
    PSNR and cosine against int8 attention without reuse
    (:func:`kaleido.golden.reuse_attention`): over every query of a head of
    at most ``quality_max_n`` tokens, else over ``quality_rows`` evenly
    spaced queries against every key (``psnr_rows``; 512 rows of a
    32,768-token head hold 16 M scores)."""
    from .energy import attention_energy
    from .golden.attention import reuse_attention
    from .golden.workloads import load
    from .model import attention_stages, run_model

    t0 = time.perf_counter()
    w = load(head.file)
    cfg = config.kaleido(w.split)
    r = run_model(w.q, w.k, w.grid, w.split, cfg, variant=config.variant, arrays=config.arrays)
    att = attention_stages(r, w.v, w.grid, w.split, cfg)
    energy = attention_energy(w.q, w.k, w.v, w.grid, w.split, cfg, r, energy_table)
    # quality: every query up to quality_max_n tokens, else quality_rows evenly spaced ones
    rows = None if w.n <= quality_max_n else np.linspace(0, w.n - 1, quality_rows).round().astype(np.int64)
    q = reuse_attention(w.q, w.k, w.v, w.grid, w.split, cfg.F, cfg.P, scales=w.scales, rows=rows).metrics["vs_int8"]
    row = {
        **{k: v for k, v in dataclasses.asdict(head).items() if k not in ("grid", "split")},
        "grid": "x".join(str(x) for x in head.grid),
        "split": ",".join(str(x) for x in head.split),
        "config": config.name,
        **dataclasses.asdict(config),
        "cycles": r.cycles,
        "dense_cycles": r.dense_cycles,
        "speedup": r.speedup,
        "utilization": r.utilization,
        "passes": r.passes,
        "beats": r.beats,
        **{f"ops_{k}": int(v) for k, v in r.ops.items()},
        **{f"{s}_cycles": int(v["cycles"]) for s, v in att["stages"].items()},
        **{f"{s}_dense_cycles": int(v["dense_cycles"]) for s, v in att["stages"].items()},
        **{f"pv_ops_{k}": int(v) for k, v in att["stages"]["pv"]["ops"].items()},
        "attention_cycles": att["attention"]["cycles"],
        "attention_dense_cycles": att["attention"]["dense_cycles"],
        "attention_speedup": att["attention"]["speedup"],
        "psnr_db": q["psnr"],
        "cosine": q["cosine"],
        "psnr_rows": w.n if rows is None else len(rows),
        "energy_kaleido_pj": energy["kaleido_pj"],
        "energy_dense_pj": energy["dense_pj"],
        "energy_savings": energy["savings"],
        "seconds": time.perf_counter() - t0,
    }
    return row


def summarise(table) -> dict:
    """Per configuration of a sweep table (a pandas DataFrame): heads,
    the whole-model speedup ``sum(dense_cycles) / sum(cycles)`` (``Q K^T``
    on the array) and the whole attention's, the energy savings (sums), and
    the mean, min and max per-head speedup."""
    out = {}
    for name, g in table.groupby("config", sort=False):
        out[name] = {
            "heads": len(g),
            "cycles": int(g["cycles"].sum()),
            "dense_cycles": int(g["dense_cycles"].sum()),
            "speedup": float(g["dense_cycles"].sum() / g["cycles"].sum()),
            "attention_cycles": int(g["attention_cycles"].sum()),
            "attention_dense_cycles": int(g["attention_dense_cycles"].sum()),
            "attention_speedup": float(g["attention_dense_cycles"].sum() / g["attention_cycles"].sum()),
            "energy_kaleido_pj": float(g["energy_kaleido_pj"].sum()),
            "energy_dense_pj": float(g["energy_dense_pj"].sum()),
            "energy_savings": float(g["energy_dense_pj"].sum() / g["energy_kaleido_pj"].sum()),
            "head_speedup": {
                "mean": float(g["speedup"].mean()),
                "min": float(g["speedup"].min()),
                "max": float(g["speedup"].max()),
            },
            "psnr_db_mean": float(g["psnr_db"].mean()),
        }
    return out


def _plots(table, out: str) -> list[str]:
    """Speedup per layer and per step (the sum of dense cycles over the sum
    of cycles of each, one line per configuration) and the histogram of the
    per-head speedup; PNG files in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    paths = []
    for key in ("layer", "step"):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for name, g in table.groupby("config", sort=False):
            s = g.groupby(key)[["dense_cycles", "cycles"]].sum()
            ax.plot(s.index, s["dense_cycles"] / s["cycles"], marker="o", label=name)
        ax.set_xlabel(key)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("speedup over dense (Q K^T cycles)")
        ax.set_title(f"speedup per {key}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(out, f"speedup_by_{key}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        paths.append(path)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, g in table.groupby("config", sort=False):
        ax.hist(g["speedup"], bins=min(40, max(5, len(g) // 2)), alpha=0.6, label=name)
    ax.set_xlabel("per-head speedup over dense (Q K^T cycles)")
    ax.set_ylabel("heads")
    ax.set_title("distribution over heads")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(out, "speedup_hist.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    paths.append(path)
    return paths


def _check_sweep_args(workers, quality_max_n, quality_rows, energy_table) -> None:
    """Refuse a bad argument of :func:`sweep` by name."""
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    for name, value in (("quality_max_n", quality_max_n), ("quality_rows", quality_rows)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    if energy_table is not None and not os.path.exists(energy_table):
        raise FileNotFoundError(f"energy table {energy_table!r} does not exist")


def _run_tasks(client, heads, configs, tasks, args: tuple, progress: bool) -> dict[tuple[int, int], dict]:
    """Every (configuration, head) task on the Dask ``client``: its row, by
    task (``args``: the quality and energy options :func:`evaluate` takes)."""
    from distributed import as_completed

    from .progress import batch_progress

    run = uuid.uuid4().hex[:8]
    quality_max_n, energy_table, quality_rows = args
    futures = {
        client.submit(
            evaluate,
            heads[h],
            configs[c],
            quality_max_n,
            energy_table,
            quality_rows,
            key=f"kaleido-sweep-{run}-{c}-{h}",
        ): (c, h)
        for c, h in tasks
    }
    rows: dict[tuple[int, int], dict] = {}
    bar = batch_progress("head") if progress else None
    for done, fut in enumerate(as_completed(futures), 1):
        rows[futures[fut]] = fut.result()
        if bar:
            bar(done, len(tasks))
    return rows


def sweep(
    directory: str | os.PathLike,
    out: str | os.PathLike,
    configs: Sequence[SweepConfig] | None = None,
    *,
    workers: int = 2,
    scheduler: str | None = None,
    quality_max_n: int = 4096,
    quality_rows: int = 512,
    energy_table: str | None = None,
    progress: bool = True,
    plots: bool = True,
) -> dict:
    """Evaluate every (configuration, head) on Dask and write the table,
    summary and plots into ``out``; returns the summary (with the paths it
    wrote). ``scheduler`` is an existing cluster's address; otherwise a
    ``LocalCluster`` of ``workers`` processes with one thread each runs and
    is closed at the end."""
    import pandas as pd
    from distributed import Client, LocalCluster

    heads = discover(directory)
    configs = list(configs or [SweepConfig()])
    _check_sweep_args(workers, quality_max_n, quality_rows, energy_table)
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)
    tasks = list(itertools.product(range(len(configs)), range(len(heads))))
    t0 = time.perf_counter()
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        rows = _run_tasks(client, heads, configs, tasks, (quality_max_n, energy_table, quality_rows), progress)
        where = client.scheduler_info().get("address", scheduler)
        n_workers = len(client.scheduler_info().get("workers", {}))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    table = pd.DataFrame([rows[t] for t in tasks])
    csv_path, parquet_path = os.path.join(out, "heads.csv"), os.path.join(out, "heads.parquet")
    table.to_csv(csv_path, index=False)
    table.to_parquet(parquet_path, index=False)
    files: dict = {"csv": csv_path, "parquet": parquet_path}
    summary: dict = {
        "directory": os.path.abspath(os.fspath(directory)),
        "heads": len(heads),
        "configurations": {c.name: dataclasses.asdict(c) for c in configs},
        "by_config": summarise(table),
        "cluster": {"scheduler": where, "workers": n_workers, "local": cluster is not None},
        "seconds": time.perf_counter() - t0,
        "files": files,
    }
    if plots:
        files["plots"] = _plots(table, out)
    summary_path = os.path.join(out, "summary.json")
    files["summary"] = summary_path
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=2)
    return summary


def _thresholds(text: str) -> tuple[int, int]:
    import argparse

    try:
        F, P = (int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a threshold pair must be F,P (two integers), not {text!r}") from None
    return F, P


def add_parser(sub) -> None:
    """The ``sweep`` subcommand of :mod:`kaleido.cli`."""
    p = sub.add_parser(
        "sweep",
        help="every head of a directory (or manifest) through the cycle model, on Dask",
        description="Evaluate every exchange-format head in DIR (manifest.json or *.npz) with the cycle model on "
        "a Dask cluster; write heads.csv, heads.parquet, summary.json and plots into OUT (docs/SWEEP.md).",
    )
    p.add_argument("directory", metavar="DIR", help="a directory of .npz heads, with or without manifest.json")
    p.add_argument("--out", required=True, metavar="OUT", help="output directory")
    p.add_argument("--workers", type=int, default=2, help="local cluster: worker processes, one thread each (2)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="use an existing Dask cluster (e.g. tcp://host:8786)")
    p.add_argument(
        "--thresholds", type=_thresholds, nargs="+", default=[(5, 3)], metavar="F,P", help="(F, P) pairs (5,3)"
    )
    p.add_argument("--accumulators", type=int, nargs="+", default=[3], help="3 and/or 4 (3)")
    p.add_argument("--variant", nargs="+", default=["full"], help="pe, pe-sh, pe-m, full (full)")
    defaults = SweepConfig()
    p.add_argument("--batch", type=int, default=defaults.batch)
    p.add_argument("--lookahead", type=int, default=defaults.lookahead)
    p.add_argument("--array-size", default="4x4", help="RxC pair groups (4x4)")
    p.add_argument("--arrays", type=int, default=1)
    p.add_argument(
        "--quality-max-n",
        type=int,
        default=4096,
        help="PSNR over every query of a head of at most this many tokens (4096), else over --quality-rows",
    )
    p.add_argument("--quality-rows", type=int, default=512, help="evenly spaced queries of a longer head (512)")
    p.add_argument("--energy-table", metavar="FILE.toml", default=None)
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_run)


def _run(args) -> int:
    try:
        rows, cols = (int(x) for x in args.array_size.lower().split("x"))
    except ValueError:
        raise ValueError(f"--array-size must be RxC, not {args.array_size!r}") from None
    configs = configurations(
        args.thresholds,
        args.accumulators,
        args.variant,
        batch=args.batch,
        lookahead=args.lookahead,
        array_rows=rows,
        array_cols=cols,
        arrays=args.arrays,
    )
    s = sweep(
        args.directory,
        args.out,
        configs,
        workers=args.workers,
        scheduler=args.scheduler,
        quality_max_n=args.quality_max_n,
        quality_rows=args.quality_rows,
        energy_table=args.energy_table,
        plots=not args.no_plots,
    )
    print(
        f"{s['heads']} heads x {len(configs)} configuration(s) on {s['cluster']['workers']} worker(s) "
        f"in {s['seconds']:.1f} s -> {args.out}"
    )
    for name, c in s["by_config"].items():
        print(
            f"{name}: whole-model speedup {c['speedup']:.3f}x (Q K^T), attention {c['attention_speedup']:.3f}x, "
            f"energy {c['energy_savings']:.3f}x; "
            f"per head {c['head_speedup']['min']:.3f}..{c['head_speedup']['max']:.3f}x"
        )
    sys.stdout.flush()
    return 0
