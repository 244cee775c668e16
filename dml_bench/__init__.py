"""dml-bench: reproduce, compare and extend Mahalanobis distance-metric-learning results."""

__version__ = "0.2.0"
