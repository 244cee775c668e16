"""The reproduction stage: the papers' tables and figures as targets, run and reported.

- :mod:`.targets`: the targets of ``targets.yaml`` and ``dmlbench reproduce``;
- :mod:`.report`: ``results/REPRODUCTION.md`` and ``.html``, what reproduces and what does not;
- :mod:`.claims`: the papers' stated conclusions, checked on their numbers and on ours;
- :mod:`.studies`: the studies that are not a config of datasets × solvers.
"""
