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

__all__ = ["RUN_FILES", "audit_run", "default_canaries"]

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


#: Default number of orthonormal blocks: enough that each canary is active on about
#: ``_HITS_PER_CANARY`` sampled steps on average (T q / P ≥ 3), never more than 1000 canaries.
_HITS_PER_CANARY = 3.0
_MAX_DEFAULT_CANARIES = 1000


def default_canaries(dimension: int, steps: int, sample_rate: float) -> int:
    r"""The default m of :func:`audit_run`: P orthonormal blocks of d canaries (≤ 1000).

    :math:`P = \max(1, \lfloor T q / 3 \rfloor)` blocks, so that each canary, active at every
    P-th step, is sampled about three times or more over the run when included
    (:math:`(1 - q)^{T/P}` is then small), and :math:`m = \min(P d, 1000)`, d the smallest clip
    group's dimension (the most canaries one step holds orthonormally); at least 2.

    Args:
        dimension: d ≥ 1.
        steps: T ≥ 1, the run's planned steps.
        sample_rate: q in (0, 1].

    Returns:
        int: m.

    Example:
        >>> default_canaries(24, 50, 0.2)  # the default qshiftdp train job
        72
        >>> default_canaries(24, 36, 1 / 9)
        24
    """
    blocks = max(1, math.floor(steps * sample_rate / _HITS_PER_CANARY + 1e-9))
    return max(2, min(blocks * int(dimension), _MAX_DEFAULT_CANARIES))


class _Canaries:
    """The hook ``train(private_hook=...)`` installs on the job's optimizer (one run)."""

    def __init__(self, m, seed, canary_norm, noise_scale, epochs):
        self.requested, self.m, self.seed = m, None, int(seed)
        self.included = None
        ss = np.random.SeedSequence([int(seed), 2305, 1])
        self.sample_rng, self.dir_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        self.canary_norm, self.noise_scale = float(canary_norm), float(noise_scale)
        self.epochs = int(epochs)
        self.scores = None  # Σ_{t: i active} <released_t − known_t, v_it>/C_t²
        self.steps = self.sampled = 0
        self.parameters = self.capacity = self.blocks = 0
        self._pending = None

    def __call__(self, model, opt, loader):
        self.q = float(opt.ledger.sample_rate)
        self.parameters = sum(p.numel() for p in opt.params)
        self.capacity = min(sum(p.numel() for p in g) for g, _ in self._groups(opt))
        planned = max(1, len(loader) * self.epochs)
        m = (default_canaries(self.capacity, planned, self.q) if self.requested is None
             else self.requested)
        self.m, self.blocks = m, math.ceil(m / self.capacity)
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
        m, step = self.m, self.steps
        block = np.array_split(np.arange(m), self.blocks)[step % self.blocks]
        # the clipped contribution of active canary i: C_g u_{i,g} in every group (norm
        # C = √ΣC_g²), orthonormal u within the step's block (|block| ≤ every group's dim)
        parts = {}
        for group, c in groups:
            d = sum(p.numel() for p in group)
            u = np.linalg.qr(self.dir_rng.standard_normal((d, len(block))))[0].T
            off = 0
            for p in group:
                n = p.numel()
                parts[id(p)] = c * u[:, off:off + n]
                off += n
        v = np.concatenate([parts[id(p)] for p in opt.params], axis=1)  # (|block|, K)
        c2 = sum(c * c for _, c in groups)
        sampled = self.included & (self.sample_rng.random(m) < self.q)
        self.sampled += int(sampled.sum())
        # every sampled canary joins the batch; the inactive ones with a zero gradient
        rows = np.zeros((int(sampled.sum()), v.shape[1]))
        active = np.zeros(m, dtype=bool)
        active[block] = True
        pos = np.cumsum(sampled) - 1  # row of each sampled canary
        hit = block[sampled[block]]
        rows[pos[hit]] = self.canary_norm * v[sampled[block]]
        rows = torch.as_tensor(rows)
        off = 0
        for p in opt.params:
            n = p.numel()
            gs = p.grad_sample
            if isinstance(gs, list):
                gs = torch.cat(gs) if gs else torch.zeros(0, *p.shape, dtype=p.dtype)
            add = rows[:, off:off + n].reshape(len(rows), *p.shape).to(gs.device, gs.dtype)
            p.grad_sample = torch.cat([gs, add])
            off += n
        self._pending = (block, v, c2)

    def _score(self, opt):
        """Project the step's released noisy sum, minus the known part, on the active canaries."""
        block, v, c2 = self._pending
        self._pending = None
        grad = torch.cat([p.grad.detach().reshape(-1).double().cpu() for p in opt.params])
        scale = 1.0
        if opt.loss_reduction == "mean":  # public: the expected batch size (× virtual steps)
            scale = float(opt.expected_batch_size) * float(opt._scale_iterations)
        residual = grad.numpy() * scale - self._known
        self.scores[block] += v @ residual / c2
        self.steps += 1


def audit_run(run_dir, *, canaries: int | None = None, seed: int = 0,
              confidence: float = 0.95, canary_norm: float = 4.0, guesses=None,
              noise_scale: float = 1.0, progress: bool = False) -> OneRunResult:
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
    m canaries is included by an independent fair coin (its own seeded stream, drawn before
    the run and used by nothing else). An included canary is Poisson-sampled into each step's
    batch with the run's rate q, like any example; when sampled it is a crafted per-example
    gradient (white box, Nasr et al., arXiv:2302.07956) appended to the parameters'
    ``grad_sample`` before the optimizer clips (``train(private_hook=...)`` wraps the
    optimizer's ``clip_and_accumulate``, the seam of
    :func:`~pennylane_qshiftdp.audit.optimizer_release`). The canaries are split into P blocks
    of at most d (the smallest clip group's dimension); at step t block t mod P is **active**:
    in every clip group g its canaries' gradients are ``canary_norm`` × C_g along directions
    :math:`u_{i,g,t}` drawn afresh (public, seeded) and **orthonormal within the block**, so
    the clip leaves exactly the sensitivity :math:`C_t = \sqrt{\sum_g C_g^2}` at the current
    clip norms and no two canaries of a step overlap. A sampled canary of an inactive block
    joins the batch with a zero gradient (a canary is any fixed gradient sequence).

    **The score** reads what the run releases, not the parameter update: the optimizer's noisy
    sum :math:`R_t` (``p.grad`` after ``scale_grad``, just before the wrapped torch optimizer
    steps, times the public expected batch size), minus :math:`K_t`, the clipped sum of the
    step's non-canary examples, computed by the optimizer's own clip on those rows alone:
    :math:`\mathrm{score}_i = \sum_{t:\, i\ \mathrm{active}} \langle R_t - K_t, v_{i,t}\rangle
    / C_t^2`, :math:`v_{i,t} = (C_g u_{i,g,t})_g`. Left: the canary's own hits, the noise, and
    nothing of the other canaries (orthonormal). :func:`~pennylane_qshiftdp.audit.one_run_bound`
    guesses from the top and bottom scores.

    **Why the bound stays valid** (the DP threat model). DP holds against an adversary who knows
    every example but the target and sees every release. Here the "output" the guesses use is
    (R_1, …, R_T) together with the other examples' Poisson draws of every step: the draws are
    independent of the canaries, and given them and the past releases (so θ_t) each step is the
    same sampled Gaussian mechanism in each canary, only shifted by the known :math:`K_t` — so
    this augmented output has the ledger's (ε, δ) in each canary, and the guesses, a function
    of it and of public choices (directions, blocks, seeds), meet Thm. 3.1's assumption. The
    other canaries' coins and draws are never used; the coins are independent of everything
    else. Reading :math:`R_t` instead of :math:`\theta_t - \theta_{t+1}` removes the learning
    rate and momentum, which only post-process it. The default run therefore tests the
    optimizer's clip, noise and scaling of every step at full strength; the data's gradients
    no longer mask the canaries (a leak through the data path alone, e.g. a batch-dependent
    noise level, is still seen in :math:`R_t`).

    **Power.** The default m (:func:`default_canaries`: P = max(1, ⌊Tq/3⌋) blocks of d, at most
    1000) keeps each included canary sampled about Tq/P ≥ 3 times on average while it is
    active, so without noise nearly every included canary scores ≥ 1 and every left-out one 0;
    more canaries raise the ceiling but shorten each one's active steps. Under replace-one
    adjacency the canaries are added or removed, which the run's 2σC noise covers with room to
    spare: the audit is conservative there.

    Args:
        run_dir: the ``--output-dir`` of a finished private ``qshiftdp train`` run.
        canaries: m ≥ 2, or ``None``: :func:`default_canaries` of the re-run (72 for the
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
        OneRunResult: ``label``, ``run_dir``, ``canaries``, ``blocks`` (P), ``steps``,
        ``sample_rate``, ``parameters``, ``directions`` (``"orthonormal"``),
        ``claimed_epsilon`` (the run's ledger), ``rerun_epsilon`` (the re-run's ledger),
        ``delta``, ``bound``, ``epsilon_lower_bound``, ``ceiling``, ``confidence``, ``verdict``
        (``"PROVEN CLAIM REFUTED"``, ``"not refuted"`` or ``"finding: ..."``), ``finding``,
        ``scores``, ``included``, ``thresholds`` (``in``: the lowest score guessed in, ``out``:
        the highest guessed out), ``canaries_sampled``, ``noise_scale``, ``seconds``,
        ``config``. A run that crashes or yields non-finite scores is a finding, not an
        exception.

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
    from ..training import train

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
            result = train(rerun, progress=progress, private_hook=hook)
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
    refuted = eps > claim
    verdict = ("PROVEN CLAIM REFUTED" if refuted else
               f"finding: {finding}" if finding else "not refuted")
    label = f"qshiftdp train run {run_dir}" + ("" if noise_scale == 1.0 else
                                               f" (noise × {noise_scale:g}: broken on purpose)")
    return OneRunResult(
        label=label, run_dir=str(run_dir), canaries=m, blocks=hook.blocks, steps=hook.steps,
        sample_rate=getattr(hook, "q", None), parameters=hook.parameters,
        directions="orthonormal", claimed_epsilon=claim, rerun_epsilon=rerun_eps, delta=delta,
        bound=bound, epsilon_lower_bound=eps, ceiling=ceiling, confidence=confidence,
        verdict=verdict, finding=finding, scores=scores.tolist(), included=included.tolist(),
        thresholds=thresholds, canaries_sampled=hook.sampled, canary_norm=float(canary_norm),
        noise_scale=float(noise_scale), seed=int(seed),
        config={k: (list(v) if isinstance(v, tuple) else v)
                for k, v in dataclasses.asdict(config).items()},
        seconds=time.perf_counter() - t0)
