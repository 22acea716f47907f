"""Run SCALE-Sim v3 (PyPI ``scalesim``) on GEMMs, one output-stationary
array: ``python scripts/scalesim_gemm.py ROWS COLS NAME:M:N:K ...``.

Runs inside the SCALE-Sim venv (``make scalesim-venv``: ``scalesim`` with
numpy < 2, pinned by ``scripts/scalesim-constraints.txt``); prints one JSON
line per GEMM: ``{"name", "M", "N", "K", "cycles", "utilization"}``, the
total cycles and compute utilization of SCALE-Sim's COMPUTE_REPORT.csv.
The project imports nothing from here (``kaleido.bench.scalesim`` calls it
as a subprocess).
"""

import csv
import json
import os
import sys
import tempfile

CONFIG = """[general]
run_name = kaleido

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:   1024
FilterSramSzkB:  1024
OfmapSramSzkB:   1024
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Dataflow : os
Bandwidth : 10
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: 10
IfmapSRAMBankNum: 10
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: 10
FilterSRAMBankNum: 10
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false
SparseRep : ellpack_block
OptimizedMapping : false
BlockSize : 8
RandomNumberGeneratorSeed : 40

[run_presets]
InterfaceBandwidth: CALC
UseRamulatorTrace: False
"""

LAYOUT_HEADER = (
    "Layer name,IFMAP Height Intraline Factor,IFMAP Width Intraline Factor,Filter Height Intraline Factor,"
    "Filter Width Intraline Factor,Channel Intraline Factor,Num Filter Intraline Factor,"
    "IFMAP Height Intraline Order,IFMAP Width Intraline Order,Channel Intraline Order,"
    "IFMAP Height Interline Order,IFMAP Width Interline Order,Channel Interline Order,"
    "Num Filter Intraline Order,Channel Intraline Order,Filter Height Intraline Order,"
    "Filter Width Intraline Order,Num Filter Interline Order,Channel Interline Order,"
    "Filter Height Interline Order,Filter Width Interline Order,\n"
)


def run(rows, cols, name, M, N, K):
    from scalesim.scale_sim import scalesim

    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "scale.cfg")
        topo = os.path.join(tmp, f"{name}.csv")
        layout = os.path.join(tmp, f"{name}_layout.csv")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(rows=rows, cols=cols))
        with open(topo, "w") as f:
            f.write("Layer, M, N, K,\n")
            f.write(f"{name}, {M}, {N}, {K},\n")
        with open(layout, "w") as f:
            f.write(LAYOUT_HEADER)
            f.write(f"{name},1,1,1,1,1,1,0,1,2,0,1,2,0,1,2,3,0,1,2,3,\n")
        out = os.path.join(tmp, "out")
        devnull = open(os.devnull, "w")
        stdout, sys.stdout = sys.stdout, devnull
        try:
            s = scalesim(
                save_disk_space=True, verbose=False, config=cfg, topology=topo, layout=layout, input_type_gemm=True
            )
            s.run_scale(top_path=out)
        finally:
            sys.stdout = stdout
            devnull.close()
        report = None
        for root, _, files in os.walk(out):
            if "COMPUTE_REPORT.csv" in files:
                report = os.path.join(root, "COMPUTE_REPORT.csv")
        if report is None:
            raise RuntimeError(f"SCALE-Sim wrote no COMPUTE_REPORT.csv for {name}")
        with open(report) as f:
            row = {k.strip(): v.strip() for k, v in next(csv.DictReader(f)).items() if k}
    return {
        "name": name,
        "M": M,
        "N": N,
        "K": K,
        "cycles": int(float(row["Total Cycles"])),
        "utilization": float(row["Overall Util %"]) / 100,
    }


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: scalesim_gemm.py ROWS COLS NAME:M:N:K ...")
    rows, cols = int(argv[0]), int(argv[1])
    for spec in argv[2:]:
        name, M, N, K = spec.split(":")
        print(json.dumps(run(rows, cols, name, int(M), int(N), int(K))), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
