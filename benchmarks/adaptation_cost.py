"""Per-trial cost of BTTA-DG's gradient-free adaptation against the gradient-based baselines,
measured on the same trials in one process, printed as ratios.

    python -m edgert.benchmarks.adaptation_cost [--trials 300] [--threads 2]

Cost is the time a variant spends per trial beyond the plain forward pass (which every
variant pays alike): for BTTA-DG the incremental alignment, the Dirichlet fit and the mixture
update; for BN adapt, Tent and T-TIME their extra passes and gradient steps.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.align import IncrementalAlignment, align_offline
from edgert.methods.btta_dg.baselines import BNAdapt, Tent, TTime
from edgert.methods.btta_dg.bayes import BayesianAdapter
from edgert.methods.btta_dg.evaluate import stepper, timed
from edgert.methods.btta_dg.train import epoch, population, predict, train_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    x, y, groups = population([1, 2, 3], 40)
    raw = train_source(epoch(x), y, synth.RATE, synth.LABELS, epochs=3)
    aligned = train_source(align_offline(epoch(x), groups), y, synth.RATE, synth.LABELS,
                           epochs=3)
    user = synth.make_subject(9)
    xt, _ = synth.trials(user, synth.make_session(user, 1), args.trials, seed=3)
    xt = epoch(xt)

    align = IncrementalAlignment(xt.shape[1])
    xa, align_ms = zip(*(timed(align, t) for t in xt))
    probs = predict(aligned.model, np.stack(xa))
    adapter = BayesianAdapter(aligned.source)
    bayes_ms = [timed(adapter.step, p)[1] for p in probs]
    costs = {"btta_dg": [a + b for a, b in zip(align_ms, bayes_ms)],
             "btta_dg (Dirichlet + GMM only)": bayes_ms,
             "bn_adapt": stepper(BNAdapt(raw.model).step, raw.model, xt)[1],
             "tent": stepper(Tent(raw.model).step, raw.model, xt)[1],
             "t_time": stepper(TTime(aligned.model).step, aligned.model, xt)[1]}
    base = {q: np.percentile(costs["btta_dg"], q) for q in (50, 99)}
    print(f"per-trial adaptation cost over {args.trials} trials, {args.threads} threads")
    print(f"{'variant':32s} {'p50 ms':>8s} {'p99 ms':>8s} {'p50 / btta_dg':>14s} "
          f"{'p99 / btta_dg':>14s}")
    for name, ms in costs.items():
        p50, p99 = np.percentile(ms, 50), np.percentile(ms, 99)
        print(f"{name:32s} {p50:8.3f} {p99:8.3f} {p50 / base[50]:14.1f} {p99 / base[99]:14.1f}")


if __name__ == "__main__":
    main()
