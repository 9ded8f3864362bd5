"""Benchmark: temperature and rank tracking cost (almost) nothing; training runs near the hardware limit.

``python benchmarks/bench.py`` (or ``make bench``) runs in one process. Compared variants
are interleaved (A B A B ...) over several repetitions after a warm-up, and one table of
medians and ratios is printed with the machine, device, threads and config. ``--quick``
uses the ``ci`` model and fewer repetitions (CI runs it and does not judge the numbers).

Rows:

1. temperature: training tokens/s with ``tau = 0.3`` through the registered attention
   function / the stock HF model with ``attn_implementation="sdpa"`` at ``tau = 1``;
2. training loop: tokens/s of our ``Trainer`` step / a bare PyTorch loop
   (``loss.backward(); opt.step(); opt.zero_grad()``) on the same model and batches;
3. rank tracking: seconds in rank probes / run wall time at the default ``rank_every``
   and probe size, with the probe's own breakdown, the same share of the run's process CPU
   seconds (steadier on a loaded machine) and the SVD rate for n = 64, 128, 256;
4. model FLOP utilisation: (6 x parameters x tokens + attention FLOPs) per second / the
   measured peak of a large fp32 matrix product (bf16 on CUDA);
5. start-up: seconds from launching ``attnrank train`` to the first training step, with
   tokenizer and token blocks cached;
6. CUDA: the same rows on a GPU when one is present;
7. the grid (``--grid``, alone, several minutes): runs per hour of ``attnrank sweep``'s
   local process pool (default workers, one thread per run) / a serial sweep of the same
   runs on one thread, and / a serial sweep on two threads per run (the pre-pool way),
   each into an empty temporary store.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from attnrank.core.models import model_from_config
from attnrank.core.profiles import resolve_config
from attnrank.core.rank import rank_measures
from attnrank.core.train import prepare_data, train, training_arguments
from attnrank.runs import grid
from attnrank.runs.experiments import book_runs

__all__ = ["main", "peak_matmul_flops", "model_flops_per_token"]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_matmul_flops(device: str = "cpu", n: int = 2048, reps: int = 10, dtype=torch.float32) -> float:
    """Measured FLOP/s of an ``n x n`` matrix product (best of ``reps``)."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(reps):
        _sync(device)
        t = time.perf_counter()
        a @ b
        _sync(device)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def model_flops_per_token(model, seq_len: int) -> float:
    """Training FLOPs per token: ``6 N + 12 L T d`` (N without position embeddings; Kaplan et al. 2020, PaLM appendix B)."""
    cfg = model.config
    n = sum(p.numel() for name, p in model.named_parameters() if "position" not in name and "wpe" not in name)
    return 6 * n + 12 * cfg.num_hidden_layers * seq_len * cfg.hidden_size


def _batches(cfg, count: int):
    dataset, tokenizer, collator, _, _ = prepare_data(cfg)
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(len(dataset), (count, cfg.batch_size), generator=g)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return [collator([dataset[int(i)] for i in row]) for row in idx], len(tokenizer)


def _model(cfg, vocab, impl, tau, device):
    return model_from_config(cfg, vocab_size=vocab, pad_token_id=0, tau=tau, seed=0, attn_implementation=impl).to(
        device
    )


def _bare_steps(model, batches, device, autocast: bool) -> float:
    # the same optimizer kernel as the Trainer's default (``adamw_torch_fused``), no weight decay
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.0, fused=True)
    _sync(device)
    t = time.perf_counter()
    for b in batches:
        b = {k: v.to(device) for k, v in b.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(**b).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    _sync(device)
    return time.perf_counter() - t


def _interleave(variants: dict, reps: int) -> dict:
    """Run each variant's callable in A B A B order ``reps`` times; returns the lists of seconds."""
    times = {k: [] for k in variants}
    for _ in range(reps):
        for k, fn in variants.items():
            times[k].append(fn())
    return times


def _trainer_seconds(cfg, model, batches, device) -> float:
    """Seconds per step of ``transformers.Trainer`` (our settings, no probes), after 2 warm-up steps."""
    from transformers import Trainer, TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    class _Clock(TrainerCallback):
        marks: list = []

        def on_step_end(self, args, state, control, **kw):
            _sync(device)
            self.marks.append(time.perf_counter())

    class _Fixed(torch.utils.data.Dataset):
        def __len__(self):
            return len(batches) * cfg.batch_size

        def __getitem__(self, i):
            b = batches[i // cfg.batch_size]
            return {k: v[i % cfg.batch_size] for k, v in b.items()}

    clock = _Clock()
    clock.marks = []
    with tempfile.TemporaryDirectory() as tmp:
        cuda = device.startswith("cuda")
        args = training_arguments(
            cfg,
            tmp,
            max_steps=len(batches),
            learning_rate=1e-4,
            warmup_steps=1,
            weight_decay=0.0,
            use_cpu=not cuda,
            bf16=cuda,
        )
        trainer = Trainer(
            model=model,
            args=args,
            train_dataset=_Fixed(),
            callbacks=[clock],
            data_collator=lambda rows: {k: torch.stack([r[k] for r in rows]) for k in rows[0]},
        )
        trainer.remove_callback(PrinterCallback)
        trainer.remove_callback(ProgressCallback)
        trainer.train()
    m = clock.marks
    return (m[-1] - m[1]) / (len(m) - 2)


def _svd_rate(n: int, count: int) -> float:
    A = torch.softmax(torch.randn(count, n, n) * 2, -1)
    rank_measures(A[:4])
    t = time.perf_counter()
    rank_measures(A)
    return count / (time.perf_counter() - t)


def _startup_seconds(arch: str, profile: str) -> float:
    """Launch ``attnrank train`` in a fresh process (tokenizer cached) and read its start-up time."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "ATTNRANK_RUNS": tmp}
        cmd = [
            sys.executable,
            "-m",
            "attnrank",
            "train",
            "--arch",
            arch,
            "--profile",
            profile,
            "--max-steps",
            "1",
            "--quiet",
        ]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        (summary,) = [json.loads(p.read_text()) for p in __import__("pathlib").Path(tmp).glob("*/summary.json")]
    return summary["startup_seconds"]


def run_bench(profile: str, reps: int, steps: int, device: str) -> list[dict]:
    rows = []
    autocast = device.startswith("cuda")
    for arch in ("modernbert", "gpt2"):
        cfg = resolve_config(arch, profile)
        batches, vocab = _batches(cfg, steps)
        tokens = steps * cfg.batch_size * cfg.max_len
        ours = _model(cfg, vocab, "attnrank", 0.3, device)
        stock = _model(cfg, vocab, "sdpa", 1.0, device)
        stock.load_state_dict(ours.state_dict())
        for m in (ours, stock):
            _bare_steps(m, batches[:2], device, autocast)  # warm-up
        t = _interleave(
            {
                "ours": lambda: _bare_steps(ours, batches, device, autocast),
                "stock": lambda: _bare_steps(stock, batches, device, autocast),
            },
            reps,
        )
        a, b = tokens / statistics.median(t["ours"]), tokens / statistics.median(t["stock"])
        rows.append(
            dict(
                row=1,
                arch=arch,
                what="tokens/s: tau=0.3 ours / tau=1 HF sdpa",
                a=a,
                b=b,
                value=a / b,
                target=">= 0.97",
                ok=a / b >= 0.97,
            )
        )

        trainer_model = _model(cfg, vocab, "attnrank", 1.0, device)
        bare_model = _model(cfg, vocab, "attnrank", 1.0, device)
        t = _interleave(
            {
                "trainer": lambda: _trainer_seconds(cfg, trainer_model, batches, device),
                "bare": lambda: _bare_steps(bare_model, batches[2:], device, autocast) / (len(batches) - 2),
            },
            reps,
        )
        a = cfg.batch_size * cfg.max_len / statistics.median(t["trainer"])
        b = cfg.batch_size * cfg.max_len / statistics.median(t["bare"])
        rows.append(
            dict(
                row=2,
                arch=arch,
                what="tokens/s: Trainer step / bare loop",
                a=a,
                b=b,
                value=a / b,
                target=">= 0.95",
                ok=a / b >= 0.95,
            )
        )

        peak = peak_matmul_flops(device, dtype=torch.bfloat16 if autocast else torch.float32)
        mfu = model_flops_per_token(ours, cfg.max_len) * b / peak
        rows.append(
            dict(
                row=4,
                arch=arch,
                what="MFU: model FLOP/s (bare loop) / peak matmul FLOP/s",
                a=model_flops_per_token(ours, cfg.max_len) * b,
                b=peak,
                value=mfu,
                target=">= 0.5 (gpt2)",
                ok=mfu >= 0.5 if arch == "gpt2" else None,
            )
        )

        res = train(cfg, progress=False, keep_model=False)
        s = res.summary
        share = s["probe_seconds"] / s["wall_seconds"]
        pt = s["probe_timing"]
        cpu_share = s["probe_cpu_seconds"] / s["cpu_seconds"]
        rows.append(
            dict(
                row=3,
                arch=arch,
                what=(
                    f"rank-probe share of run wall time (forward {pt['forward']:.2f} s, SVD {pt['svd']:.2f} s, "
                    f"bookkeeping {pt['bookkeeping']:.2f} s; not counted: validation loss {pt['validation']:.2f} s, "
                    f"kept attention copies {pt.get('attention', 0.0):.3f} s)"
                ),
                a=s["probe_seconds"],
                b=s["wall_seconds"],
                value=share,
                target="<= 0.05",
                ok=share <= 0.05,
            )
        )
        rows.append(
            dict(
                row=3,
                arch=arch,
                what=(
                    "rank-probe share of run CPU time (process CPU seconds; validation loss, not counted: "
                    f"{s['validation_cpu_seconds']:.2f} s)"
                ),
                a=s["probe_cpu_seconds"],
                b=s["cpu_seconds"],
                value=cpu_share,
                target="<= 0.05",
                ok=cpu_share <= 0.05,
            )
        )
        st = _startup_seconds(arch, profile)
        rows.append(
            dict(
                row=5,
                arch=arch,
                what="seconds from `attnrank train` to the first step",
                a=st,
                b=None,
                value=st,
                target="<= 10 s",
                ok=st <= 10,
            )
        )
    # the same code on a wider GPT-2: how much of the gap to peak is the width of the quick model
    wide = resolve_config("gpt2", profile, hidden_size=4 * resolve_config("gpt2", profile).hidden_size, num_layers=4)
    batches, vocab = _batches(wide, max(4, steps // 4))
    model = _model(wide, vocab, "attnrank", 0.3, device)
    _bare_steps(model, batches[:1], device, autocast)
    seconds = statistics.median(_bare_steps(model, batches, device, autocast) for _ in range(max(2, reps // 2)))
    rate = len(batches) * wide.batch_size * wide.max_len / seconds
    peak = peak_matmul_flops(device, dtype=torch.bfloat16 if autocast else torch.float32)
    mfu = model_flops_per_token(model, wide.max_len) * rate / peak
    rows.append(
        dict(
            row=4,
            arch="gpt2",
            what=f"MFU of the same code at width {wide.hidden_size}, 4 layers (for comparison)",
            a=model_flops_per_token(model, wide.max_len) * rate,
            b=peak,
            value=mfu,
            target="",
            ok=None,
        )
    )
    for n in (64, 128, 256):
        rate = _svd_rate(n, 512 if n < 256 else 128)
        rows.append(
            dict(
                row=3,
                arch="-",
                what=f"rank measures (one float64 SVD) per second, n = {n}",
                a=rate,
                b=None,
                value=rate,
                target="",
                ok=None,
            )
        )
    return rows


def grid_rows(profile: str = "quick", runs: int = 4) -> list[dict]:
    """Row 7: runs/hour of the process pool against serial sweeps (see the module docstring)."""
    import dataclasses

    grid_runs = book_runs(profile)
    step = max(1, len(grid_runs) // runs)
    configs = grid_runs[::step][:runs]  # spread over the grid: low and high temperatures, both archs
    rates = {}
    for name, executor, threads in (("process", "process", 1), ("serial", "serial", 1), ("serial2", "serial", 2)):
        batch = [dataclasses.replace(c, threads=threads) for c in configs]
        with tempfile.TemporaryDirectory() as tmp:
            old = os.environ.get("ATTNRANK_RUNS")
            os.environ["ATTNRANK_RUNS"] = tmp
            try:
                stats = grid.sweep(batch, executor=executor, progress=False).attrs["sweep"]
            finally:
                os.environ.pop("ATTNRANK_RUNS") if old is None else os.environ.__setitem__("ATTNRANK_RUNS", old)
        rates[name] = stats["runs_per_hour"]
        if name == "process":
            workers = stats["workers"]
    what = f"runs/hour of {runs} {profile} runs: process pool ({workers} workers x 1 thread) / serial on"
    return [
        dict(
            row=7,
            arch="-",
            what=f"{what} 1 thread",
            a=rates["process"],
            b=rates["serial"],
            value=rates["process"] / rates["serial"],
            target=">= 1.6",
            ok=rates["process"] / rates["serial"] >= 1.6,
        ),
        dict(
            row=7,
            arch="-",
            what=f"{what} 2 threads",
            a=rates["process"],
            b=rates["serial2"],
            value=rates["process"] / rates["serial2"],
            target="",
            ok=None,
        ),
    ]


def _print(rows: list[dict], header: str) -> None:
    print(header)
    print(f"{'row':<4}{'arch':<6}{'value':>10}  {'target':<14}{'ok':<6}what (A | B)")
    for r in sorted(rows, key=lambda r: (r["row"], r["arch"])):
        ok = "" if r["ok"] is None else ("yes" if r["ok"] else "NO")
        ab = f" ({r['a']:.4g} | {r['b']:.4g})" if r["b"] is not None else (f" ({r['a']:.4g})" if r["row"] != 5 else "")
        print(f"{r['row']:<4}{r['arch']:<6}{r['value']:>10.4g}  {r['target']:<14}{ok:<6}{r['what']}{ab}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench.py", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ci-sized models, fewer repetitions (under a minute)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per variant (after warm-up)")
    parser.add_argument(
        "--grid",
        type=int,
        nargs="?",
        const=4,
        default=None,
        metavar="RUNS",
        help="only row 7: process pool / serial runs per hour on RUNS (default 4) runs of the profile",
    )
    args = parser.parse_args(argv)
    profile, reps, steps = ("ci", args.reps or 2, 12) if args.quick else ("quick", args.reps or 7, 40)
    import transformers

    header = (
        f"benchmarks/bench.py: profile {profile}, {reps} interleaved repetitions of {steps} steps\n"
        f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}, "
        f"torch {torch.__version__}, transformers {transformers.__version__}"
    )
    if args.grid:
        _print(grid_rows(profile, args.grid), header.splitlines()[1] + f"\ngrid of the {profile} profile")
        return 0
    rows = run_bench(profile, reps, steps, "cpu")
    _print(rows, header + "\ndevice: cpu")
    if torch.cuda.is_available():
        rows = [r for r in run_bench(profile if args.quick else "paper", reps, steps, "cuda") if r["row"] != 5]
        _print(
            [{**r, "row": 6} for r in rows],
            f"\ndevice: cuda ({torch.cuda.get_device_name()}), MFU against the bf16 peak",
        )
    else:
        print("6   -     no GPU: the CUDA rows run when torch.cuda.is_available()")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
