r"""Audit any mechanism through a seam: a release function, or a DP optimizer in the white box.

**The seam.** :func:`audit_release` audits any function ``release(dataset, seed)`` that runs a
private mechanism on a data set and returns what it releases (a tensor or array), optionally
with the privacy it claims: ``(release, epsilon)`` or ``(release, {"epsilon": ...,
"credited_epsilon": ...})``. It runs the function on :math:`D` and on :math:`D'` (given by the
caller) with fresh seeds, scores the releases and bounds ε with every estimator
(:mod:`~pennylane_qshiftdp.audit.statistics`). A release that raises or is non-finite is a
*finding* (ε = ∞ evidence when it happens in one world only), never an exception of the audit.

**The white box.** :func:`optimizer_release` turns a DP optimizer class — the product's
:class:`~pennylane_qshiftdp.QShiftDPOptimizer`, Opacus's ``DPOptimizer`` or any subclass of
either — into such a release function whose "data set" is a tensor of crafted per-example
gradients (the gradient canaries of Nasr et al., arXiv:2302.07956 §3: the adversary controls
the gradient, so the audit measures the optimizer's clipping, noise and ledger and nothing
else). :func:`audit_optimizer` audits it in the "zero background" world of that paper: the
other examples' gradients are 0 (or lie in directions the canary does not use), and the canary's
gradient has norm ``canary_norm`` × C along its own coordinate in every clip group, so a correct
optimizer moves the release by exactly the sensitivity C and a broken one (no clipping, less
noise than claimed, a ledger that charges too little) is seen. With adaptive clipping the
release also carries the change of the clip norm, so a canary below the clip norm (counted as
unclipped) audits the noisy count. :func:`audit_optimizer_one_run` audits a whole multi-step run
with many canaries at once (Steinke, Nasr, Jagielski, arXiv:2305.08846).

Tests and users audit a broken or custom mechanism by subclassing, never by editing the
product: e.g. ``class HalfNoise(QShiftDPOptimizer)`` whose ``add_noise`` keeps half the noise.

References:
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis, arXiv:2302.07956 (v1),
    §3–4 (gradient canaries, zero background, Gaussian-DP fit).
    Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1) (one training run).
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._formatting import format_fixed_down
from .._validation import check_delta, check_epsilon, check_positive_int, check_probability
from ..accountants.calibration import DEFAULT_ACCOUNTANT, calibrate_noise_multiplier
from ..accountants.ledger import PrivacyLedger
from ..optimizers.optimizer import QShiftDPOptimizer
from .result import AuditResult, analyse_releases
from .scores import projection_score
from .specs import TrialSpec, reject_unknown, spec_from
from .statistics import OneRunBound, max_certifiable_one_run_epsilon, one_run_bound

if TYPE_CHECKING:
    from opacus.optimizers import DPOptimizer

__all__ = [
    "OneRunResult",
    "OptimizerSpec",
    "WhiteBoxSpec",
    "audit_optimizer",
    "audit_optimizer_one_run",
    "audit_release",
    "optimizer_release",
    "zero_background",
]


def _world_seeds(seed: int, trials: int) -> np.ndarray:
    """Per world (D, D') and trial one seed, shape (2, trials)."""
    state = np.random.SeedSequence([int(seed), 22]).generate_state(2 * trials, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64).reshape(2, trials)


def _split_claim(out):
    """(release array, proven ε or None, credited ε or None) of a release function's output."""
    claim = credited = None
    if isinstance(out, tuple) and len(out) == 2:
        out, c = out
        if isinstance(c, Mapping):
            claim = c.get("epsilon")
            credited = c.get("credited_epsilon")
        else:
            claim = c
    if isinstance(out, torch.Tensor):
        out = out.detach().cpu().double().numpy()
    rel = np.asarray(out, dtype=float).reshape(-1)
    return (rel, None if claim is None else float(claim),
            None if credited is None else float(credited))


def _run_trials(release: Callable, worlds: tuple, seeds: np.ndarray, trials: int,
                progress: Callable | None) -> tuple:
    """Run ``release`` on both worlds for every trial: (releases per world, failed per world,
    errors, claimed ε, credited ε, warning messages, the release's size or ``None``)."""
    rels: list[list] = [[], []]
    failed: list[list[bool]] = [[], []]
    errors: list[str] = []
    claims, credited = [], []
    caught: list[str] = []
    width = None
    for t in range(trials):
        for w in (0, 1):
            where = "D" if w == 0 else "D'"
            try:
                with warnings.catch_warnings(record=True) as ws:
                    warnings.simplefilter("always")
                    rel, eps, cred = _split_claim(release(worlds[w], int(seeds[w, t])))
                caught.extend(str(x.message) for x in ws)
            except Exception as err:  # noqa: BLE001 - a crash is a finding, not an exception
                errors.append(f"{type(err).__name__} on {where}: {err}")
                rels[w].append(None)
                failed[w].append(True)
                continue
            if width is not None and rel.size != width:
                errors.append(f"release of size {rel.size} (not {width}) on {where}")
                rels[w].append(None)
                failed[w].append(True)
                continue
            width = rel.size
            bad = not np.all(np.isfinite(rel))
            if bad:
                errors.append(f"non-finite release on {where}")
            rels[w].append(rel)
            failed[w].append(bad)
            if eps is not None:
                claims.append(eps)
            if cred is not None:
                credited.append(cred)
        if progress is not None:
            progress(t + 1, trials)
    return rels, failed, errors, claims, credited, caught, width


def _canary_direction(rel_d: np.ndarray, rel_dp: np.ndarray, fail_d: np.ndarray,
                      fail_dp: np.ndarray, width: int,
                      canary_direction: ArrayLike | None) -> np.ndarray:
    """The given direction, or the difference of the worlds' mean releases over the first
    quarter of the trials (all ones if that is zero or not finite)."""
    trials = len(fail_d)
    sel = max(1, trials // 4)
    if canary_direction is None:
        ok_d, ok_dp = ~fail_d[:sel], ~fail_dp[:sel]
        direction = np.zeros(width)
        if ok_d.any() and ok_dp.any():
            direction = rel_dp[:sel][ok_dp].mean(axis=0) - rel_d[:sel][ok_d].mean(axis=0)
        if not np.any(direction) or not np.all(np.isfinite(direction)):
            direction = np.ones(width)
    else:
        direction = np.asarray(canary_direction, dtype=float).reshape(-1)
    return direction


def audit_release(release: Callable, dataset: object, dataset_with_canary: object,
                  trial_spec: TrialSpec | None = None, *, delta: float,
                  claimed_epsilon: float | None = None, target_epsilon: float | None = None,
                  canary_direction: ArrayLike | None = None,
                  scores: Mapping[str, Callable] | None = None, label: str = "release",
                  settings: Mapping | None = None, **options: Any) -> AuditResult:
    r"""Audit any mechanism given as ``release(dataset, seed)`` on :math:`D` and :math:`D'`.

    For every trial and world the audit calls ``release(D, seed)`` / ``release(D', seed)`` with
    a fresh seed derived from ``seed``, records the release (flattened), the claim it returns
    (if any) and whether it raised or was non-finite, and then bounds ε from the scores with
    :func:`~pennylane_qshiftdp.audit.result.analyse_releases`.

    Args:
        release: ``release(dataset, seed: int)`` returning the released tensor/array, or
            ``(release, epsilon)``, or ``(release, {"epsilon": ..., "credited_epsilon": ...})``
            with the ε the mechanism claims after the run (e.g. its ledger's).
        dataset: :math:`D`, passed to ``release`` as is.
        dataset_with_canary: :math:`D'` (:math:`D` with the canary), passed as is.
        trial_spec: the trials (:class:`~pennylane_qshiftdp.audit.specs.TrialSpec`): trials
            per world, ≥ 8; the seed that derives every trial's seed (repeatable); the joint
            confidence of every bound, in (0, 1); the estimators, a subset of
            ``("clopper_pearson", "gdp")``; an optional ``progress(done, total)`` callback.
            Default 2000 trials, seed 0, confidence 0.95, both estimators.
        delta: δ of the claim, in (0, 1).
        claimed_epsilon: the claim, if ``release`` does not return one (the largest of both
            is used).
        target_epsilon: the mechanism's budget, reported only.
        canary_direction: the direction of the ``projection`` score, shape ``(K,)``; ``None``
            estimates it from the first quarter of the trials (mean release on :math:`D'` minus
            on :math:`D`), which lies in every estimator's selection part.
        scores: extra scores, name -> ``f(releases (trials, K)) -> (trials,)``.
        label: the configuration's name.
        settings: JSON-friendly description recorded in the result.
        **options: fields of :class:`~pennylane_qshiftdp.audit.specs.TrialSpec` as keywords
            (``trials``, ``seed``, ``confidence``, ``estimators``, ``progress``): they replace
            those of ``trial_spec``.

    Returns:
        AuditResult: bounds, ceilings, findings, verdict against the largest claim.

    Raises:
        ValueError: for invalid ``trials``, δ or confidence, or if no claim is given at all.
        TypeError: for a keyword that is no field of the trial spec.

    References:
        Nasr et al., arXiv:2302.07956 (v1); Jagielski et al., arXiv:2006.07709 (v1).

    Example:
        >>> def release(data, seed):  # the Gaussian mechanism of a sum, sensitivity 1
        ...     g = np.random.default_rng(seed)
        ...     return np.array([sum(data) + 2.0 * g.normal()]), 1.9  # σ = 2 claims ε ≈ 1.9
        >>> r = audit_release(release, [0.0] * 5, [0.0] * 5 + [1.0], delta=1e-5, trials=400)
        >>> r.verdict, r.refuted_by
        ('not refuted', ())
    """
    t0 = time.perf_counter()
    options = dict(options)
    spec = spec_from(TrialSpec, trial_spec, options, "trial_spec", trials=2000)
    reject_unknown("audit_release", options)
    trials, seed, confidence = spec.trials, spec.seed, spec.confidence
    if trials < 8:
        raise ValueError(f"`trials` must be at least 8. Found {trials}.")
    delta = check_delta(delta, "delta")
    seeds = _world_seeds(seed, trials)
    rels, failed, errors, claims, credited, caught, width = _run_trials(
        release, (dataset, dataset_with_canary), seeds, trials, spec.progress)
    if claimed_epsilon is not None:
        claims.append(float(check_epsilon(claimed_epsilon, "claimed_epsilon")))
    if not claims and not all(failed[0] + failed[1]):
        raise ValueError("No claim to audit: `release` returned no ε and `claimed_epsilon` is "
                         "None.")
    if width is None:  # every release crashed: the shape the canary direction expects
        width = 1 if canary_direction is None else int(np.size(canary_direction))
    rel_d, rel_dp = (np.stack([np.full(width, np.nan) if r is None else r for r in rs])
                     for rs in rels)
    fail_d, fail_dp = np.array(failed[0]), np.array(failed[1])
    direction = _canary_direction(rel_d, rel_dp, fail_d, fail_dp, width, canary_direction)
    scorers = {"projection": lambda r: projection_score(r, direction)}
    scorers.update(scores or {})
    a = analyse_releases(rel_d, rel_dp, scorers=scorers, delta=delta, confidence=confidence,
                         fail_d=fail_d, fail_dp=fail_dp, errors=tuple(errors),
                         estimators=spec.estimators)
    return AuditResult(
        label=label, status="audited", message=None, trials=trials, seed=seed,
        target_epsilon=None if target_epsilon is None else float(target_epsilon), delta=delta,
        beta=0.0, claimed_epsilon=max(claims) if claims else None,
        claimed_epsilon_min=min(claims) if claims else None,
        credited_epsilon=max(credited) if credited else None, bounds=a["bounds"],
        epsilon_lower_bound=a["epsilon_lower_bound"],
        max_certifiable_epsilon=a["max_certifiable_epsilon"], confidence=confidence,
        seconds=time.perf_counter() - t0, settings=dict(settings or {}),
        warnings=tuple(dict.fromkeys(caught)), scores=a["scores"], releases=(rel_d, rel_dp),
        gdp_bounds=a["gdp_bounds"], ceilings=a["ceilings"], findings=a["findings"],
        failures=a["failures"],
    )


# ============================================================================ the white box
def _group_sizes(shapes):
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes or any(math.prod(s) < 1 for s in shapes):
        raise ValueError(f"`shapes` must be non-empty parameter shapes. Found {shapes!r}.")
    return shapes, [math.prod(s) for s in shapes]


def optimizer_release(optimizer_class: type[DPOptimizer] = QShiftDPOptimizer, *,
                      target_epsilon: float, target_delta: float, steps: int = 1,
                      max_grad_norm: float = 1.0, shapes: Sequence[Sequence[int]] = ((2,),),
                      clip_norms: Sequence[float] | None = None,
                      adaptive_clipping: Mapping | None = None,
                      accountant: str = DEFAULT_ACCOUNTANT, lr: float = 1.0,
                      expected_batch_size: float | None = None,
                      optimizer_kwargs: Mapping | None = None) -> Callable:
    r"""A release function ``release(gradients, seed)`` running a DP optimizer on crafted gradients.

    Per call: parameters of ``shapes`` (zeros), σ from
    :func:`~pennylane_qshiftdp.calibrate_noise_multiplier` for (``target_epsilon``,
    ``target_delta``, q = 1, ``steps``), a :class:`~pennylane_qshiftdp.PrivacyLedger`
    (for the product's optimizer), and ``optimizer_class(SGD(params, lr), noise_multiplier=σ,
    max_grad_norm=C, expected_batch_size=n, generator=seeded, ...)``. Each of ``steps`` steps sets
    every parameter's ``grad_sample`` to its slice of the crafted gradients (shape ``(n, K)``,
    K = the parameters' total size, one row per example; the same every step) and calls
    ``step()``. The release is the noisy sum :math:`(w_0 - w_T)\,n/\mathrm{lr}` (flattened), and,
    with adaptive clipping, one more coordinate :math:`\ln(C_0/C_T)` (the noisy count moved the
    clip norm). The claim is the ledger's ε after the run.

    Args:
        optimizer_class: :class:`~pennylane_qshiftdp.QShiftDPOptimizer` (default), Opacus's
            ``DPOptimizer`` or a subclass of either (the seam for custom or broken mechanisms).
        target_epsilon, target_delta: the budget (σ is calibrated for it).
        steps: steps T ≥ 1 of the run.
        max_grad_norm: C > 0 (flat clipping, or the initial clip norm of adaptive clipping).
        shapes: parameter shapes, e.g. ``((4,), (3, 2))`` for a quantum and a classical layer.
        clip_norms: optional per-parameter clip norms (per-layer clipping, the product's
            ``clip_groups``; the noise uses :math:`\sqrt{\sum_g C_g^2}`).
        adaptive_clipping: the product optimizer's ``adaptive_clipping`` dict, or ``None``.
        accountant: ``"pld"`` (default), ``"rdp"`` or ``"prv"``.
        lr: SGD learning rate.
        expected_batch_size: the optimizer's qN, the same in both worlds (public); default
            the number of rows of each call's gradients. A fixed value lets the adaptive
            clip's count differ between the worlds (the count is divided by it).
        optimizer_kwargs: further keyword arguments of ``optimizer_class``.

    Returns:
        Callable: ``release(gradients, seed) -> (np.ndarray, {"epsilon": ε or None})``.

    Raises:
        ValueError: for invalid settings (also those that the optimizer raises when first
            called are reported by the audit as findings, not raised).

    Example:
        >>> rel = optimizer_release(target_epsilon=2.0, target_delta=1e-5)
        >>> out, claim = rel(torch.tensor([[4.0, 0.0]], dtype=torch.float64), 0)
        >>> out.shape, round(claim["epsilon"], 3)
        ((2,), 1.991)
    """
    check_epsilon(target_epsilon, "target_epsilon")
    check_delta(target_delta, "target_delta")
    steps = check_positive_int(steps, "steps")
    shapes, sizes = _group_sizes(shapes)
    if clip_norms is not None and len(clip_norms) != len(shapes):
        raise ValueError(f"`clip_norms` must have one norm per shape ({len(shapes)}). Found "
                         f"{clip_norms!r}.")
    sigma = calibrate_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                       sample_rate=1.0, steps=steps, accountant=accountant)
    flat_c = (math.sqrt(sum(float(c) ** 2 for c in clip_norms)) if clip_norms is not None
              else float(max_grad_norm))
    extra = dict(optimizer_kwargs or {})
    product = issubclass(optimizer_class, QShiftDPOptimizer)
    # Every trial accounts the same plan: one ledger's compositions serve them all (each
    # trial's ledger is fresh: its own steps, the same ε and budget answers).
    template = (PrivacyLedger(target_epsilon=target_epsilon, target_delta=target_delta,
                              noise_multiplier=sigma, sample_rate=1.0, sensitivity=flat_c,
                              accountant=accountant) if product else None)

    def release(gradients: ArrayLike, seed: int) -> tuple[np.ndarray, dict[str, float | None]]:
        g = torch.as_tensor(gradients, dtype=torch.float64)
        g = g.reshape(g.shape[0], -1) if g.ndim else g.reshape(1, 1)
        if g.shape[1] != sum(sizes):
            raise ValueError(f"`gradients` must have {sum(sizes)} columns (the parameters' "
                             f"total size). Found {g.shape[1]}.")
        n = g.shape[0]
        params = [torch.nn.Parameter(torch.zeros(s, dtype=torch.float64)) for s in shapes]
        gen = torch.Generator().manual_seed(int(seed))
        batch = max(n, 1) if expected_batch_size is None else float(expected_batch_size)
        kw: dict[str, Any] = dict(noise_multiplier=sigma, max_grad_norm=float(max_grad_norm),
                                  expected_batch_size=batch, generator=gen)
        if template is not None:
            kw["ledger"] = template.fresh()
            if clip_norms is not None:
                kw["clip_groups"] = [([p], float(c)) for p, c in zip(params, clip_norms,
                                                                      strict=True)]
            if adaptive_clipping is not None:
                kw["adaptive_clipping"] = dict(adaptive_clipping)
        kw.update(extra)
        opt = optimizer_class(torch.optim.SGD(params, lr=lr), **kw)
        c0 = float(opt.max_grad_norm)
        slices = np.cumsum([0, *sizes])
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            for p, a, b, s in zip(params, slices[:-1], slices[1:], shapes, strict=True):
                p.grad_sample = g[:, a:b].reshape(n, *s).clone()  # type: ignore[attr-defined]
                p.grad = torch.zeros_like(p)
            opt.step()
        out = (torch.cat([(-p.detach()).reshape(-1) for p in params]) * batch / lr).numpy()
        if adaptive_clipping is not None:
            out = np.append(out, math.log(c0 / float(opt.max_grad_norm)))
        ledger = getattr(opt, "ledger", None)
        claim = {"epsilon": float(ledger.epsilon) if ledger is not None else None}
        if ledger is not None and getattr(ledger, "credited_epsilon", None) is not None:
            claim["credited_epsilon"] = float(ledger.credited_epsilon)
        return out, claim

    release.noise_multiplier = sigma  # type: ignore[attr-defined]  # read by the audit
    return release


def zero_background(shapes: Sequence[Sequence[int]] = ((2,),), *, background: int = 1,
                    canary_norm: float = 4.0, max_grad_norm: float = 1.0,
                    clip_norms: Sequence[float] | None = None, orthogonal: bool = False,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    r"""The crafted-gradient data sets :math:`D` and :math:`D'` of the white-box audit.

    :math:`D`: ``background`` examples with zero gradient (``orthogonal=False``, the "zero
    background" world) or with random gradients of norm ≤ C that vanish on every canary
    coordinate (``orthogonal=True``: "a direction the others do not use"). :math:`D'`:
    :math:`D` plus the canary, whose gradient in every clip group is ``canary_norm`` × that
    group's clip norm along the group's first coordinate — so a correct clip leaves exactly
    the sensitivity :math:`C = \sqrt{\sum_g C_g^2}`, and a missing clip ``canary_norm`` × C.

    Args:
        shapes: parameter shapes (as in :func:`optimizer_release`).
        background: examples in :math:`D`, ≥ 1.
        canary_norm: the canary's norm in units of the clip norm, > 0 (< 1 keeps it
            unclipped, which the adaptive clip's count sees).
        max_grad_norm: flat clip norm C (without ``clip_norms``).
        clip_norms: per-parameter clip norms, or ``None``.
        orthogonal: random background gradients orthogonal to the canary.
        seed: seeds the orthogonal background.

    Returns:
        tuple: ``(D, D', direction)``: tensors ``(n, K)`` and ``(n + 1, K)``, and the canary's
        unit direction ``(K,)`` (use it as ``canary_direction``).

    Example:
        >>> d, dp, u = zero_background(((2,), (1,)), clip_norms=(1.0, 2.0))
        >>> dp[-1].tolist(), d.abs().sum().item()
        ([4.0, 0.0, 8.0], 0.0)
    """
    shapes, sizes = _group_sizes(shapes)
    background = check_positive_int(background, "background")
    if not (canary_norm > 0 and math.isfinite(canary_norm)):
        raise ValueError(f"`canary_norm` must be positive and finite. Found {canary_norm!r}.")
    norms = ([float(max_grad_norm)] * len(shapes) if clip_norms is None
             else [float(c) for c in clip_norms])
    k = sum(sizes)
    canary = torch.zeros(k, dtype=torch.float64)
    starts = np.cumsum([0, *sizes])[:-1]
    if clip_norms is None:
        canary[0] = canary_norm * norms[0]
    else:
        for s, c in zip(starts, norms, strict=True):
            canary[int(s)] = canary_norm * c
    d = torch.zeros(background, k, dtype=torch.float64)
    if orthogonal:
        gen = torch.Generator().manual_seed(int(seed))
        d = torch.randn(background, k, generator=gen, dtype=torch.float64)
        d[:, canary != 0] = 0.0
        d = d / d.norm(dim=1, keepdim=True).clamp(min=1e-12) * min(norms)
    direction = (canary / canary.norm()).numpy()
    return d, torch.cat([d, canary[None]]), direction


@dataclasses.dataclass(frozen=True)
class OptimizerSpec:
    r"""The DP optimizer's run that a white-box audit gives its canaries: budget, steps, clip.

    Validated when built (the values are kept as given). :func:`audit_optimizer_one_run` takes
    it; :func:`audit_optimizer` takes its extension :class:`WhiteBoxSpec`.

    Attributes:
        target_epsilon, target_delta: the budget (ε in nats; σ is calibrated for it).
        steps: steps T ≥ 1 of the run; the canary is in every step (q = 1).
        max_grad_norm: the clip norm C (flat clipping, or the initial clip norm of adaptive
            clipping).
        canary_norm: canary gradient norm in clip norms (default 4: a missing clip shows).
        accountant: ``"pld"`` (default), ``"rdp"`` or ``"prv"``.
        optimizer_kwargs: further keyword arguments of the optimizer class.

    Raises:
        TypeError: for a budget that is not a real number or ``steps`` not an integer.
        ValueError: for an invalid budget or ``steps < 1``.

    Source:
        This module; the gradient canaries are those of Nasr et al., arXiv:2302.07956 (v1).

    Example:
        >>> OptimizerSpec(steps=4).target_epsilon
        2.0
    """

    target_epsilon: float = 2.0
    target_delta: float = 1e-5
    steps: int = 1
    max_grad_norm: float = 1.0
    canary_norm: float = 4.0
    accountant: str = DEFAULT_ACCOUNTANT
    optimizer_kwargs: Mapping | None = None

    def __post_init__(self) -> None:
        check_epsilon(self.target_epsilon, "target_epsilon")
        check_delta(self.target_delta, "target_delta")
        check_positive_int(self.steps, "steps")

    def release(self, optimizer_class: type[DPOptimizer], **more: Any) -> Callable:
        """:func:`optimizer_release` of ``optimizer_class`` for this run (``more``: its
        further arguments, e.g. ``shapes``)."""
        return optimizer_release(optimizer_class, target_epsilon=self.target_epsilon,
                                 target_delta=self.target_delta, steps=self.steps,
                                 max_grad_norm=self.max_grad_norm, accountant=self.accountant,
                                 optimizer_kwargs=self.optimizer_kwargs, **more)


@dataclasses.dataclass(frozen=True)
class WhiteBoxSpec(OptimizerSpec):
    r"""The mechanism :func:`audit_optimizer` audits: an :class:`OptimizerSpec` and its data.

    Attributes:
        shapes: parameter shapes (see :func:`optimizer_release`), e.g. ``((4,), (3, 2))``.
        clip_norms: per-parameter clip norms (per-layer clipping), one per shape, or ``None``.
        background: examples in :math:`D`, ≥ 1 (see :func:`zero_background`).
        orthogonal: random background gradients orthogonal to the canary.
        adaptive_clipping: the product optimizer's adaptive-clipping dict, or ``None``.

    The fields of :class:`OptimizerSpec` come first (``canary_norm`` must be positive and
    finite here).

    Raises:
        TypeError: as :class:`OptimizerSpec`, or for a ``background`` that is no integer.
        ValueError: as :class:`OptimizerSpec`, or for empty shapes, ``background < 1``, an
            invalid ``canary_norm`` or not one clip norm per shape.

    Source:
        This module; Nasr et al., arXiv:2302.07956 (v1), §3–4 (zero background).

    Example:
        >>> WhiteBoxSpec(shapes=((4,), (3, 2)), clip_norms=(1.0, 2.0)).background
        1
    """

    shapes: Sequence[Sequence[int]] = ((2,),)
    clip_norms: Sequence[float] | None = None
    background: int = 1
    orthogonal: bool = False
    adaptive_clipping: Mapping | None = None

    def __post_init__(self) -> None:
        shapes, _ = _group_sizes(self.shapes)
        check_positive_int(self.background, "background")
        canary_norm = self.canary_norm
        if not (canary_norm > 0 and math.isfinite(canary_norm)):
            raise ValueError(f"`canary_norm` must be positive and finite. Found "
                             f"{canary_norm!r}.")
        super().__post_init__()
        clip_norms = self.clip_norms
        if clip_norms is not None and len(clip_norms) != len(shapes):
            raise ValueError(f"`clip_norms` must have one norm per shape ({len(shapes)}). "
                             f"Found {clip_norms!r}.")

    def data(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
        """:func:`zero_background` of this spec: ``(D, D', direction)``."""
        return zero_background(self.shapes, background=self.background,
                               canary_norm=self.canary_norm, max_grad_norm=self.max_grad_norm,
                               clip_norms=self.clip_norms, orthogonal=self.orthogonal,
                               seed=seed)

    def settings(self, optimizer_class: type, noise_multiplier: float) -> dict[str, Any]:
        """The JSON-friendly description an :class:`AuditResult` records."""
        clip_norms, adaptive = self.clip_norms, self.adaptive_clipping
        return dict(optimizer=optimizer_class.__name__, target_epsilon=self.target_epsilon,
                    target_delta=self.target_delta, steps=self.steps,
                    shapes=[list(s) for s in self.shapes], max_grad_norm=self.max_grad_norm,
                    clip_norms=None if clip_norms is None else list(clip_norms),
                    canary_norm=self.canary_norm, background=self.background,
                    orthogonal=self.orthogonal,
                    adaptive_clipping=None if adaptive is None else dict(adaptive),
                    noise_multiplier=noise_multiplier, white_box=True)


def audit_optimizer(optimizer_class: type[DPOptimizer] = QShiftDPOptimizer,
                    spec: WhiteBoxSpec | None = None, trial_spec: TrialSpec | None = None, *,
                    label: str | None = None, **options: Any) -> AuditResult:
    r"""White-box audit of a DP optimizer with a full-sensitivity gradient canary.

    :func:`zero_background` builds :math:`D` and :math:`D'`, :func:`optimizer_release` runs
    ``steps`` steps of ``optimizer_class`` on them, :func:`audit_release` scores the releases
    with the canary's known direction (``projection``) — and, with adaptive clipping, the
    clip-norm change (``clip_count``, the noisy unclipped count) — and bounds ε with split-half
    Clopper–Pearson and Gaussian DP. For the correct Gaussian mechanism the projection of
    :math:`D'` is that of :math:`D` shifted by :math:`\sqrt T` standard deviations
    :math:`/\sigma`: the bound is tight up to the estimators' sampling error.

    Args:
        optimizer_class: the optimizer to audit (default the product's); any subclass of
            :class:`~pennylane_qshiftdp.QShiftDPOptimizer` or Opacus's ``DPOptimizer``.
        spec: the mechanism (:class:`WhiteBoxSpec`: budget, steps, parameter shapes and
            clipping, canary norm, background, adaptive clipping, accountant, optimizer
            arguments); default ``WhiteBoxSpec()`` (ε = 2, δ = 1e-5, one step).
        trial_spec: the trials (:class:`~pennylane_qshiftdp.audit.specs.TrialSpec`); default
            10 000 runs per world (ceilings ≈ 6.9 for Clopper–Pearson and ≈ 47 for Gaussian
            DP at 95 %), seed 0 (it also seeds the orthogonal background), both estimators.
        label: the result's name (default the class name).
        **options: fields of :class:`WhiteBoxSpec` or
            :class:`~pennylane_qshiftdp.audit.specs.TrialSpec` as keywords (e.g.
            ``steps=4, trials=400``): they replace those of ``spec``/``trial_spec``.

    Returns:
        AuditResult: see :func:`audit_release`.

    Raises:
        ValueError: for invalid settings.
        TypeError: for a keyword that is no field of either spec.

    References:
        Nasr et al., arXiv:2302.07956 (v1), §3–4.

    Example:
        >>> r = audit_optimizer(trial_spec=TrialSpec(400))
        >>> r.verdict, r.claimed_epsilon < 2.0
        ('not refuted', True)
    """
    options = dict(options)
    spec = spec_from(WhiteBoxSpec, spec, options, "spec")
    trial_spec = spec_from(TrialSpec, trial_spec, options, "trial_spec", trials=10000)
    reject_unknown("audit_optimizer", options)
    d, dp, u = spec.data(trial_spec.seed)
    release = spec.release(optimizer_class, shapes=spec.shapes, clip_norms=spec.clip_norms,
                           adaptive_clipping=spec.adaptive_clipping,
                           expected_batch_size=spec.background)
    extra = {}
    direction = u
    if spec.adaptive_clipping is not None:
        direction = np.append(u, 0.0)
        extra["clip_count"] = lambda r: r[:, -1]
    settings = spec.settings(optimizer_class,
                             release.noise_multiplier)  # type: ignore[attr-defined]
    return audit_release(release, d, dp, trial_spec, delta=spec.target_delta,
                         target_epsilon=spec.target_epsilon, canary_direction=direction,
                         scores=extra, label=label or optimizer_class.__name__,
                         settings=settings)


# ============================================================================ one run
class OneRunResult(dict):
    r"""Result of :func:`audit_optimizer_one_run` (a dict with attribute access).

    Keys: ``label``, ``canaries``, ``steps``, ``claimed_epsilon``, ``delta``, ``bound``
    (:class:`~pennylane_qshiftdp.audit.statistics.OneRunBound`), ``epsilon_lower_bound``,
    ``ceiling``, ``confidence``, ``verdict``, ``seconds``, ``finding`` (or ``None``).
    """

    __getattr__ = dict.__getitem__

    @property
    def proven_refuted(self) -> bool:
        """The one-run bound exceeds the claim."""
        return (self["claimed_epsilon"] is not None
                and self["epsilon_lower_bound"] > self["claimed_epsilon"])

    def as_dict(self) -> dict:
        """JSON-friendly dict."""
        out = dict(self)
        if isinstance(out.get("bound"), OneRunBound):
            out["bound"] = out["bound"].as_dict()
        return out

    def __str__(self) -> str:
        return (f"{self['label']} (one run, {self['canaries']} canaries, {self['steps']} "
                f"steps): claimed ε = {self['claimed_epsilon']}; audited ε ≥ "
                f"{format_fixed_down(self['epsilon_lower_bound'])} at "
                f"{self['confidence']:.0%}; CEILING {self['ceiling']:.2f}: {self['verdict']} "
                f"[{self['seconds']:.1f} s]")


def audit_optimizer_one_run(optimizer_class: type[DPOptimizer] = QShiftDPOptimizer,
                            spec: OptimizerSpec | None = None, *, canaries: int = 1000,
                            seed: int = 0, confidence: float = 0.95,
                            guesses: Iterable[int] | None = None, label: str | None = None,
                            **options: Any) -> OneRunResult:
    r"""One-run white-box audit: m gradient canaries, each in or out by a fair coin, one run.

    Canary i has gradient ``canary_norm`` × C along coordinate i of an m-dimensional parameter;
    it is in the batch of every step with probability 1/2 (independently, seeded). After one run
    of ``steps`` steps the score of canary i is coordinate i of the release;
    :func:`~pennylane_qshiftdp.audit.statistics.one_run_bound` guesses membership from the top
    and bottom scores and bounds ε (Steinke et al.: valid for one run because the coin flips are
    independent of everything else). A crashing or non-finite run is a finding (ε = ∞
    evidence is not claimed: one run gives no second world to compare with).

    Args:
        optimizer_class: the optimizer to audit (see :func:`audit_optimizer`).
        spec: the run (:class:`OptimizerSpec`: budget, steps, clip norm C, canary norm,
            accountant, optimizer arguments); default ``OptimizerSpec()``. A
            :class:`WhiteBoxSpec` is refused (its shapes and background have no meaning here).
        canaries: m ≥ 2.
        seed: seeds the coins and the run.
        confidence: confidence of the bound, in (0, 1).
        guesses: guess counts (default as in ``one_run_bound``).
        label: the result's name.
        **options: fields of :class:`OptimizerSpec` as keywords (e.g. ``steps=4``): they
            replace those of ``spec``.

    Returns:
        OneRunResult: the claim, the bound and its ceiling.

    Raises:
        ValueError: for fewer than 2 canaries, an invalid confidence or an invalid run.
        TypeError: for a :class:`WhiteBoxSpec` or a keyword that is no field of
            :class:`OptimizerSpec`.

    References:
        Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Algorithm 1, Thm. 3.1.

    Example:
        >>> r = audit_optimizer_one_run(canaries=200, seed=1)
        >>> r.verdict, r.epsilon_lower_bound <= r.claimed_epsilon
        ('not refuted', True)
    """
    t0 = time.perf_counter()
    if isinstance(spec, WhiteBoxSpec):
        raise TypeError("`spec` must be an OptimizerSpec, not a WhiteBoxSpec (the one-run audit "
                        "has one parameter of m coordinates and no background).")
    options = dict(options)
    spec = spec_from(OptimizerSpec, spec, options, "spec")
    reject_unknown("audit_optimizer_one_run", options)
    target_delta, max_grad_norm = spec.target_delta, spec.max_grad_norm
    m = check_positive_int(canaries, "canaries")
    if m < 2:
        raise ValueError(f"`canaries` must be at least 2. Found {m}.")
    confidence = check_probability(confidence, "confidence", open_low=True, open_high=True)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2305]))
    included = rng.random(m) < 0.5
    grads = torch.zeros(int(included.sum()), m, dtype=torch.float64)
    grads[torch.arange(grads.shape[0]), torch.as_tensor(np.flatnonzero(included))] = (
        spec.canary_norm * max_grad_norm)
    release = spec.release(optimizer_class, shapes=((m,),))
    alpha = 1.0 - confidence
    finding, claim = None, None
    try:
        data = grads if len(grads) else torch.zeros(1, m, dtype=torch.float64)
        rel, claim, _ = _split_claim(release(data, int(rng.integers(2**62))))
        if not np.all(np.isfinite(rel)):
            finding = "non-finite release"
    except Exception as err:  # noqa: BLE001 - a crash is a finding
        rel, finding = None, f"{type(err).__name__}: {err}"
    if finding is None:
        bound = one_run_bound(rel, included, delta=target_delta, alpha=alpha, guesses=guesses,
                              score="projection")
        eps = bound.epsilon_lower_bound
    else:
        bound, eps = None, 0.0
    ceiling = max_certifiable_one_run_epsilon(m, delta=target_delta, alpha=alpha,
                                              guesses=guesses)
    refuted = claim is not None and eps > claim
    verdict = ("PROVEN CLAIM REFUTED" if refuted else
               f"finding: {finding}" if finding else "not refuted")
    return OneRunResult(label=label or optimizer_class.__name__, canaries=m, steps=spec.steps,
                        claimed_epsilon=claim, delta=target_delta, bound=bound,
                        epsilon_lower_bound=eps, ceiling=ceiling, confidence=confidence,
                        verdict=verdict, seconds=time.perf_counter() - t0, finding=finding)
