"""The report stage: result rows into tables, figures and pages.

- :mod:`.knn`: the report of a k-NN experiment (``summary.csv``, LaTeX tables, figures, the
  paper comparisons, the precise companion's columns);
- :mod:`.verification`: the report of a pair-verification experiment (accuracy, ROC);
- :mod:`.tables`: what every report builds its tables with (config order, paper comparisons,
  Welch's test, LaTeX);
- :mod:`.figures`: the figures a config declares, and the one matplotlib backend of the package;
- :mod:`.html`: Markdown reports as standalone HTML pages (contents, anchors, scrolling tables);
- :mod:`.ranking`: ranks, Friedman, Nemenyi and pairwise tests over data sets (Demšar 2006);
- :mod:`.check`: a run's means against a committed baseline (``dmlbench check``).
"""
