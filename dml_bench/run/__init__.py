"""The run stage: executing an experiment's tasks into result rows.

- :mod:`.runner`: ``dmlbench run``, every task of an experiment resumed, claimed and run;
- :mod:`.execution`: how tasks are dispatched (claims, joblib or dask, rows of failed tasks);
- :mod:`.results`: the logs of result rows (``runs.csv``, ``tuning.csv``, ``errors.csv``,
  traces), appended whole and shared between concurrent runs;
- :mod:`.tuning`: the nested fits of a ``tune:`` grid;
- :mod:`.verification`: the run of a pair-verification experiment;
- :mod:`.progress`: a run's progress on standard error;
- :mod:`.budget`: experiment cells run in a child process, each fit under a wall-clock budget.
"""
