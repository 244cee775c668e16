"""The experiment stage: what an experiment is, from its config to its tasks.

- :mod:`.config`: a YAML config validated into an :class:`~.config.Experiment` (datasets ×
  solvers × splits, constraints, evaluation, execution, figures, notes), with the options of a
  pair-verification experiment (:class:`~.config.VerificationSpec`);
- :mod:`.knn`: the tasks of a k-NN classification experiment (one per dataset entry, split and
  solver) and the data of each: subsample, split, preprocessing, constraints, the solver's fit;
- :mod:`.verification`: the pair-verification protocol of LFW's restricted setting and its
  tasks (one per dataset entry, solver and test fold).

It comes after the datasets, splits, constraints, solvers and evaluation, whose registries and
functions a config names and a task calls.
"""
