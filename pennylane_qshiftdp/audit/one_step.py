r"""Audit of :func:`make_private` and one optimizer step (canary, neighbouring data sets).

A privacy claim (ε, δ) says that for neighbouring data sets :math:`D` and :math:`D' = D \cup
\{z\}` and every set :math:`R` of releases

.. math::

    P[M(D') \in R] \le e^{\varepsilon} P[M(D) \in R] + \delta
    \quad\text{and}\quad
    P[M(D) \in R] \le e^{\varepsilon} P[M(D') \in R] + \delta .

The audit runs the mechanism :math:`M` — :func:`~pennylane_qshiftdp.make_private` and one
optimizer step at sampling rate :math:`q = 1` — many times on :math:`D` and on :math:`D'`, each
trial with a fresh device seed (shot noise) and a fresh DP-noise seed, and reads the *release*:
the weight change times the public divisor :math:`b = |D|` (the same in both worlds) over the
learning rate, i.e. the noisy sum of clipped per-example gradients
:math:`\sum_j \bar g_j + z`. Each release gets two scores,

* ``projection``: the release projected on the canary's expected gradient direction;
* ``lattice``: the distance of the release from the lattice :math:`h\mathbb Z^K`, where
  :math:`h = |c|(\lambda_{\max} - \lambda_{\min})|w| / N_s` is the step on which a sum of
  parameter-shift estimates from :math:`N_s` shots lies (shift coefficient :math:`c`, loss
  weight :math:`w`). A canary whose gradient is off the lattice moves the sum off it, which
  Gaussian noise much smaller than :math:`h` cannot hide.

For each score, a threshold and a direction (``>`` or ``<``) are chosen on the first half of the
trials (the one maximising the lower bound computed on that half), and the true- and
false-positive rates of the rejection region :math:`R` are measured on the second half. With
one-sided Clopper–Pearson bounds :math:`\mathrm{TPR}^-` and :math:`\mathrm{FPR}^+`,

.. math::

    \varepsilon \ge \max\Bigl(\ln\frac{\mathrm{TPR}^- - \delta}{\mathrm{FPR}^+},\;
    \ln\frac{1 - \mathrm{FPR}^+ - \delta}{1 - \mathrm{TPR}^-},\; 0\Bigr)

holds with probability at least the stated confidence. The two bounds of every score are taken
at level :math:`(1 - \text{confidence})/(2S)` for :math:`S` scores (Bonferroni), so every
reported number — per score and their maximum — holds simultaneously. If the scores of the two
worlds separate perfectly, the threshold falls in the gap and the bound is the largest ε the
number of trials can certify (:func:`max_certifiable_epsilon`).

An audited lower bound above the *proven* ε (:attr:`PrivacyLedger.epsilon`, from the Gaussian
noise actually added) refutes the product's guarantee; above the *credited* ε
(:attr:`PrivacyLedger.credited_epsilon`, shot noise counted as Gaussian) it refutes only the
Gaussian approximation of shot noise. A configuration that :func:`make_private` or the optimizer
refuses is reported as refused, with the message.

:func:`audit_one_step` audits any model, loss, data set and canary; the fixed one-qubit setting
is :func:`~pennylane_qshiftdp.audit.setting.audit_setting`. Besides the split-half
Clopper–Pearson bound every release gets the Gaussian-DP bound
(:func:`~pennylane_qshiftdp.audit.statistics.gdp_bound`); a trial that crashes or releases a
non-finite value is a finding, not an exception.

This module is library code: it imports no data set, model or application code (matplotlib is
imported only by :func:`plot_audit`).

References:
    Jagielski, Ullman, Oprea, "Auditing Differentially Private Machine Learning: How Private is
    Private SGD?", arXiv:2006.07709 (v1), §4 (Clopper–Pearson ε lower bound).
    Nasr, Song, Thakurta, Papernot, Carlini, "Adversary Instantiation: Lower Bounds for
    Differentially Private Machine Learning", arXiv:2101.04535 (v1), §3 (threshold chosen on
    held-out trials).
    Clopper & Pearson, Biometrika 26 (1934) 404–413.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._validation import check_delta, check_epsilon
from ..exceptions import PrivacyBudgetExceededError, PrivacyWarning, SensitivityError
from ..grad_sample import ignore_output_hook_warning
from ..losses import BoundedLoss
from ..privacy_engine import make_private
from .plot import plot_audit
from .result import AuditResult, analyse_releases
from .scores import lattice_score, projection_score
from .specs import TrialSpec, spec_from

__all__ = ["SCORES", "audit_one_step"]

#: Scores computed for every release.
SCORES = ("projection", "lattice")

# Exceptions by which make_private or the optimizer refuse a configuration ("refused").
_REFUSALS = (ValueError, NotImplementedError, SensitivityError, PrivacyBudgetExceededError)
# make_private arguments the audit fixes itself (one step at q = 1 with the same public
# divisor b = |D| in both worlds, seeded trials).
_FIXED_KWARGS = ("epochs", "sample_rate", "expected_batch_size", "dataset_size", "seed",
                 "secure_mode")

# ============================================================================ running trials
def _as_tensor_dataset(dataset, name: str):
    if isinstance(dataset, torch.utils.data.TensorDataset) and len(dataset.tensors) == 2:
        return dataset.tensors
    try:
        items = [dataset[i] for i in range(len(dataset))]
        xs = torch.stack([torch.as_tensor(x) for x, _ in items])
        ys = torch.stack([torch.as_tensor(y) for _, y in items])
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"`{name}` must be a map-style data set of (x, y) pairs of tensors. "
                        f"Found {type(dataset).__name__}.") from err
    return xs, ys


def _trial_seeds(seed: int, trials: int) -> np.ndarray:
    """Per world (D, D') and trial: (device seed, noise seed), shape (2, trials, 2)."""
    state = np.random.SeedSequence(seed).generate_state(4 * trials, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64).reshape(2, trials, 2)


class _World:
    """make_private and one step on one data set, repeated with fresh seeds."""

    def __init__(self, make_model, loss_fn, xs, ys, kwargs, *, fresh: bool, caught: list,
                 initial: dict, batch: int, hook: Callable | None = None):
        self.make_model, self.loss_fn = make_model, loss_fn
        # Both worlds (and every fresh build) start from the first model's weights: the
        # initial model is public, so a randomly initialised make_model must not make the
        # worlds differ by anything but the canary.
        self.initial = initial
        self.data = torch.utils.data.TensorDataset(xs, ys)
        self.kwargs, self.fresh, self.caught = kwargs, fresh, caught
        self.batch, self.hook = batch, hook
        self.device_rng = np.random.default_rng(0)
        self._private: tuple | None = None

    def _build(self, noise_seed: int):
        built = self.make_model(self.device_rng)
        module, extra = built if isinstance(built, tuple) else (built, {})
        if "state" not in self.initial:
            self.initial["state"] = {k: v.detach().clone()
                                     for k, v in module.state_dict().items()}
        else:
            module.load_state_dict(self.initial["state"])
        clash = sorted(set(extra) & set(self.kwargs))
        if clash:
            raise TypeError(f"make_private arguments {clash} come both from `make_model` and "
                            f"from the keyword arguments; give each once.")
        params = [p for p in module.parameters() if p.requires_grad]
        sgd = torch.optim.SGD(params, lr=1.0)
        loader = torch.utils.data.DataLoader(self.data, batch_size=len(self.data))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyWarning)
            # q = 1 and the divisor b = |D| in both worlds: public constants of the audit
            model, opt, dl = make_private(module, sgd, loader, epochs=1, seed=noise_seed,
                                          sample_rate=1.0, expected_batch_size=self.batch,
                                          **extra, **self.kwargs)
            if self.hook is not None:  # testing the audit itself: a broken mechanism
                self.hook(model, opt, dl)
        self.caught.extend(str(w.message) for w in caught)
        snapshot = (opt.state_dict(), opt.ledger.state_dict() if opt.ledger else None,
                    [p.detach().clone() for p in params])
        self._private = (model, opt, dl, params, snapshot)

    def run(self, device_seed: int, noise_seed: int):
        """One trial: (release vector, proven ε, credited ε)."""
        if self.fresh or self._private is None:
            self._build(noise_seed)
        assert self._private is not None  # built just above
        model, opt, dl, params, (opt_state, ledger_state, weights) = self._private
        # Reset everything the previous trial changed; fresh seeds for shots and DP noise.
        opt.load_state_dict(opt_state)
        if ledger_state is not None:
            opt.ledger.load_state_dict(ledger_state)
        with torch.no_grad():
            for p, w in zip(params, weights, strict=True):
                p.copy_(w)
        if opt.generator is not None:
            opt.generator.manual_seed(noise_seed)
        sampler_gen = getattr(dl.batch_sampler, "generator", None)
        if sampler_gen is not None:
            sampler_gen.manual_seed(noise_seed + 1)
        self.device_rng.bit_generator.state = np.random.PCG64(device_seed).state
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyWarning)
            opt.zero_grad(set_to_none=True)
            x, y = next(iter(dl))
            loss = self.loss_fn(model(x), y)
            if loss.ndim:
                loss = loss.mean()
            with ignore_output_hook_warning():
                loss.backward()
            opt.step()
        self.caught.extend(str(w.message) for w in caught)
        release = torch.cat([(w - p.detach()).reshape(-1).double()
                             for p, w in zip(params, weights, strict=True)])
        release = release * opt.expected_batch_size / opt.original_optimizer.param_groups[0]["lr"]
        ledger = opt.ledger
        return release.numpy(), float(ledger.epsilon), float(ledger.credited_epsilon)


def _refused(label, message, *, trials, seed, kwargs, settings, caught, t0, confidence):
    return AuditResult(
        label=label, status="refused", message=message, trials=trials, seed=seed,
        target_epsilon=float(kwargs["target_epsilon"]), delta=float(kwargs["target_delta"]),
        beta=float(kwargs.get("beta", 0.0)), claimed_epsilon=None, claimed_epsilon_min=None,
        credited_epsilon=None, bounds={}, epsilon_lower_bound=0.0,
        max_certifiable_epsilon=0.0, confidence=confidence, seconds=time.perf_counter() - t0,
        settings=settings, warnings=tuple(dict.fromkeys(caught)),
    )


def _jsonable(v):
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return type(v).__name__


def audit_one_step(make_model: Callable, make_loss: Callable, dataset: torch.utils.data.Dataset,
                   canary: tuple[torch.Tensor, torch.Tensor],
                   trial_spec: TrialSpec | None = None, *,
                   lattice_step: ArrayLike | None = None,
                   canary_direction: ArrayLike | None = None, label: str | None = None,
                   plot_path: str | os.PathLike | None = None, fresh: bool = False,
                   private_hook: Callable | None = None, **options: Any) -> AuditResult:
    r"""Audit one private step of :func:`make_private` on :math:`D` and :math:`D' = D + z`.

    Per world and trial the audit resets the model's weights, the optimizer and the ledger to
    the state :func:`make_private` left, seeds the device and the DP noise afresh, runs one
    step at :math:`q = 1` (``sample_rate=1``; SGD with learning rate 1; ``make_loss()`` applied
    to the model's outputs and the labels, averaged) with the same public divisor
    :math:`b = |D|` in both worlds (``expected_batch_size``), and records the release
    :math:`(w_0 - w_1)\,b` (the noisy sum) and the ledger's proven and credited ε.
    Then :func:`split_half_bound` gives a lower bound on ε for each score.

    Args:
        make_model: ``make_model(seed) -> module`` or ``(module, kwargs)``: a fresh model whose
            quantum device is built with ``seed=seed`` (a :class:`numpy.random.Generator`
            that the audit re-seeds before every trial; PennyLane devices accept one).
            ``kwargs`` are further :func:`make_private` arguments that belong to the model
            (``recorder``, ``variance_floor``, ``variance_floor_source``).
        make_loss: ``make_loss() -> loss`` with ``loss(outputs, labels)`` per example or
            reduced. A :class:`~pennylane_qshiftdp.losses.BoundedLoss` is also passed to
            make_private as ``loss`` under ``max_grad_norm="certified"``.
        dataset: :math:`D`, a map-style data set of ``(x, y)`` tensor pairs.
        canary: the added example :math:`z = (x, y)`.
        trial_spec: the trials (:class:`~pennylane_qshiftdp.audit.specs.TrialSpec`): trials
            per world, ≥ 4 (half select the threshold, half evaluate it); the seed that
            derives every trial's device and noise seeds (repeatable); the joint confidence of
            the reported bounds, in (0, 1); the estimators that bound ε (``"clopper_pearson"``,
            ``"gdp"``; see :mod:`pennylane_qshiftdp.audit.statistics`); an optional callback
            ``progress(done, total)`` after every trial. Its fields may also be given as
            keywords (``trials=...``, required without a spec; ``seed``, ``confidence``,
            ``estimators``, ``progress``), which replace those of ``trial_spec``.
        lattice_step: step :math:`h` of the ``lattice`` score (scalar or per coordinate);
            ``None`` skips that score.
        canary_direction: the canary's expected gradient direction for the ``projection``
            score; ``None`` estimates it from the first half of the trials (difference of the
            mean releases), which keeps the second half independent.
        label: name of the configuration in the result (default from the credit and clip).
        plot_path: if given, :func:`plot_audit` writes the score histograms there (PNG).
        fresh: call ``make_model`` and make_private for every trial (slower; the default
            builds them once per world and resets them, which gives the same releases).
        private_hook: ``None`` in normal use. **For testing the audit itself**: a callable
            ``hook(model, optimizer, loader)`` called once with what :func:`make_private`
            returned in each world (every trial with ``fresh``), before any step; the seam
            through which tests audit purpose-built broken mechanisms (e.g. half the noise,
            no clipping). Whatever it changes is outside the privacy guarantee.
        **options: the fields of :class:`~pennylane_qshiftdp.audit.specs.TrialSpec` (above);
            every other keyword is passed to :func:`make_private` (``target_epsilon`` and
            ``target_delta`` are required; ``epochs``, ``sample_rate``, ``expected_batch_size``,
            ``dataset_size``, ``seed`` and ``secure_mode`` are fixed by the audit).

    Returns:
        AuditResult: claims, per-score bounds, verdict; ``status="refused"`` with the message
        if make_private or the optimizer refused the configuration.

    Raises:
        ValueError: for invalid ``trials``, ``confidence``, ``lattice_step`` or missing or
            fixed make_private arguments.
        TypeError: for a data set or canary that is not made of ``(x, y)`` tensors, or
            neither ``trial_spec`` nor ``trials``.

    References:
        Jagielski et al., arXiv:2006.07709 (v1); Nasr et al., arXiv:2101.04535 (v1).

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> def circuit(inputs, weights):
        ...     qml.RY(inputs[..., 0], wires=0)
        ...     qml.RY(weights[0], wires=0)
        ...     return qml.expval(qml.Z(0))
        >>> def make_model(seed):
        ...     dev = qml.device("default.qubit", wires=1, seed=seed)
        ...     qnode = qml.set_shots(qml.QNode(circuit, dev, diff_method=param_shift), shots=10)
        ...     return qml.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
        >>> data = torch.utils.data.TensorDataset(torch.zeros(10, 1, dtype=torch.float64),
        ...                                       torch.ones(10, dtype=torch.float64))
        >>> canary = (torch.ones(1, dtype=torch.float64), torch.tensor(1.0))
        >>> from pennylane_qshiftdp.losses import LinearLoss
        >>> r = audit_one_step(make_model, LinearLoss, data, canary, TrialSpec(20),
        ...                    target_epsilon=1.0, target_delta=1e-5)
        >>> r.status, r.proven_refuted, round(r.claimed_epsilon, 3)
        ('audited', False, 0.994)
    """
    t0 = time.perf_counter()
    make_private_kwargs = dict(options)
    if trial_spec is None and "trials" not in make_private_kwargs:
        raise TypeError("audit_one_step() missing its trials: give `trial_spec` (a TrialSpec) "
                        "or `trials`.")
    spec = spec_from(TrialSpec, trial_spec, make_private_kwargs, "trial_spec")
    seed = spec.seed
    trials, confidence, delta = _check_arguments(spec, make_private_kwargs, lattice_step,
                                                 canary)
    xs, ys = _as_tensor_dataset(dataset, "dataset")
    cx, cy = (torch.as_tensor(v) for v in canary)
    xs_p = torch.cat([xs, cx.reshape(1, *xs.shape[1:]).to(xs.dtype)])
    ys_p = torch.cat([ys, cy.reshape(1, *ys.shape[1:]).to(ys.dtype)])

    loss_fn = make_loss()
    kwargs = dict(make_private_kwargs)
    clip = kwargs.get("max_grad_norm", "certified")
    if isinstance(loss_fn, BoundedLoss) and clip == "certified" and "loss" not in kwargs:
        kwargs["loss"] = loss_fn
    if label is None:
        label = f"credit={kwargs.get('credit', 'none')}, max_grad_norm={clip}"
    settings = {k: _jsonable(v) for k, v in kwargs.items()}
    settings.update(dataset_size=len(xs), lattice_step=_jsonable(
        None if lattice_step is None else np.asarray(lattice_step).tolist()))
    caught: list[str] = []
    common = dict(trials=trials, seed=seed, kwargs=kwargs, settings=settings, caught=caught,
                  t0=t0, confidence=confidence)

    initial: dict = {}
    worlds = [_World(make_model, loss_fn, x, y, kwargs, fresh=fresh, caught=caught,
                     initial=initial, batch=len(xs), hook=private_hook)
              for x, y in ((xs, ys), (xs_p, ys_p))]
    run = _run_trials(worlds, _trial_seeds(seed, trials), trials, spec.progress)
    if run.refusal is not None:
        return _refused(label, run.refusal, **common)
    rel_d, rel_dp = run.release_arrays()
    fail_d, fail_dp = np.array(run.failed[0]), np.array(run.failed[1])
    direction = _direction(canary_direction, rel_d, rel_dp, fail_d, fail_dp, trials)
    scorers = {"projection": lambda r: projection_score(r, direction)}
    if lattice_step is not None:
        scorers["lattice"] = lambda r: lattice_score(r, lattice_step)
    a = analyse_releases(rel_d, rel_dp, scorers=scorers, delta=delta, confidence=confidence,
                         fail_d=fail_d, fail_dp=fail_dp, errors=tuple(run.errors),
                         estimators=spec.estimators)
    claims, credited = run.claims, run.credited
    result = AuditResult(
        label=label, status="audited", message=None, trials=trials, seed=seed,
        target_epsilon=float(kwargs["target_epsilon"]), delta=delta,
        beta=float(kwargs.get("beta", 0.0)),
        claimed_epsilon=max(claims) if claims else None,
        claimed_epsilon_min=min(claims) if claims else None,
        credited_epsilon=max(credited) if credited else None, bounds=a["bounds"],
        epsilon_lower_bound=a["epsilon_lower_bound"],
        max_certifiable_epsilon=a["max_certifiable_epsilon"], confidence=confidence,
        seconds=time.perf_counter() - t0, settings=settings,
        warnings=tuple(dict.fromkeys(caught)), scores=a["scores"], releases=(rel_d, rel_dp),
        gdp_bounds=a["gdp_bounds"], ceilings=a["ceilings"], findings=a["findings"],
        failures=a["failures"],
    )
    if plot_path is not None:
        plot_audit(result, plot_path)
    return result


def _check_arguments(spec: TrialSpec, make_private_kwargs, lattice_step, canary):
    """The audit's own arguments: ``(trials, confidence, delta)``."""
    trials, confidence = spec.trials, spec.confidence
    if trials < 4:
        raise ValueError(f"`trials` must be at least 4 (half select, half evaluate). Found "
                         f"{trials}.")
    for key in ("target_epsilon", "target_delta"):
        if key not in make_private_kwargs:
            raise ValueError(f"`{key}` must be given (it is passed to make_private). Found "
                             f"none.")
    fixed = sorted(set(make_private_kwargs) & set(_FIXED_KWARGS))
    if fixed:
        raise ValueError(f"{fixed} are fixed by the audit (one step at q = 1, divided by |D| "
                         f"in both worlds, with seeded trials). Found {fixed} in the keyword "
                         f"arguments.")
    check_epsilon(make_private_kwargs["target_epsilon"], "target_epsilon")
    delta = check_delta(make_private_kwargs["target_delta"], "target_delta")
    if lattice_step is not None:
        h = np.asarray(lattice_step, dtype=float)
        if not np.all(np.isfinite(h) & (h > 0)):
            raise ValueError(f"`lattice_step` must be positive and finite. Found "
                             f"{lattice_step!r}.")
    if not (isinstance(canary, (tuple, list)) and len(canary) == 2):
        raise TypeError(f"`canary` must be an (x, y) pair. Found {type(canary).__name__}.")
    return trials, confidence, delta


@dataclasses.dataclass
class _Trials:
    """The releases of both worlds, trial by trial (``None`` where a trial failed)."""

    releases: list = dataclasses.field(default_factory=lambda: [[], []])
    failed: list = dataclasses.field(default_factory=lambda: [[], []])
    errors: list = dataclasses.field(default_factory=list)
    claims: list = dataclasses.field(default_factory=list)
    credited: list = dataclasses.field(default_factory=list)
    width: int | None = None
    refusal: str | None = None

    def release_arrays(self):
        """``(trials, width)`` arrays of both worlds, NaN rows for failed trials."""
        width = 1 if self.width is None else self.width
        return (np.stack([np.full(width, np.nan) if r is None else r for r in rs])
                for rs in self.releases)


def _run_trials(worlds, seeds, trials: int, progress) -> _Trials:
    """Run every trial in both worlds; a crash or a non-finite release is a finding.

    If both worlds refuse the configuration alike at the first trial, that is a refusal
    (``refusal`` set), not evidence.
    """
    run = _Trials()
    for t in range(trials):
        outcome: list[tuple] = []
        for w, world in enumerate(worlds):
            dev_seed, noise_seed = (int(s) for s in seeds[w, t])
            try:
                rel, eps, cred = world.run(dev_seed, noise_seed)
                outcome.append((rel, eps, cred, None))
            except Exception as err:  # noqa: BLE001 - a crash is a finding, not an exception
                outcome.append((None, None, None, err))
        errs = [o[3] for o in outcome]
        if t == 0 and all(isinstance(e, _REFUSALS) for e in errs) and (
                type(errs[0]) is type(errs[1])):
            run.refusal = f"{type(errs[0]).__name__} on D: {errs[0]}"
            return run
        for w, (rel, eps, cred, error) in enumerate(outcome):
            if error is not None or not np.all(np.isfinite(rel)):
                run.failed[w].append(True)
                where = "D" if w == 0 else "D'"
                run.errors.append(f"{type(error).__name__} on {where}: {error}"
                                  if error is not None
                                  else f"non-finite release on {where}")
                run.releases[w].append(None)
                continue
            run.width = rel.size
            run.failed[w].append(False)
            run.releases[w].append(rel)
            run.claims.append(eps)
            run.credited.append(cred)
        if progress is not None:
            progress(t + 1, trials)
    return run


def _direction(canary_direction, rel_d, rel_dp, fail_d, fail_dp, trials: int) -> np.ndarray:
    """The projection score's direction: given, or the canary's mean effect estimated on the
    first quarter of the trials (inside the selection part of every estimator, so their
    evaluation trials stay independent of it)."""
    if canary_direction is not None:
        return np.asarray(canary_direction, dtype=float)
    width = rel_d.shape[1]
    sel = max(1, trials // 4)
    ok_d, ok_dp = ~fail_d[:sel], ~fail_dp[:sel]
    direction = (rel_dp[:sel][ok_dp].mean(axis=0) if ok_dp.any() else 0.0) - (
        rel_d[:sel][ok_d].mean(axis=0) if ok_d.any() else 0.0)
    direction = np.broadcast_to(np.asarray(direction, dtype=float), (width,))
    if not np.any(direction) or not np.all(np.isfinite(direction)):
        direction = np.ones(width)
    return direction
