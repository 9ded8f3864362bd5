"""The runs: the run store, the grid that trains runs up front, the table cache, the code hash and the
git state, and which runs the book needs (the sweeps and the chapters' presets). It imports only ``core``."""
