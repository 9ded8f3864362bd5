"""Numbers from runs, no words: statistics with intervals, the pre-registered verdict rules, the count
models and other references, attention's own contribution, spectra, the propositions and the toy task.
It imports only ``core`` and ``runs``."""
