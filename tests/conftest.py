"""Shared fixtures."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Run a test on one torch thread: small tensors gain nothing from more, and spin-wait."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
