PYTHON ?= python3
N_JOBS ?= 2
export DMLBENCH_DATA_MIRROR ?= $(abspath ../shared/datasets)

.PHONY: install test quickstart check-quickstart reproduce-table4 reproduce-all reproduce-quick \
	reproduction-report bench clean

install:
	$(PYTHON) -m pip install -e '.[test]'

test:
	$(PYTHON) -m pytest -q

quickstart:
	dmlbench run configs/quickstart.yaml

check-quickstart: quickstart
	dmlbench check results/quickstart --baseline results/baselines/quickstart.csv

# one target per table/figure of the papers (`dmlbench reproduce` lists them), e.g.
# `make reproduce-ying2012-table4`; a target whose data are missing exits 3 with the reason
reproduce-%:
	dmlbench reproduce $* --n-jobs $(N_JOBS)

reproduce-table4: reproduce-ying2012-table4
	dmlbench report --all --readme README.md

# every target that can run here, then results/REPRODUCTION.md (+ .html) and the README status
reproduce-all:
	dmlbench reproduce --all --n-jobs $(N_JOBS)
	dmlbench report --all --readme README.md

# the reduced targets (CI): checked against results/baselines/<id>_quick.csv
reproduce-quick:
	dmlbench reproduce --all --quick --check --n-jobs $(N_JOBS)

# the precise companions (targets.yaml `precise:`): 100 splits on the sets below 2000 points,
# with the cheap solvers each declares, into results/<name>_precise
.PHONY: reproduce-precise
reproduce-precise:
	dmlbench reproduce --all --precise --n-jobs $(N_JOBS)

reproduction-report:
	dmlbench report --all --readme README.md

# the LFW verification targets (Ying Table 6, Figs. 2-3; Shen 2014 Tables II-III, Fig. 2) once the
# user supplies the LFW-SIFT file: make reproduce-lfw DMLBENCH_LFW_SIFT=/path/lfw_sift.mat
.PHONY: reproduce-lfw
reproduce-lfw:
	dmlbench reproduce ying2012-table6 shen2014-table2 --n-jobs $(N_JOBS)

# the leaderboard: every method on every data set under one protocol, with ranks and significance
# tests (configs/leaderboard.yaml; resumable, a few days of background runs for the full board),
# and its CI tier on the bundled sets (configs/leaderboard_quick.yaml, ~30 s)
.PHONY: leaderboard leaderboard-quick
leaderboard:
	dmlbench leaderboard -j $(N_JOBS)

leaderboard-quick:
	dmlbench leaderboard --quick

# the verification stand-in: the LFW restricted protocol (Huang et al. 2007) on drawn Yale B folds
# (DML-eig, ITML, LDML, Euclidean), an experiment like any other
.PHONY: verification-standin
verification-standin:
	dmlbench run configs/verification_yale_b.yaml

# the performance record, from the timing scripts of benchmarks/timing/: results/bench/
# (paper_times*.csv/.md/.png: every timing row of the papers, resumable; floor.csv: per-iteration
# time against the measured floor, USPS). The diagnoses of benchmarks/diagnoses/ run by hand.
bench:
	$(PYTHON) benchmarks/timing/bench_paper_times.py
	$(PYTHON) benchmarks/timing/hardware_floor.py
	$(PYTHON) benchmarks/timing/bench_metric_learn.py
	$(PYTHON) benchmarks/timing/bench_scaling.py
	$(PYTHON) benchmarks/timing/bench_float32.py
	$(PYTHON) benchmarks/timing/bench_pair_distances.py
	$(PYTHON) benchmarks/timing/bench_eigh_drivers.py
	$(PYTHON) benchmarks/timing/bench_itml_sweep.py
	$(PYTHON) benchmarks/timing/bench_frobmetric_lbfgsb.py
	$(PYTHON) benchmarks/timing/bench_routes.py
	$(PYTHON) benchmarks/timing/bench_lmnn_search.py
	$(PYTHON) benchmarks/timing/bench_first_runs.py

clean:
	rm -rf results/quickstart results/*_quick .pytest_cache

# the test suite in a fresh venv with every dependency at its pyproject.toml floor (ci/oldest.txt)
.PHONY: test-oldest
test-oldest:
	PYTHON=$(PYTHON) bash ci/oldest.sh

# the documentation site (docs/, needs the `docs` extra: pip install -e '.[docs]'): the user guide,
# the API reference from the docstrings, the gallery of examples/gallery/ (run at build time) and
# the generated results pages, into docs/_build/html; any warning fails the build
.PHONY: docs
docs:
	$(PYTHON) -m sphinx -W --keep-going -b html docs docs/_build/html
