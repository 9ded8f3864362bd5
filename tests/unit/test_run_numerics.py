"""The numerics of a run (attnrank.core.train.run_numerics): what training sets, and what it restores; the attention
ablation evaluates stored runs under the same context."""

from __future__ import annotations

import torch

from attnrank.analysis import ablation
from attnrank.core import train


def _subnormal_survives() -> bool:
    x = torch.tensor([1e-40], dtype=torch.float32)  # a subnormal float32
    return bool((x * 1.0)[0] != 0)


def test_a_run_computes_on_its_threads_at_full_precision_with_subnormals_flushed_and_restores_the_callers():
    threads, precision = torch.get_num_threads(), torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        assert _subnormal_survives()
        with train.run_numerics(1):
            assert torch.get_num_threads() == 1
            assert torch.get_float32_matmul_precision() == "highest"  # no bf16 matmuls for a "medium" caller
            if not torch.cuda.is_available():
                assert not _subnormal_survives()  # flushed to zero on a CPU
        assert torch.get_float32_matmul_precision() == "medium" and torch.get_num_threads() == threads
        assert _subnormal_survives()
        with train.run_numerics(None):
            assert torch.get_num_threads() == threads  # None keeps the caller's threads
        # restored on an error too
        try:
            with train.run_numerics(1):
                raise KeyError("x")
        except KeyError:
            pass
        assert torch.get_num_threads() == threads and torch.get_float32_matmul_precision() == "medium"
        assert _subnormal_survives()
    finally:
        torch.set_float32_matmul_precision(precision)
        torch.set_num_threads(threads)


def test_the_ablation_evaluates_a_stored_run_under_the_numerics_it_was_trained_with():
    assert ablation.run_numerics is train.run_numerics
