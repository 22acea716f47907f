# Kaleido: every target a newcomer needs. `make help` lists them.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= 2
SIM    ?=

.PHONY: help setup lock test test-fast verilog sim rtl soak formal mutate synth chip bench sweep tables report explore scalesim-venv capture-venv clean

help:
	@echo "make setup      create .venv and install the project and every tool it uses, at the versions in requirements.lock"
	@echo "make lock       upgrade: newest allowed tools in a scratch venv, every flow run with them, then rewrite requirements.lock"
	@echo "make test       run the whole default test suite (bootstraps .venv on a fresh clone)"
	@echo "make test-fast  every test that needs no HDL simulator (golden model, Amaranth simulator)"
	@echo "make verilog    write one Verilog file per design into build/verilog/"
	@echo "make sim        the attention core of the default design (16 1x1 arrays, small-P pairing) on a 1,024-token head"
	@echo "                (SIM=verilator, the default, or SIM=icarus; DEMO_ARGS=\"--design one_array\" for one 4x4 array): O checked"
	@echo "                bit for bit, cycles against the model and the dense core -> build/sim/result.json"
	@echo "                (WAVES=1 writes a waveform: FST on Icarus, VCD on Verilator; on Verilator without WAVES a plain binary,"
	@echo "                built with clang where found; KALEIDO_CXX=g++ picks another compiler)"
	@echo "                (CALIBRATE=1: the head's Q K^T thresholds chosen by kaleido calibrate on its other motion, at 40 + 1.5 dB)"
	@echo "make rtl        the cocotb regression on one simulator (SIM=icarus|verilator), PASS/FAIL table"
	@echo "make soak       10^6 cycles each through the array, the engine (one 4x4 array; 16 1x1 arrays) and the core, with stalls, on Verilator (SOAK_CYCLES=...)"
	@echo "make formal     SymbiYosys proofs (yices; z3 for one): stream rules, scoreboards, payload, response bounds and covers of the"
	@echo "                dispatcher blocks, array, small arrays' queue, buffer, softmax, pass former, tiled softmax,"
	@echo "                O accumulator, P V tile, tile loader and feeder, memory model and the core's ports; PE products"
	@echo "                for all int8; matcher function; scheduler partition (k-induction) -> build/formal/report.json,"
	@echo "                table in docs/FORMAL.md"
	@echo "make mutate     seeded bugs (tb/mutate.py) against the fast suite, each in a scratch copy -> build/mutate/report.json, docs/MUTATE.md (about 2 h; an interrupted run: MUTATE_ARGS=--resume)"
	@echo "make synth      Yosys/nextpnr area and Fmax of every block (flattened, ECP5 Fmax) and the whole core of every"
	@echo "                design (default, one_array, paper) and of the dense core (each distinct module synthesized once,"
	@echo "                the hierarchy summed), all cached by Verilog hash in build/synth/cache (logic"
	@echo "                transistors, buffers as SRAM bits, area overheads: key core) -> build/synth/report.json"
	@echo "                (provenance: commit, tools, Verilog hashes), docs/SYNTH_TABLE.md; a failing design is named with"
	@echo "                its log tail and tool version, the rest still finish, exit 1 (SYNTH_ARGS=--cores= skips the cores;"
	@echo "                --designs alone runs none; --flatten=one_array flattens a core too; cold: over an hour of CPU;"
	@echo "                --fmax-parts: each block's Fmax by parts, each distinct module placed once, an estimate: 20 min)"
	@echo "make chip       whole-chip area estimate at the paper's denominator (16,384 arrays, 96 MB SRAM; docs/SYNTH.md)"
	@echo "                from build/synth/report.json (adds its chip field) or docs/SYNTH_TABLE.md; make synth includes it"
	@echo "make bench      benchmarks and measured notes (golden, dispatcher, one 4x4 array's model at 32k tokens (goal 10 s, against the old walk), the whole core's model on make sim's head, softmax error, linear-layer reuse, every design's efficiency on the 8 held-out heads (~30 min), the core's simulated cycles/s on Verilator: make sim's head as its plain binary, median of 3 runs (goal 200k), and 128 tokens under cocotb; make synth run cold in a scratch build dir and warm, flattened and by parts, wall time against the 10-min goal) -> build/bench/*.json, *.csv"
	@echo "make sweep      kaleido sweep on a local Dask cluster: 16 synthetic heads x 4 configurations -> build/sweep/table/"
	@echo "                (heads.csv, heads.parquet, summary.json, plots; ~1 min; docs/SWEEP.md)"
	@echo "make tables     regenerate the measured tables in docs/ from the golden model"
	@echo "make report     regenerate docs/REPORT.md with plots and CSVs in docs/report/ (~20 s; ~100 s with SCALE-Sim:"
	@echo "                it runs SCALE-Sim when build/scalesim-venv exists, else uses the committed docs/report/scalesim.csv)"
	@echo "make explore    design exploration (issue 14): candidates ranked by speedup at 40 dB on tuning and held-out"
	@echo "                workloads, every core -> build/explore/results.json, .csv, summary.md (~40 min on 2 cores; EXPLORE_ARGS=--quick: 15 s, into build/explore/quick)"
	@echo "make scalesim-venv  SCALE-Sim 3.0.0 (PyPI) in its own venv build/scalesim-venv, numpy < 2, pinned by"
	@echo "                scripts/scalesim-constraints.txt (needs PyPI; the default tests do not)"
	@echo "make capture-venv  the optional .[capture] extra (torch, diffusers) in its own venv build/capture-venv, pinned by"
	@echo "                scripts/capture-constraints.txt (~6 min, 5.8 GB from PyPI); then tb/test_capture.py runs there:"
	@echo "                build/capture-venv/bin/python -m pytest tb/test_capture.py (kaleido capture: docs/CAPTURE.md)"
	@echo "make clean      remove build/ (generated files)"

$(STAMP): pyproject.toml requirements.lock scripts/setup.sh
	PYTHON=$(PYTHON) bash scripts/setup.sh
	@touch $(STAMP)

setup: $(STAMP)

lock:
	PYTHON=$(PYTHON) JOBS=$(JOBS) bash scripts/lock.sh

test: $(STAMP)
	$(PY) -m pytest -n $(JOBS) tb

test-fast: $(STAMP)
	$(PY) -m pytest -n $(JOBS) -m "not rtl and not soak and not slow" tb

verilog: $(STAMP)
	$(PY) -m kaleido.hdl.emit --out build/verilog

# the engine demo; DEMO_ARGS passes more options (--grid, --split, --batch, --preset, --seed)
WAVES ?= 0
# CALIBRATE=1: the head's thresholds chosen by kaleido calibrate on its other motion, sent at run time
CALIBRATE ?= 0
sim: $(STAMP)
	$(PY) -m kaleido.tb.demo $(if $(SIM),--sim $(SIM),) $(if $(filter 1,$(WAVES)),--waves,) $(if $(filter 1,$(CALIBRATE)),--calibrate,) $(DEMO_ARGS)

# -s shows cocotb's own PASS/FAIL summary table for every testbench
rtl: $(STAMP)
	$(PY) -m pytest -s -m rtl -k "$(or $(SIM),icarus)" tb

SOAK_CYCLES ?= 1000000
soak: $(STAMP)
	KALEIDO_SOAK_CYCLES=$(SOAK_CYCLES) $(PY) -m pytest -s -m soak tb

formal: $(STAMP)
	$(PY) -m kaleido.tb.formal
	$(PY) -m pytest -n $(JOBS) -m formal tb/test_formal.py -k "seeded or report"

mutate: $(STAMP)
	$(PY) -m kaleido.tb.mutate $(MUTATE_ARGS)

# SYNTH_ARGS passes more options (--designs, --cores, --flatten, --no-fmax, --jobs)
SYNTH_ARGS ?=
synth: $(STAMP)
	$(PY) -m kaleido.synth.flow $(SYNTH_ARGS)

chip: $(STAMP)
	$(PY) -m kaleido.synth.chip

bench: $(STAMP)
	$(PY) -m kaleido.bench.golden --out build/bench/golden.json
	$(PY) -m kaleido.bench.dispatch --out build/bench/dispatch.json
	$(PY) -m kaleido.bench.model --reference --out build/bench/model.json
	$(PY) -m kaleido.bench.core_model --out build/bench/core_model.json
	$(PY) -m kaleido.bench.softmax --out build/bench/softmax.json
	$(PY) -m kaleido.bench.linear --out build/bench/linear.json
	$(PY) -m kaleido.bench.heldout_efficiency --out build/bench
	$(PY) -m kaleido.tb.core_sim_bench --repeat 3 --out build/bench/core_sim.json
	$(PY) -m kaleido.bench.synth --out build/bench/synth.json

sweep: $(STAMP)
	$(PY) -m kaleido.bench.sweep --out build/sweep --workers $(JOBS)

tables: $(STAMP)
	$(PY) -m kaleido.bench.tables --out docs/GOLDEN_TABLE.md --csv build/tables/golden.csv

report: $(STAMP)
	$(PY) -m kaleido.bench.report

# the report's frontier plot reads build/explore/results.json when it exists
explore: $(STAMP)
	$(PY) -m kaleido.bench.explore --jobs $(JOBS) $(EXPLORE_ARGS)

# SCALE-Sim 3.0.0 fails under numpy 2: its own venv, pinned
SCALESIM_VENV := build/scalesim-venv
scalesim-venv: $(SCALESIM_VENV)/.installed

$(SCALESIM_VENV)/.installed: scripts/scalesim-constraints.txt
	$(PYTHON) -m venv $(SCALESIM_VENV)
	$(SCALESIM_VENV)/bin/pip install -c scripts/scalesim-constraints.txt scalesim==3.0.0
	@touch $@

# kaleido capture's torch + diffusers (5.8 GB) stay out of .venv: their own venv, pinned
CAPTURE_VENV := build/capture-venv
capture-venv: $(CAPTURE_VENV)/.installed

$(CAPTURE_VENV)/.installed: scripts/capture-constraints.txt requirements.lock pyproject.toml
	$(PYTHON) -m venv $(CAPTURE_VENV)
	$(CAPTURE_VENV)/bin/python -m pip install --quiet "pip==$$(sed -n 's/^pip==//p' requirements.lock)"
	$(CAPTURE_VENV)/bin/python -m pip install -c requirements.lock -c scripts/capture-constraints.txt -e ".[capture,test]"
	@touch $@

clean:
	rm -rf build
