"""The experiment stage: what an experiment is, from its config to its tasks.

- :mod:`.config`: a YAML config validated into an :class:`~.config.Experiment` (datasets ×
  solvers × splits, constraints, evaluation, execution, figures, notes), with the options of a
  pair-verification experiment (:class:`~.config.VerificationSpec`), read section by section;
- :mod:`.schema`: each config section's keys, types, defaults and ceilings, and the reader that
  checks a mapping against them (:class:`~.schema.ConfigError` names the key path);
- :mod:`.entries`: the forms of a ``datasets:`` entry (a registered name, a data file, an OpenML
  dataset or suite) read into the registry names that resolve them;
- :mod:`.knn`: the tasks of a k-NN classification experiment (one per dataset entry, split and
  solver) and the data of each: subsample, split, preprocessing, constraints, the solver's fit;
- :mod:`.verification`: the pair-verification protocol of LFW's restricted setting;
- :mod:`.verification_tasks`: that protocol's tasks (one per dataset entry, solver and test
  fold), their data and their fit and score.

It comes after the datasets, splits, constraints, solvers and evaluation, whose registries and
functions a config names and a task calls.
"""
