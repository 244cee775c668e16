"""Paper-specific studies of the reproduction stage.

The stages from the datasets to the report serve every config. The modules here each reproduce
one figure or table that is not a config of datasets × solvers;
:mod:`dml_bench.reproduction.targets` runs them through the ``function:`` of their target in
``targets.yaml``:

- :mod:`.mvu`: Shen et al. (2014) Fig. 4, Frobenius-regularised MVU on the swiss roll;
- :mod:`.mvu_study`: Shen et al. (2014) §IV-B, Figs. 5–9 and Tables V–VI (embeddings and their
  quality), with the criteria of :mod:`.embedding_quality`;
- :mod:`.sdpmetric_timing`: Shen et al. (2010) Fig. 2, SDPMetric against an interior-point SDP;
- :mod:`.eigen_update_timing`: Kunapuli & Shavlik (2012) Fig. 2, the rank-one eigen-update.

Retrieval (Shen et al. 2010, Fig. 3) and pair verification, the face-verification stand-in on
Yale B included (``configs/verification_yale_b.yaml``), are task kinds that the runner runs like
any experiment (:mod:`dml_bench.run.retrieval`, :mod:`dml_bench.run.verification`).
"""
