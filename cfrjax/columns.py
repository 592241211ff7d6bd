"""Column names of the per-hand exports (`cfrjax.public.report.NodeReport.save_csv`),
importable without JAX: the command line's help lists them, and `cfrjax games` or
`cfrjax --help` parse their arguments without importing the solver."""

__all__ = ["CSV_FIELDS"]

#: The per-hand columns of `NodeReport.save_csv`, before one column per action.
CSV_FIELDS = ("hand", "weight0", "weight1", "combos0", "combos1", "ev0", "ev1", "equity0", "equity1")
