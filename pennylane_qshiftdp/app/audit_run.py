r"""One-run audit of a finished ``qshiftdp train`` job (``qshiftdp audit --run DIR``).

:func:`audit_run` reads the configuration a finished run saved in ``DIR/checkpoint.pt`` and its
claim in ``DIR/ledger.json``, and trains that configuration again, end to end, through
:func:`~pennylane_qshiftdp.app.job.train` (the same data set, preprocessing, model, loader,
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
from ..audit.statistics import max_certifiable_one_run_epsilon, one_run_bound
from ..audit.white_box import OneRunResult

__all__ = ["RUN_FILES", "audit_run", "default_canaries", "expected_one_run_bounds"]

#: Files a finished ``qshiftdp train`` run holds and :func:`audit_run` reads (never writes).
RUN_FILES = ("checkpoint.pt", "ledger.json", "metrics.json")


def _read_run(run_dir: Path):
    """(TrainConfig, claimed proven ε, δ of the claim) of a finished run; ValueError otherwise."""
    from ..accountants.ledger import PrivacyLedger
    from .config import TrainConfig, saved_settings
    from .outputs import CHECKPOINT_FORMAT

    if not run_dir.is_dir():
        what = "not a directory" if run_dir.exists() else "no such directory"
        raise ValueError(f"--run {run_dir}: {what} (a finished `qshiftdp train "
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
    saved = saved_settings(ckpt["config"])  # fields added since the run: what it used
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
    if ckpt.get("data") is not None:  # older runs recorded nothing to check
        _check_run_data(run_dir, ckpt, config)
    delta = float(config.delta) + (float(config.beta)
                                   if config.credit in ("adaptive", "isotropic") else 0.0)
    return config, float(ledger.epsilon), delta


def _check_run_data(run_dir: Path, ckpt: dict, config) -> None:
    """The re-run trains on the data at the run's path: refuse them unless they are the run's
    (N, q, ranges, preprocessing and the keyed digest, as ``--resume`` checks)."""
    from .data import load_dataset
    from .defaults import feature_count, resolve_model
    from .resume_check import check_same_data, loader_facts

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the run stated them when it trained
            data = load_dataset(config.dataset,
                                n_features=feature_count(config, resolve_model(config)),
                                seed=config.seed, test_size=config.test_size,
                                preprocessing=config.preprocessing, csv_path=config.csv_path,
                                label_column=config.label_column, classes=config.classes,
                                feature_range=config.feature_range)
    except ValueError as err:
        raise ValueError(f"--run: the audit re-runs the run on its training data, which cannot "
                         f"be read again: {err}") from None
    check_same_data(run_dir, ckpt, data, loader_facts(data, config.expected_batch_size),
                    what="--run", fix="the audit re-runs the run on its own training data: "
                                      "restore them at the path the run read")


#: The default canary count caps the other canaries' interference at about 2 standard
#: deviations of an included canary's expected score without noise (see default_canaries).
_MAX_DEFAULT_CANARIES = 1000


def default_canaries(dimension: int, steps: int, sample_rate: float) -> int:
    r"""The default m of :func:`audit_run`: L orthonormal layers of d canaries (at most 1000).

    Every canary is active at every step; the directions of one step form L orthonormal
    layers of d (the smallest clip group's dimension), so each canary sees the others through
    exactly :math:`L - 1` units of squared overlap (a union of orthonormal bases is a tight
    frame) and, after subtracting their expected contribution, an interference of variance
    about :math:`(L-1)\,q/2` per step. Without noise an included canary scores about
    :math:`Tq` and a left-out one 0 with spread :math:`\sqrt{T(L-1)q/2}`; the default
    :math:`L = 1 + \lfloor Tq/2 \rfloor` keeps that ratio near 2 or above, and
    :math:`m = \min(L d, 1000)`, at least 2. With noise more canaries help (the DP noise
    dominates the interference), so a larger ``canaries`` trades power against a mechanism
    with no noise for power against one with too little.

    Args:
        dimension: d ≥ 1.
        steps: T ≥ 1, the run's planned steps.
        sample_rate: q in (0, 1].

    Returns:
        int: m.

    Example:
        >>> default_canaries(24, 50, 0.2)  # the default qshiftdp train job
        144
        >>> default_canaries(24, 36, 1 / 9)
        72
    """
    layers = 1 + math.floor(steps * sample_rate / 2.0 + 1e-9)
    return max(2, min(layers * int(dimension), _MAX_DEFAULT_CANARIES))


#: Noise scales whose expected bound :func:`expected_one_run_bounds` reports (the claimed noise,
#: half of it, none).
_POWER_SCALES = {"correct": 1.0, "half_noise": 0.5, "no_noise": 0.0}


def expected_one_run_bounds(*, canaries: int, steps: int, sample_rate: float,
                            noise_multiplier: float, delta: float, confidence: float = 0.95,
                            guesses=None, repeats: int = 5, seed: int = 0) -> dict:
    r"""What the one-run audit of a run can show at best: its bound for three noise levels.

    An idealised run of the audited configuration: each of the m canaries is included by a fair
    coin, an included one is sampled at each of the T steps with probability q and then adds
    exactly 1 (its clipped contribution, in units of the clip norm) to its score, and every
    score carries the projected DP noise :math:`s\sigma\sqrt{T}\,z` (:math:`s\sigma` the noise
    multiplier in sensitivity units, times a noise scale); nothing else (no interference between
    canaries, no training data). The real audit's scores are noisier, so these bounds are what
    it can reach at best. The median over ``repeats`` seeded simulations of
    :func:`~pennylane_qshiftdp.audit.one_run_bound` is reported for the claimed noise (scale 1),
    half of it and none. Derived here (a simulation of the score model of :func:`audit_run`).

    Args:
        canaries: m ≥ 2. steps: T ≥ 1. sample_rate: q ∈ (0, 1].
        noise_multiplier: :math:`s\sigma > 0`, the noise standard deviation over the
            sensitivity.
        delta: δ of the claim. confidence: of the bound. guesses: as in ``one_run_bound``.
        repeats: simulations per noise level (odd for a plain median).
        seed: seeds the simulations.

    Returns:
        dict: ``{"correct": ε, "half_noise": ε, "no_noise": ε}``.

    Example:
        >>> b = expected_one_run_bounds(canaries=144, steps=50, sample_rate=0.2,
        ...                             noise_multiplier=6.02, delta=1e-5)
        >>> b["no_noise"] > 1.5 > b["half_noise"]
        True
    """
    m = check_positive_int(canaries, "canaries")
    t = check_positive_int(steps, "steps")
    alpha = 1.0 - check_probability(confidence, "confidence", open_low=True, open_high=True)
    out = {}
    for name, scale in _POWER_SCALES.items():
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2305, 7]))
        bounds = []
        for _ in range(check_positive_int(repeats, "repeats")):
            included = rng.random(m) < 0.5
            hits = rng.binomial(t, sample_rate, size=m) * included
            scores = hits + scale * noise_multiplier * math.sqrt(t) * rng.standard_normal(m)
            bounds.append(one_run_bound(scores, included, delta=delta, alpha=alpha,
                                        guesses=guesses, score="projection")
                          .epsilon_lower_bound)
        out[name] = float(np.median(bounds))
    return out


def _limits_text(claim: float, ceiling: float, power: dict) -> str:
    """The limits of a one-run audit, in words, from its ceiling and expected bounds."""
    def verdict(eps):
        return "refuted" if eps > claim else "NOT refuted"

    return (
        f"Limits of this audit: it can certify at most ε = {ceiling:.2f} (CEILING: every guess "
        f"right), and at this configuration its bound is at best about "
        f"{power['correct']:.2f} for the claimed noise, {power['half_noise']:.2f} with half "
        f"the noise ({verdict(power['half_noise'])} against the claim {claim:.3g}) and "
        f"{power['no_noise']:.2f} without noise ({verdict(power['no_noise'])}); a 'not "
        f"refuted' says no more than that. For power against too little noise or a missing "
        f"clip use `qshiftdp audit` (one step, both worlds, thousands of trials).")


class _Canaries:
    """The hook ``train(private_hook=...)`` installs on the job's optimizer (one run)."""

    def __init__(self, m, seed, canary_norm, noise_scale, epochs):
        self.requested, self.m, self.seed = m, None, int(seed)
        self.included = None
        ss = np.random.SeedSequence([int(seed), 2305, 1])
        self.sample_rng, self.dir_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        self.canary_norm, self.noise_scale = float(canary_norm), float(noise_scale)
        self.epochs = int(epochs)
        self.scores = None  # Σ_t <released_t − known_t, v_it>/C_t²
        self.steps = self.sampled = 0
        self.parameters = self.capacity = self.layers = 0
        self._pending = None

    def __call__(self, model, opt, loader):
        self.q = float(opt.ledger.sample_rate)
        # the Gaussian noise actually added, over the sensitivity (the floor with a credit mode)
        self.noise = float(opt.noise_floor_multiplier if opt.noise_floor_multiplier is not None
                           else opt.noise_multiplier)
        if opt.adaptive_clipping is not None:
            self.noise = float(opt.adaptive_clipping["gradient_noise_multiplier"])
        self.noise *= float(opt.sensitivity_factor)  # canaries are added, not replaced
        self.parameters = sum(p.numel() for p in opt.params)
        self.capacity = min(sum(p.numel() for p in g) for g, _ in self._groups(opt))
        planned = max(1, len(loader) * self.epochs)
        m = (default_canaries(self.capacity, planned, self.q) if self.requested is None
             else self.requested)
        self.m, self.layers = m, math.ceil(m / self.capacity)
        # the fair coins: their own seeded stream, drawn before anything else of the run
        coins = np.random.default_rng(np.random.SeedSequence([self.seed, 2305, 0]))
        self.included = coins.random(m) < 0.5
        self.scores = np.zeros(m)
        clip, scale = opt.clip_and_accumulate, opt.scale_grad

        def clip_and_accumulate():
            self._known = self._known_sum(opt, clip)
            self._inject(opt)
            return clip()

        def scale_grad():
            out = scale()
            if self._pending is not None:
                self._score(opt)
            return out

        opt.clip_and_accumulate = clip_and_accumulate
        opt.scale_grad = scale_grad
        if self.noise_scale != 1.0:  # testing the audit itself: a mechanism with less noise
            normal = opt._standard_normal
            opt._standard_normal = lambda n: normal(n) * self.noise_scale

    @staticmethod
    def _groups(opt):
        return ([(opt.clip_groups[0][0], float(opt.max_grad_norm))]
                if opt.adaptive_clipping is not None else
                [(g, float(c)) for g, c in opt.clip_groups])

    @staticmethod
    def _known_sum(opt, clip) -> np.ndarray:
        """The other examples' clipped sum, by the optimizer's own clip; nothing else changes.

        The DP adversary knows every example but the target: given the released model (so
        θ_t) and the other examples' Poisson draws of this step (independent of the canaries),
        it computes exactly this. The optimizer's state is restored, so the step that follows
        clips the whole batch (these examples and the sampled canaries) in one call, as usual.
        """
        stats = dict(opt._step_stats)
        saved = [(p.grad_sample, p.summed_grad) for p in opt.params]
        for p in opt.params:
            p.summed_grad = None
        clip()
        known = torch.cat([p.summed_grad.detach().reshape(-1).double().cpu()
                           for p in opt.params]).numpy()
        for p, (gs, sg) in zip(opt.params, saved, strict=True):
            p.grad_sample, p.summed_grad = gs, sg
        opt._step_stats = stats
        return known

    def _inject(self, opt):
        groups = self._groups(opt)
        m = self.m
        # the clipped contribution of canary i: C_g u_{i,g} in every group (norm C = √ΣC_g²);
        # in each group the m directions are `layers` orthonormal sets (each ≤ the group's dim)
        parts = {}
        for group, c in groups:
            d = sum(p.numel() for p in group)
            u = np.concatenate([np.linalg.qr(self.dir_rng.standard_normal((d, len(lay))))[0].T
                                for lay in np.array_split(np.arange(m), self.layers)])
            off = 0
            for p in group:
                n = p.numel()
                parts[id(p)] = c * u[:, off:off + n]
                off += n
        v = np.concatenate([parts[id(p)] for p in opt.params], axis=1)  # (m, K)
        c2 = sum(c * c for _, c in groups)
        sampled = self.included & (self.sample_rng.random(m) < self.q)
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
        # the canaries are extra rows of this step, beside the loader's batch
        opt._step_stats["injected_rows"] = opt._step_stats.get("injected_rows", 0) + len(rows)
        self._pending = (v, c2)

    def _score(self, opt):
        """Project the released noisy sum, minus what the adversary knows, on every canary.

        Known: the other examples' clipped sum and the *expected* contribution of the other
        canaries, (q/2) Σ_{j≠i} v_j (public: q, the fair coins' 1/2 and the directions; no
        coin or draw of theirs is used).
        """
        v, c2 = self._pending
        self._pending = None
        grad = torch.cat([p.grad.detach().reshape(-1).double().cpu() for p in opt.params])
        scale = 1.0
        if opt.loss_reduction == "mean":  # public: the expected batch size (× virtual steps)
            scale = float(opt.expected_batch_size) * float(opt._scale_iterations)
        residual = grad.numpy() * scale - self._known
        proj = v @ residual - 0.5 * self.q * (v @ v.sum(axis=0) - np.einsum("ik,ik->i", v, v))
        self.scores += proj / c2
        self.steps += 1


def audit_run(run_dir, *, canaries: int | None = None, seed: int = 0,
              confidence: float = 0.95, canary_norm: float = 4.0, guesses=None,
              noise_scale: float = 1.0, progress: bool = False) -> OneRunResult:
    r"""Audit a finished ``qshiftdp train`` run end to end in one run, with gradient canaries.

    **What is re-run.** The configuration saved in ``run_dir/checkpoint.pt`` (the
    :class:`~pennylane_qshiftdp.app.job.TrainConfig` of the run: data set and split,
    preprocessing, model and initialisation, loader batch size and so the Poisson rate q,
    epochs, σ calibrated from the same budget, clip mode, accountant, adjacency, credit mode,
    shots) is trained again by :func:`~pennylane_qshiftdp.app.job.train` itself, with
    :func:`~pennylane_qshiftdp.make_private` and the job's optimizer; only the noise and the
    Poisson sampling are seeded (``secure_mode=False``: the same laws, repeatable) and nothing
    is written (``output_dir=None``). ``run_dir`` is only read.

    **The canaries** (Steinke, Nasr, Jagielski, arXiv:2305.08846, Algorithm 1): each of the
    m canaries is included by an independent fair coin (its own seeded stream, drawn before
    the run and used by nothing else). An included canary is Poisson-sampled into each step's
    batch with the run's rate q, like any example; when sampled it is a crafted per-example
    gradient (white box, Nasr et al., arXiv:2302.07956) appended to the parameters'
    ``grad_sample`` before the optimizer clips (``train(private_hook=...)`` wraps the
    optimizer's ``clip_and_accumulate``, the seam of
    :func:`~pennylane_qshiftdp.audit.optimizer_release`). In every clip group g a canary's
    gradient is ``canary_norm`` × C_g along a unit direction :math:`u_{i,g,t}` drawn afresh at
    every step (public, seeded, independent of the coins), so the clip leaves exactly the
    sensitivity :math:`C_t = \sqrt{\sum_g C_g^2}` at the current clip norms. The m directions
    of a step are L = ⌈m/d⌉ **orthonormal layers** (d the smallest clip group's dimension): a
    canary overlaps none of its own layer, and exactly L − 1 units of squared overlap in all
    (a union of orthonormal bases is a tight frame).

    **The score** reads what the run releases, not the parameter update: the optimizer's noisy
    sum :math:`R_t` (``p.grad`` after ``scale_grad``, just before the wrapped torch optimizer
    steps, times the public expected batch size qN), minus :math:`K_t`, the clipped sum of the
    step's non-canary examples (computed by the optimizer's own clip on those rows alone,
    before the step clips the whole batch), minus the other canaries' *expected* contribution:
    :math:`\mathrm{score}_i = \sum_t \langle R_t - K_t - \tfrac q2 \sum_{j \ne i} v_{j,t},\,
    v_{i,t}\rangle / C_t^2`, :math:`v_{i,t} = (C_g u_{i,g,t})_g`. What is left is the canary's
    own hits, the DP noise and the other canaries' fluctuation around their mean.
    :func:`~pennylane_qshiftdp.audit.one_run_bound` guesses from the top and bottom scores.

    **Why the bound stays valid** (the DP threat model). DP holds against an adversary who knows
    every example but the target and sees every release. Here the "output" the guesses use is
    (R_1, …, R_T) together with the other examples' Poisson draws of every step: the draws are
    independent of the canaries, and given them and the past releases (so θ_t) each step is the
    same sampled Gaussian mechanism in each canary, only shifted by the known :math:`K_t` — so
    this augmented output has the ledger's (ε, δ) in each canary, and the guesses, a function
    of it and of public choices (q, directions, seeds), meet Thm. 3.1's assumption. The
    other canaries' coins and draws are never used (only their expected contribution,
    public); the coins are independent of everything else. Reading :math:`R_t` instead of
    :math:`\theta_t - \theta_{t+1}` removes the learning rate and momentum, which only
    post-process it. The audit therefore tests the optimizer's clip, noise and scaling of
    every step at full strength, and the data's gradients no longer mask the canaries (a leak
    through the data path, e.g. a batch-dependent noise level, still shows in :math:`R_t`); a
    leak outside the released gradients (e.g. the ledger, metrics) is not what this scores.

    **Power.** Without noise an included canary scores about Tq and a left-out one 0, with
    a spread of about :math:`\sqrt{T(L-1)q/2}` from the other canaries; the default m
    (:func:`default_canaries`: :math:`L = 1 + \lfloor Tq/2 \rfloor` layers of d, at most 1000)
    keeps their ratio near 2 or above, so a mechanism without noise is refuted when its claim
    is below about 1.5 (docs/audit.md has measured numbers). More canaries raise the ceiling
    and help against a mechanism with some noise (there the DP noise dominates the
    interference), less so against none. Under replace-one adjacency the canaries are added or
    removed, which the run's 2σC noise covers with room to spare: the audit is conservative
    there.

    Args:
        run_dir: the ``--output-dir`` of a finished private ``qshiftdp train`` run.
        canaries: m ≥ 2, or ``None``: :func:`default_canaries` of the re-run (144 for the
            default job: 24 weights, 50 steps, q = 0.2).
        seed: seeds the coins, the canaries' sampling and directions.
        confidence: of the bound, in (0, 1).
        canary_norm: each canary group part's norm in clip norms (≥ 1, so every clip binds).
        guesses: guess counts of :func:`~pennylane_qshiftdp.audit.one_run_bound`.
        noise_scale: **for testing the audit itself**: multiplies every standard normal the
            optimizer draws (1: the product's mechanism; 0: no noise at all, while the ledger
            still claims the run's ε). Anything but 1 audits a broken mechanism.
        progress: show the training progress bar.

    Returns:
        OneRunResult: ``label``, ``run_dir``, ``canaries``, ``layers`` (L), ``steps``,
        ``sample_rate``, ``parameters``, ``directions`` (``"orthonormal"``),
        ``claimed_epsilon`` (the run's ledger), ``rerun_epsilon`` (the re-run's ledger),
        ``delta``, ``bound``, ``epsilon_lower_bound``, ``ceiling``, ``confidence``, ``verdict``
        (``"PROVEN CLAIM REFUTED"``, ``"not refuted"`` or ``"finding: ..."``), ``finding``,
        ``scores``, ``included``, ``thresholds`` (``in``: the lowest score guessed in, ``out``:
        the highest guessed out), ``canaries_sampled``, ``noise_scale``, ``seconds``,
        ``config``, ``limits`` (``ceiling``, ``expected_bound`` of
        :func:`expected_one_run_bounds` for the claimed noise, half of it and none, and
        ``text``, the limits in words; ``None`` if no step ran). A run that crashes or yields
        non-finite scores is a finding, not an exception.

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

            r = audit_run("runs/qshiftdp-train", seed=0)
            print(r)  # claimed ε, audited ε ≥ ..., CEILING, verdict
    """
    from .job import train

    t0 = time.perf_counter()
    run_dir = Path(run_dir)
    m = None
    if canaries is not None:
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
    hook = _Canaries(m, seed, canary_norm, noise_scale, config.epochs)
    rerun = dataclasses.replace(config, output_dir=None, diagnostics=False, secure_mode=False)
    finding, rerun_eps = None, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # the audited run's plan was accepted (or overridden) when it trained
            result = train(rerun, progress=progress, private_hook=hook, skip_plan_check=True)
        rerun_eps = float(result.epsilon)
        if hook.scores is None:
            finding = "the re-run never reached the private optimizer"
        elif not np.all(np.isfinite(hook.scores)):
            finding = "non-finite release (canary scores)"
        elif hook.steps == 0:
            finding = "the re-run took no step"
    except Exception as err:  # noqa: BLE001 - a crashing run is a finding
        finding = f"the re-run crashed: {type(err).__name__}: {err}"
    m = hook.m if hook.m is not None else (m if m is not None else 2)
    included = hook.included if hook.included is not None else np.zeros(m, dtype=bool)
    scores = hook.scores if hook.scores is not None else np.zeros(m)
    bound, eps, thresholds = None, 0.0, None
    if finding is None:
        bound = one_run_bound(scores, included, delta=delta, alpha=alpha, guesses=guesses,
                              score="projection")
        eps = bound.epsilon_lower_bound
        order = np.sort(scores)[::-1]
        thresholds = {"in": float(order[bound.k_positive - 1]),
                      "out": float(order[m - bound.k_negative]) if bound.k_negative else None}
        if rerun_eps is not None and not math.isclose(rerun_eps, claim, rel_tol=1e-6):
            finding = (f"the re-run's ledger claims ε = {rerun_eps:.6g}, the run's ledger "
                       f"{claim:.6g}: the re-run is not the audited configuration")
    ceiling = max_certifiable_one_run_epsilon(m, delta=delta, alpha=alpha, guesses=guesses)
    limits = None
    if hook.steps and getattr(hook, "noise", None):
        power = expected_one_run_bounds(canaries=m, steps=hook.steps, sample_rate=hook.q,
                                        noise_multiplier=hook.noise, delta=delta,
                                        confidence=confidence, guesses=guesses, seed=seed)
        limits = {"ceiling": ceiling, "expected_bound": power,
                  "text": _limits_text(claim, ceiling, power)}
    refuted = eps > claim
    verdict = ("PROVEN CLAIM REFUTED" if refuted else
               f"finding: {finding}" if finding else "not refuted")
    label = f"qshiftdp train run {run_dir}" + ("" if noise_scale == 1.0 else
                                               f" (noise × {noise_scale:g}: broken on purpose)")
    return OneRunResult(
        label=label, run_dir=str(run_dir), canaries=m, layers=hook.layers, steps=hook.steps,
        sample_rate=getattr(hook, "q", None), parameters=hook.parameters,
        directions="orthonormal", claimed_epsilon=claim, rerun_epsilon=rerun_eps, delta=delta,
        bound=bound, epsilon_lower_bound=eps, ceiling=ceiling, confidence=confidence,
        verdict=verdict, finding=finding, scores=scores.tolist(), included=included.tolist(),
        thresholds=thresholds, canaries_sampled=hook.sampled, canary_norm=float(canary_norm),
        noise_scale=float(noise_scale), seed=int(seed), limits=limits,
        config={k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(config).items()},
        seconds=time.perf_counter() - t0)
