PYTHON ?= python3
N_JOBS ?= 2
export DMLBENCH_DATA_MIRROR ?= $(abspath ../shared/datasets)

.PHONY: install test quickstart reproduce-table4 check-quickstart bench clean

install:
	$(PYTHON) -m pip install -e '.[test]'

test:
	$(PYTHON) -m pytest -q

quickstart:
	dmlbench run configs/quickstart.yaml

check-quickstart: quickstart
	dmlbench check results/quickstart --baseline results/baselines/quickstart.csv

reproduce-table4:
	dmlbench run configs/ying2012_table4.yaml --n-jobs $(N_JOBS)
	dmlbench report results/ying2012_table4 --readme README.md

bench:
	$(PYTHON) benchmarks/bench_solvers.py

clean:
	rm -rf results/quickstart results/ying2012_table4 .pytest_cache
