"""What trains and probes one run: the input checks, the tempered attention, the rank measures, the run
configs, the data, the models, the probe and the training loop. Its code is every run's key; it imports
nothing from the other folders (``pyproject.toml``'s import contract)."""
