"""The leaderboard stage: every method on every data set under one protocol, ranked.

- :mod:`.board`: a board config (an experiment plus its ``leaderboard:`` rules) and its cells
  log;
- :mod:`.run`: the board run cell by cell, each fit under the budget
  (:mod:`dml_bench.run.budget`), with the memory and size rules;
- :mod:`.stats`: the board's table, ranks, Friedman and Nemenyi tests, pairwise tests and the
  time–rank front;
- :mod:`.page`: its tables, figures, ``LEADERBOARD.md`` and ``leaderboard.html``.
"""
