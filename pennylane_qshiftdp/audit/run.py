r"""One-run audit of a finished ``qshiftdp train`` job (``qshiftdp audit --run DIR``).

:func:`audit_run` reads the configuration a finished run saved in ``DIR/checkpoint.pt`` and its
claim in ``DIR/ledger.json``, and trains that configuration again, end to end, through
:func:`~pennylane_qshiftdp.training.train` (the same data set, preprocessing, model, loader,
sampling rate, steps, σ, clip mode, accountant, adjacency and credit mode, with
:func:`~pennylane_qshiftdp.make_private` and the job's own optimizer), with m white-box gradient
canaries added: the one-run audit of Steinke, Nasr, Jagielski (arXiv:2305.08846, Algorithm 1).

References:
    Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Algorithm 1 and Thm. 3.1 (one run);
    Nasr et al., arXiv:2302.07956 (v1), §3 (gradient canaries).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from .._validation import check_positive_int, check_probability
from .statistics import max_certifiable_one_run_epsilon, one_run_bound
from .white_box import OneRunResult

__all__ = ["RUN_FILES", "audit_run"]

#: Files a finished ``qshiftdp train`` run holds and :func:`audit_run` reads (never writes).
RUN_FILES = ("checkpoint.pt", "ledger.json", "metrics.json")


def _read_run(run_dir: Path):
    """(TrainConfig, claimed proven ε, δ of the claim) of a finished run; ValueError otherwise."""
    from ..accountant import PrivacyLedger
    from ..training import CHECKPOINT_FORMAT, TrainConfig

    if not run_dir.is_dir():
        raise ValueError(f"--run {run_dir}: no such directory (a finished `qshiftdp train "
                         f"--output-dir` run is expected).")
    missing = [f for f in RUN_FILES if not (run_dir / f).is_file()]
    if missing:
        why = (" (a non-private run, --epsilon inf, has no ledger: nothing to audit)"
               if missing == ["ledger.json"] else "")
        raise ValueError(f"--run {run_dir} holds no finished qshiftdp train run: "
                         f"{', '.join(missing)} missing{why}.")
    ckpt_path = run_dir / "checkpoint.pt"
    try:
        ckpt = torch.load(ckpt_path, weights_only=True)
    except Exception as err:  # noqa: BLE001 - an unreadable (or tampered) file is refused
        raise ValueError(f"--run: the checkpoint {ckpt_path} cannot be read (corrupt, "
                         f"truncated, or holding objects other than tensors and built-in "
                         f"containers; it was not executed): {type(err).__name__}") from None
    if (not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT
            or not isinstance(ckpt.get("config"), dict) or "epoch" not in ckpt):
        raise ValueError(f"--run: {ckpt_path} is not a {CHECKPOINT_FORMAT} checkpoint of "
                         f"qshiftdp train (corrupt or from another version).")
    saved = dict(ckpt["config"])
    unknown = sorted(set(saved) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        raise ValueError(f"--run: {ckpt_path} has settings this version does not know: "
                         f"{', '.join(unknown)}.")
    for k in ("classes", "feature_range"):  # lists after the round trip; tuples in the config
        if isinstance(saved.get(k), list):
            saved[k] = tuple(tuple(v) if isinstance(v, list) else v for v in saved[k])
    config = TrainConfig(**saved)
    try:
        metrics = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ValueError(f"--run: {run_dir / 'metrics.json'} cannot be read (corrupt?): "
                         f"{type(err).__name__}: {err}") from None
    if int(ckpt["epoch"]) < int(config.epochs) and not (
            isinstance(metrics, dict) and metrics.get("stopped_early")):
        raise ValueError(f"--run {run_dir} is not finished: its checkpoint holds epoch "
                         f"{ckpt['epoch']} of {config.epochs} (finish it with qshiftdp train "
                         f"--resume first).")
    try:
        ledger = PrivacyLedger.load(run_dir / "ledger.json")
    except (OSError, ValueError, TypeError, KeyError) as err:
        raise ValueError(f"--run: {run_dir / 'ledger.json'} cannot be read (corrupt?): "
                         f"{type(err).__name__}: {err}") from None
    if not math.isfinite(config.epsilon):
        raise ValueError(f"--run {run_dir} is a non-private run (--epsilon inf): nothing to "
                         f"audit.")
    delta = float(config.delta) + (float(config.beta)
                                   if config.credit in ("adaptive", "isotropic") else 0.0)
    return config, float(ledger.epsilon), delta


def _directions(rng, m: int, dims: list[int]) -> list[np.ndarray]:
    """Per clip group, m unit vectors (m, d_g): orthonormal if m ≤ d_g, else random."""
    out = []
    for d in dims:
        a = rng.standard_normal((d, m))
        if m <= d:
            u = np.linalg.qr(a)[0].T  # (m, d), orthonormal rows
        else:
            u = (a / np.linalg.norm(a, axis=0, keepdims=True)).T
        out.append(u)
    return out


class _Canaries:
    """The hook ``train(private_hook=...)`` installs on the job's optimizer (one run)."""

    def __init__(self, m, included, seed, canary_norm, noise_scale):
        self.m, self.included = m, included
        ss = np.random.SeedSequence([int(seed), 2305, 1])
        self.sample_rng, self.dir_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        self.canary_norm, self.noise_scale = float(canary_norm), float(noise_scale)
        self.raw = np.zeros(m)  # Σ_t <Δθ_t, v_it>/C_t²
        self.weights = None  # Σ_t v_it/C_t², (m, K)
        self.total = None  # Σ_t Δθ_t
        self.steps = self.sampled = 0
        self.parameters = 0
        self.orthonormal = True
        self._pending = None

    def __call__(self, model, opt, loader):
        self.opt = opt
        self.q = float(opt.ledger.sample_rate)
        self.parameters = sum(p.numel() for p in opt.params)
        clip, step = opt.clip_and_accumulate, opt.step

        def clip_and_accumulate():
            self._inject(opt)
            return clip()

        def hooked_step(closure=None):
            before = [p.detach().clone() for p in opt.params]
            self._pending = None
            out = step(closure)
            if self._pending is not None:
                delta = torch.cat([(b - p.detach()).reshape(-1).double()
                                   for b, p in zip(before, opt.params, strict=True)]).numpy()
                v, c2 = self._pending  # v: (m, K) clipped canary contributions, ‖v_i‖² = c2
                self.raw += v @ delta / c2
                self.weights = v / c2 if self.weights is None else self.weights + v / c2
                self.total = delta if self.total is None else self.total + delta
                self.steps += 1
            return out

        opt.clip_and_accumulate = clip_and_accumulate
        opt.step = hooked_step
        if self.noise_scale != 1.0:  # testing the audit itself: a mechanism with less noise
            normal = opt._standard_normal
            opt._standard_normal = lambda n: normal(n) * self.noise_scale

    @property
    def scores(self) -> np.ndarray:
        """Σ_t <Δθ_t − mean_s Δθ_s, v_it>/C_t²: the updates centred on their run mean."""
        if self.steps == 0:
            return self.raw.copy()
        return self.raw - self.weights @ (self.total / self.steps)

    def _inject(self, opt):
        groups = ([(opt.clip_groups[0][0], float(opt.max_grad_norm))]
                  if opt.adaptive_clipping is not None else
                  [(g, float(c)) for g, c in opt.clip_groups])
        dims = [sum(p.numel() for p in g) for g, _ in groups]
        self.orthonormal = self.orthonormal and all(self.m <= d for d in dims)
        units = _directions(self.dir_rng, self.m, dims)
        # the clipped contribution of canary i: C_g u_{i,g} in every group (norm C = √ΣC_g²)
        parts = {}
        for (group, c), u in zip(groups, units, strict=True):
            off = 0
            for p in group:
                n = p.numel()
                parts[id(p)] = c * u[:, off:off + n]
                off += n
        v = np.concatenate([parts[id(p)] for p in opt.params], axis=1)
        c2 = sum(c * c for _, c in groups)
        sampled = self.included & (self.sample_rng.random(self.m) < self.q)
        self.sampled += int(sampled.sum())
        rows = torch.as_tensor(self.canary_norm * v[sampled])  # norm canary_norm·C_g per group
        off = 0
        for p in opt.params:
            n = p.numel()
            gs = p.grad_sample
            if isinstance(gs, list):
                gs = torch.cat(gs) if gs else torch.zeros(0, *p.shape, dtype=p.dtype)
            add = rows[:, off:off + n].reshape(len(rows), *p.shape).to(gs.device, gs.dtype)
            p.grad_sample = torch.cat([gs, add])
            off += n
        self._pending = (v, c2)


def audit_run(run_dir, *, canaries: int = 1000, seed: int = 0, confidence: float = 0.95,
              canary_norm: float = 4.0, guesses=None, noise_scale: float = 1.0,
              progress: bool = False) -> OneRunResult:
    r"""Audit a finished ``qshiftdp train`` run end to end in one run, with gradient canaries.

    **What is re-run.** The configuration saved in ``run_dir/checkpoint.pt`` (the
    :class:`~pennylane_qshiftdp.training.TrainConfig` of the run: data set and split,
    preprocessing, model and initialisation, loader batch size and so the Poisson rate q,
    epochs, σ calibrated from the same budget, clip mode, accountant, adjacency, credit mode,
    shots) is trained again by :func:`~pennylane_qshiftdp.training.train` itself, with
    :func:`~pennylane_qshiftdp.make_private` and the job's optimizer; only the noise and the
    Poisson sampling are seeded (``secure_mode=False``: the same laws, repeatable) and nothing
    is written (``output_dir=None``). ``run_dir`` is only read.

    **The canaries** (Steinke, Nasr, Jagielski, arXiv:2305.08846, Algorithm 1): each of the
    ``canaries`` m canaries is included by an independent fair coin (seeded by ``seed``). An
    included canary is Poisson-sampled into each step's batch with the run's rate q, like any
    example; when sampled it is a crafted per-example gradient (white box, Nasr et al.,
    arXiv:2302.07956) appended to the parameters' ``grad_sample`` before the optimizer clips
    (``train(private_hook=...)`` wraps the optimizer's ``clip_and_accumulate``: the seam of
    :func:`~pennylane_qshiftdp.audit.optimizer_release`, which also sets ``grad_sample``). In
    every clip group g (the quantum weights, and a hybrid model's classical layers) it is
    ``canary_norm`` × C_g along a unit direction :math:`u_{i,g,t}` drawn afresh at every step t
    (public, seeded, independent of the coins), so the clip leaves exactly the sensitivity
    :math:`C_t = \sqrt{\sum_g C_g^2}` at the current clip norms (public, certified, adaptive or
    fixed). The score of canary i is :math:`\sum_t \langle \theta_t - \theta_{t+1},
    v_{i,t}\rangle / C_t^2` with :math:`v_{i,t} = (C_g u_{i,g,t})_g` — the model's noisy
    update of each step projected on the canary's clipped contribution, summed over the run —
    and :func:`~pennylane_qshiftdp.audit.one_run_bound` guesses from the top and bottom scores.

    **Power.** With m no larger than every group's dimension the directions of one step are
    orthonormal. The job's models are small (24 quantum weights at 4 qubits, 2 layers), so the
    default m = 1000 uses random unit directions: every other sampled canary then adds
    :math:`\approx N(0, 1/K)` to a score per step (K coordinates), about
    :math:`m q / (2K)` of variance per step beside the DP noise's :math:`\sigma^2` (and the
    data's gradients add their projection too). Fresh directions per step spread this over
    T·K numbers instead of K, but a run of T steps still releases only T·K numbers: expect a
    lower bound far below the ceiling, even with no noise (docs/audit.md has measured numbers).
    Under replace-one adjacency the canaries are added or removed, which the run's 2σC noise
    covers with room to spare: the audit is conservative there.

    Args:
        run_dir: the ``--output-dir`` of a finished private ``qshiftdp train`` run.
        canaries: m ≥ 2.
        seed: seeds the coins, the canaries' sampling and directions.
        confidence: of the bound, in (0, 1).
        canary_norm: each canary group part's norm in clip norms (≥ 1, so every clip binds).
        guesses: guess counts of :func:`~pennylane_qshiftdp.audit.one_run_bound`.
        noise_scale: **for testing the audit itself**: multiplies every standard normal the
            optimizer draws (1: the product's mechanism; 0: no noise at all, while the ledger
            still claims the run's ε). Anything but 1 audits a broken mechanism.
        progress: show the training progress bar.

    Returns:
        OneRunResult: ``label``, ``run_dir``, ``canaries``, ``steps``, ``sample_rate``,
        ``parameters``, ``directions`` (``"orthonormal"``/``"random"``), ``claimed_epsilon``
        (the run's ledger), ``rerun_epsilon`` (the re-run's ledger), ``delta``, ``bound``,
        ``epsilon_lower_bound``, ``ceiling``, ``confidence``, ``verdict`` (``"PROVEN CLAIM
        REFUTED"``, ``"not refuted"`` or ``"finding: ..."``), ``finding``, ``scores``,
        ``included``, ``thresholds`` (``in``: the lowest score guessed in, ``out``: the highest
        guessed out), ``canaries_sampled``, ``noise_scale``, ``seconds``, ``config``. A run
        that crashes or yields non-finite scores is a finding, not an exception.

    Raises:
        ValueError: if ``run_dir`` holds no finished private run or is corrupt (the message
            names the path), or for invalid arguments.

    References:
        Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Algorithm 1, Thm. 3.1.

    Example:
        >>> audit_run("/nonexistent/run")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: --run /nonexistent/run: no such directory ...

        On a finished run (about as long as the run's training)::

            r = audit_run("runs/qshiftdp-train", canaries=1000, seed=0)
            print(r)  # claimed ε, audited ε ≥ ..., CEILING, verdict
    """
    from ..training import train

    t0 = time.perf_counter()
    run_dir = Path(run_dir)
    m = check_positive_int(canaries, "canaries")
    if m < 2:
        raise ValueError(f"`canaries` must be at least 2. Found {m}.")
    confidence = check_probability(confidence, "confidence", open_low=True, open_high=True)
    if not (canary_norm >= 1.0 and math.isfinite(canary_norm)):
        raise ValueError(f"`canary_norm` must be finite and at least 1. Found {canary_norm}.")
    if not (noise_scale >= 0.0 and math.isfinite(noise_scale)):
        raise ValueError(f"`noise_scale` must be finite and >= 0. Found {noise_scale}.")
    config, claim, delta = _read_run(run_dir)
    alpha = 1.0 - confidence
    included = np.random.default_rng(np.random.SeedSequence([int(seed), 2305, 0])).random(m) < 0.5
    hook = _Canaries(m, included, seed, canary_norm, noise_scale)
    rerun = dataclasses.replace(config, output_dir=None, diagnostics=False, secure_mode=False)
    finding, rerun_eps = None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = train(rerun, progress=progress, private_hook=hook)
        rerun_eps = float(result.epsilon)
        if not np.all(np.isfinite(hook.scores)):
            finding = "non-finite update (canary scores)"
        elif hook.steps == 0:
            finding = "the re-run took no step"
    except Exception as err:  # noqa: BLE001 - a crashing run is a finding
        finding = f"the re-run crashed: {type(err).__name__}: {err}"
    bound, eps, thresholds = None, 0.0, None
    if finding is None:
        bound = one_run_bound(hook.scores, included, delta=delta, alpha=alpha, guesses=guesses,
                              score="projection")
        eps = bound.epsilon_lower_bound
        order = np.sort(hook.scores)[::-1]
        thresholds = {"in": float(order[bound.k_positive - 1]),
                      "out": float(order[m - bound.k_negative]) if bound.k_negative else None}
        if rerun_eps is not None and not math.isclose(rerun_eps, claim, rel_tol=1e-6):
            finding = (f"the re-run's ledger claims ε = {rerun_eps:.6g}, the run's ledger "
                       f"{claim:.6g}: the re-run is not the audited configuration")
    ceiling = max_certifiable_one_run_epsilon(m, delta=delta, alpha=alpha, guesses=guesses)
    refuted = eps > claim
    verdict = ("PROVEN CLAIM REFUTED" if refuted else
               f"finding: {finding}" if finding else "not refuted")
    label = f"qshiftdp train run {run_dir}" + ("" if noise_scale == 1.0 else
                                               f" (noise × {noise_scale:g}: broken on purpose)")
    return OneRunResult(
        label=label, run_dir=str(run_dir), canaries=m, steps=hook.steps,
        sample_rate=getattr(hook, "q", None), parameters=hook.parameters,
        directions="orthonormal" if hook.orthonormal else "random",
        claimed_epsilon=claim, rerun_epsilon=rerun_eps, delta=delta, bound=bound,
        epsilon_lower_bound=eps, ceiling=ceiling, confidence=confidence, verdict=verdict,
        finding=finding, scores=hook.scores.tolist(), included=included.tolist(),
        thresholds=thresholds, canaries_sampled=hook.sampled, canary_norm=float(canary_norm),
        noise_scale=float(noise_scale), seed=int(seed),
        config={k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(config).items()},
        seconds=time.perf_counter() - t0)
