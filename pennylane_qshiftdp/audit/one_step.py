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
the weight change times the expected batch size over the learning rate, i.e. the noisy sum of
clipped per-example gradients :math:`\sum_j \bar g_j + z`. Each release gets two scores,

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

:func:`audit_setting` is the fixed one-qubit setting (``RY(x) RY(θ)``, ⟨Z⟩, θ = 0.3, 30
examples with maximal shot variance or zero gradient, a zero-variance canary whose clipped
gradient is (almost) the full sensitivity C), in which the lattice score once showed ε ≥ 8
against a claimed ε of 1.99 at :math:`N_s = 2`; :func:`audit_one_step` audits any model, loss,
data set and canary. Besides the split-half Clopper–Pearson bound every release gets the
Gaussian-DP bound (:func:`~pennylane_qshiftdp.audit.statistics.gdp_bound`); a trial that crashes
or releases a non-finite value is a finding, not an exception.

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
import math
import time
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pennylane as qml
import torch

from .._validation import (
    check_delta,
    check_epsilon,
    check_positive_float,
    check_positive_int,
    check_probability,
)
from ..engine import make_private
from ..exceptions import PrivacyBudgetExceededError, PrivacyWarning, SensitivityError
from ..losses import BoundedLoss, LinearLoss
from ..shot_statistics import ShotRecorder
from ..transform import param_shift
from .plot import plot_audit
from .result import AuditResult, analyse_releases
from .scores import lattice_score, projection_score

__all__ = ["BACKGROUNDS", "SCORES", "SETTING_MODES", "audit_one_step", "audit_setting"]

#: Backgrounds of :func:`audit_setting`: the other examples' gradients.
BACKGROUNDS = ("shot", "zero")

#: Scores computed for every release.
SCORES = ("projection", "lattice")

#: The modes of :func:`audit_setting`: name -> (credit, max_grad_norm). ``"fixed_clip"`` uses
#: the ``clip_norm`` argument of :func:`audit_setting` (default 0.5).
SETTING_MODES = {
    "none": ("none", "certified"),
    "depolarizing": ("depolarizing", "certified"),
    "adaptive": ("adaptive", "certified"),
    "isotropic": ("isotropic", "certified"),
    "fixed_clip": ("none", "fixed"),
    "adaptive_clip": ("none", "adaptive"),
}

# Exceptions by which make_private or the optimizer refuse a configuration ("refused").
_REFUSALS = (ValueError, NotImplementedError, SensitivityError, PrivacyBudgetExceededError)
# make_private arguments the audit fixes itself (one step at q = 1, seeded trials).
_FIXED_KWARGS = ("epochs", "sample_rate", "seed", "secure_mode")

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
                 initial: dict):
        self.make_model, self.loss_fn = make_model, loss_fn
        # Both worlds (and every fresh build) start from the first model's weights: the
        # initial model is public, so a randomly initialised make_model must not make the
        # worlds differ by anything but the canary.
        self.initial = initial
        self.data = torch.utils.data.TensorDataset(xs, ys)
        self.kwargs, self.fresh, self.caught = kwargs, fresh, caught
        self.device_rng = np.random.default_rng(0)
        self._private = None

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
            model, opt, dl = make_private(module, sgd, loader, epochs=1, seed=noise_seed,
                                          **extra, **self.kwargs)
        self.caught.extend(str(w.message) for w in caught)
        snapshot = (opt.state_dict(), opt.ledger.state_dict() if opt.ledger else None,
                    [p.detach().clone() for p in params])
        self._private = (model, opt, dl, params, snapshot)

    def run(self, device_seed: int, noise_seed: int):
        """One trial: (release vector, proven ε, credited ε)."""
        if self.fresh or self._private is None:
            self._build(noise_seed)
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


def audit_one_step(make_model: Callable, make_loss: Callable, dataset, canary, *, trials: int,
                   seed: int = 0, lattice_step=None, canary_direction=None,
                   confidence: float = 0.95, label: str | None = None, plot_path=None,
                   fresh: bool = False, progress: Callable | None = None,
                   estimators=("clopper_pearson", "gdp"),
                   **make_private_kwargs) -> AuditResult:
    r"""Audit one private step of :func:`make_private` on :math:`D` and :math:`D' = D + z`.

    Per world and trial the audit resets the model's weights, the optimizer and the ledger to
    the state :func:`make_private` left, seeds the device and the DP noise afresh, runs one
    step at :math:`q = 1` (the loader's batch is the whole data set; SGD with learning rate 1;
    ``make_loss()`` applied to the model's outputs and the labels, averaged) and records the
    release :math:`(w_0 - w_1)\,qN` (the noisy sum) and the ledger's proven and credited ε.
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
        trials: trials per world, ≥ 4 (half select the threshold, half evaluate it).
        seed: derives every trial's device and noise seeds (repeatable).
        lattice_step: step :math:`h` of the ``lattice`` score (scalar or per coordinate);
            ``None`` skips that score.
        canary_direction: the canary's expected gradient direction for the ``projection``
            score; ``None`` estimates it from the first half of the trials (difference of the
            mean releases), which keeps the second half independent.
        confidence: joint confidence of the reported bounds, in (0, 1).
        label: name of the configuration in the result (default from the credit and clip).
        plot_path: if given, :func:`plot_audit` writes the score histograms there (PNG).
        fresh: call ``make_model`` and make_private for every trial (slower; the default
            builds them once per world and resets them, which gives the same releases).
        progress: optional callback ``progress(done, total)`` after every trial.
        estimators: which estimators bound ε (``"clopper_pearson"``, ``"gdp"``; see
            :mod:`pennylane_qshiftdp.audit.statistics`).
        **make_private_kwargs: passed to :func:`make_private` (``target_epsilon`` and
            ``target_delta`` are required; ``epochs``, ``sample_rate``, ``seed`` and
            ``secure_mode`` are fixed by the audit).

    Returns:
        AuditResult: claims, per-score bounds, verdict; ``status="refused"`` with the message
        if make_private or the optimizer refused the configuration.

    Raises:
        ValueError: for invalid ``trials``, ``confidence``, ``lattice_step`` or missing or
            fixed make_private arguments.
        TypeError: for a data set or canary that is not made of ``(x, y)`` tensors.

    References:
        Jagielski et al., arXiv:2006.07709 (v1); Nasr et al., arXiv:2101.04535 (v1).

    Example:
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
        >>> r = audit_one_step(make_model, LinearLoss, data, canary, trials=20,
        ...                    target_epsilon=1.0, target_delta=1e-5)
        >>> r.status, r.proven_refuted, round(r.claimed_epsilon, 3)
        ('audited', False, 0.995)
    """
    t0 = time.perf_counter()
    trials = check_positive_int(trials, "trials")
    if trials < 4:
        raise ValueError(f"`trials` must be at least 4 (half select, half evaluate). Found "
                         f"{trials}.")
    confidence = check_probability(confidence, "confidence", open_low=True, open_high=True)
    for key in ("target_epsilon", "target_delta"):
        if key not in make_private_kwargs:
            raise ValueError(f"`{key}` must be given (it is passed to make_private). Found "
                             f"none.")
    fixed = sorted(set(make_private_kwargs) & set(_FIXED_KWARGS))
    if fixed:
        raise ValueError(f"{fixed} are fixed by the audit (one step at q = 1 with seeded "
                         f"trials). Found {fixed} in the keyword arguments.")
    check_epsilon(make_private_kwargs["target_epsilon"], "target_epsilon")
    delta = check_delta(make_private_kwargs["target_delta"], "target_delta")
    if lattice_step is not None:
        h = np.asarray(lattice_step, dtype=float)
        if not np.all(np.isfinite(h) & (h > 0)):
            raise ValueError(f"`lattice_step` must be positive and finite. Found "
                             f"{lattice_step!r}.")
    if not (isinstance(canary, (tuple, list)) and len(canary) == 2):
        raise TypeError(f"`canary` must be an (x, y) pair. Found {type(canary).__name__}.")
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
    worlds = [_World(make_model, loss_fn, xs, ys, kwargs, fresh=fresh, caught=caught,
                     initial=initial),
              _World(make_model, loss_fn, xs_p, ys_p, kwargs, fresh=fresh, caught=caught,
                     initial=initial)]
    seeds = _trial_seeds(seed, trials)
    releases: list[list] = [[], []]
    failed: list[list[bool]] = [[], []]
    errors: list[str] = []
    claims, credited = [], []
    width = None
    for t in range(trials):
        outcome = []
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
            # both worlds refuse the configuration alike: a refusal, not evidence
            return _refused(label, f"{type(errs[0]).__name__} on D: {errs[0]}", **common)
        for w, (rel, eps, cred, err) in enumerate(outcome):
            if err is not None or not np.all(np.isfinite(rel)):
                failed[w].append(True)
                where = "D" if w == 0 else "D'"
                errors.append(f"{type(err).__name__} on {where}: {err}" if err is not None
                              else f"non-finite release on {where}")
                releases[w].append(None)
                continue
            width = rel.size
            failed[w].append(False)
            releases[w].append(rel)
            claims.append(eps)
            credited.append(cred)
        if progress is not None:
            progress(t + 1, trials)
    width = 1 if width is None else width
    rel_d, rel_dp = (np.stack([np.full(width, np.nan) if r is None else r for r in rs])
                     for rs in releases)
    fail_d, fail_dp = np.array(failed[0]), np.array(failed[1])

    # Estimated from the first quarter of the trials: inside the selection part of every
    # estimator, so their evaluation trials stay independent of it.
    sel = max(1, trials // 4)
    if canary_direction is None:
        ok_d, ok_dp = ~fail_d[:sel], ~fail_dp[:sel]
        direction = (rel_dp[:sel][ok_dp].mean(axis=0) if ok_dp.any() else 0.0) - (
            rel_d[:sel][ok_d].mean(axis=0) if ok_d.any() else 0.0)
        direction = np.broadcast_to(np.asarray(direction, dtype=float), (width,))
        if not np.any(direction) or not np.all(np.isfinite(direction)):
            direction = np.ones(width)
    else:
        direction = np.asarray(canary_direction, dtype=float)
    scorers = {"projection": lambda r: projection_score(r, direction)}
    if lattice_step is not None:
        scorers["lattice"] = lambda r: lattice_score(r, lattice_step)
    a = analyse_releases(rel_d, rel_dp, scorers=scorers, delta=delta, confidence=confidence,
                         fail_d=fail_d, fail_dp=fail_dp, errors=tuple(errors),
                         estimators=estimators)
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


# ============================================================================ the fixed setting
def _setting_circuit(q_dep: float):
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RY(weights[0], wires=0)
        if q_dep:
            qml.DepolarizingChannel(q_dep, wires=0)
        return qml.expval(qml.Z(0))

    return circuit


def audit_setting(mode: str | None = None, *, credit: str | None = None, max_grad_norm=None,
                  shots: int = 2, trials: int = 2000, seed: int = 0, theta: float = 0.3,
                  num_examples: int = 30, target_epsilon: float = 2.0,
                  target_delta: float = 1e-5, beta: float = 1e-3, depolarizing=None,
                  clip_norm: float = 0.5, canary_label: float | None = None,
                  background: str = "shot", proven_epsilon_factor: float | None = None,
                  confidence: float = 0.95, plot_path=None, fresh: bool = False,
                  progress: Callable | None = None,
                  estimators=("clopper_pearson", "gdp")) -> AuditResult:
    r"""Audit one step of the one-qubit setting that refuted the first version's shot-noise credit.

    Circuit ``RY(x) RY(θ)`` on one qubit, ⟨Z⟩, one weight θ (``theta``), a QNode with
    ``diff_method=pennylane_qshiftdp.param_shift`` and ``shots`` on ``default.qubit`` (or
    ``default.mixed`` with a final ``DepolarizingChannel(depolarizing)``), linear loss
    :math:`\ell = -y f`. :math:`D`: ``num_examples`` examples with :math:`x = -\theta` (both
    shifted circuits have ⟨Z⟩ = 0: maximal shot variance) and balanced labels ±1
    (``background="shot"``), or the same inputs with label 0, whose gradients are exactly 0
    (``background="zero"``: the "zero background" world of Nasr et al., arXiv:2302.07956, in
    which the release on :math:`D` is the DP noise alone).
    :math:`D'`: :math:`D` plus the canary :math:`x = \pi/2 - \theta` (both shifted circuits
    are Z eigenstates: no shot variance without device noise) with label ``canary_label``; its
    gradient is ``canary_label`` :math:`\cdot (1 - p)` and the certified clip is
    :math:`C = \Delta = 1`, so the default labels move the release by (almost) the full
    sensitivity: 1 on the zero background, :math:`1 - 1/(2N_s)` on the shot background (half a
    lattice step off the lattice, which the ``lattice`` score sees).
    One step at q = 1 (make_private warns "q = 1"), SGD learning rate 1, budget
    (``target_epsilon``, ``target_delta``). The ``lattice`` score uses
    :math:`h = |c|(\lambda_{\max} - \lambda_{\min})/N_s = 1/N_s` (shift coefficient 1/2, ±1
    outcomes, labels ±1): every sum over :math:`D` lies on :math:`h\mathbb Z`, and the canary
    adds :math:`(1 - p)\cdot` ``canary_label`` to it.

    Args:
        mode: a key of :data:`SETTING_MODES` (``"none"``, ``"depolarizing"``,
            ``"adaptive"``, ``"isotropic"``, ``"fixed_clip"``, ``"adaptive_clip"``); or
            ``None`` and ``credit``/``max_grad_norm``.
        credit: shot-noise credit mode (with ``mode=None``; default ``"none"``).
        max_grad_norm: ``"certified"``, ``"adaptive"`` or a positive float (with
            ``mode=None``; default ``"certified"``).
        shots: :math:`N_s \ge 1` per shifted circuit.
        trials: trials per world, ≥ 4.
        seed: seeds every trial (repeatable).
        theta: the weight θ.
        num_examples: size of :math:`D`, a positive even number.
        target_epsilon, target_delta: the budget (ε in nats).
        beta: β of the ``adaptive`` and ``isotropic`` credits.
        depolarizing: PennyLane ``DepolarizingChannel`` parameter :math:`q_{dep} \in [0, 3/4]`
            before the measurement; its variance floor :math:`v_{\min}` comes from
            :func:`qprldp_core.certify_device` (source ``"proven"``). Default 0.25 for
            ``credit="depolarizing"``, else 0 (noiseless ``default.qubit``).
        clip_norm: the clip norm of ``mode="fixed_clip"``.
        canary_label: the canary's label (loss weight), in [-1, 1]; default
            :math:`1 - 1/(2N_s)` (``"shot"``) or 1 (``"zero"``).
        background: ``"shot"`` (examples of maximal shot variance) or ``"zero"`` (zero
            gradients; no ``lattice`` score).
        estimators: which estimators bound ε (see :func:`audit_one_step`).
        proven_epsilon_factor: passed to :func:`make_private` with a credit mode (``None``:
            its default); a large factor lowers the noise floor, which the audit then probes.
        confidence: joint confidence of the bounds.
        plot_path: if given, the score histograms are written there (PNG).
        fresh: rebuild model and make_private for every trial (see :func:`audit_one_step`).
        progress: optional callback ``progress(done, total)``.

    Returns:
        AuditResult: see :func:`audit_one_step`; ``label`` is the mode.

    Raises:
        ValueError: for an unknown mode, a mode together with ``credit``/``max_grad_norm``,
            or invalid setting parameters.

    Example:
        >>> r = audit_setting("none", trials=40, seed=1)
        >>> r.verdict, r.epsilon_lower_bound <= r.claimed_epsilon
        ('not refuted', True)
    """
    if mode is not None:
        if mode not in SETTING_MODES:
            raise ValueError(f"`mode` must be one of {tuple(SETTING_MODES)}. Found {mode!r}.")
        if credit is not None or max_grad_norm is not None:
            raise ValueError(f"Give either `mode` or `credit`/`max_grad_norm`. Found "
                             f"mode={mode!r}, credit={credit!r}, "
                             f"max_grad_norm={max_grad_norm!r}.")
        credit, max_grad_norm = SETTING_MODES[mode]
        if max_grad_norm == "fixed":
            max_grad_norm = check_positive_float(clip_norm, "clip_norm")
        label = mode
    else:
        credit = "none" if credit is None else credit
        max_grad_norm = "certified" if max_grad_norm is None else max_grad_norm
        label = next((k for k, v in SETTING_MODES.items()
                      if v == (credit, max_grad_norm)
                      or (v == (credit, "fixed") and not isinstance(max_grad_norm, str))),
                     f"credit={credit}, max_grad_norm={max_grad_norm}")
    shots = check_positive_int(shots, "shots")
    theta = float(theta)
    num_examples = check_positive_int(num_examples, "num_examples")
    if num_examples % 2 and background == "shot":
        raise ValueError(f"`num_examples` must be even (balanced labels ±1). Found "
                         f"{num_examples}.")
    if background not in BACKGROUNDS:
        raise ValueError(f"`background` must be one of {BACKGROUNDS}. Found {background!r}.")
    if canary_label is None:
        canary_label = 1.0 if background == "zero" else 1.0 - 0.5 / shots
    if not -1.0 <= float(canary_label) <= 1.0:
        raise ValueError(f"`canary_label` must be in [-1, 1] (linear loss). Found "
                         f"{canary_label!r}.")
    q_dep = (0.25 if credit == "depolarizing" else 0.0) if depolarizing is None else depolarizing
    q_dep = float(q_dep)
    if not 0.0 <= q_dep <= 0.75:
        raise ValueError(f"`depolarizing` must be in [0, 0.75] (PennyLane's q). Found "
                         f"{depolarizing!r}.")
    circuit = _setting_circuit(q_dep)
    use_recorder = credit not in ("none",) and credit is not None

    def make_model(device_seed):
        dev = qml.device("default.mixed" if q_dep else "default.qubit", wires=1,
                         seed=device_seed)
        recorder = ShotRecorder() if use_recorder else None
        qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                          gradient_kwargs={"recorder": recorder} if recorder else {})
        qnode = qml.set_shots(qnode, shots=shots)
        layer = qml.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
        with torch.no_grad():
            layer.weights.fill_(theta)
        extra = {"recorder": recorder} if recorder is not None else {}
        if q_dep:
            from qprldp_core import certify_device

            cert = certify_device(qnode, epsilon=1.0,
                                  args=(torch.zeros(1, dtype=torch.float64),
                                        torch.zeros(1, dtype=torch.float64)))
            extra.update(variance_floor=float(cert.variance_floor),
                         variance_floor_source="proven")
        return layer, extra

    n = num_examples
    xs = torch.full((n, 1), -theta, dtype=torch.float64)
    ys = (torch.tensor([1.0, -1.0] * (n // 2), dtype=torch.float64) if background == "shot"
          else torch.zeros(n, dtype=torch.float64))
    canary = (torch.tensor([math.pi / 2 - theta], dtype=torch.float64),
              torch.tensor(float(canary_label), dtype=torch.float64))
    kwargs = dict(target_epsilon=target_epsilon, target_delta=target_delta,
                  max_grad_norm=max_grad_norm, credit=credit)
    if credit in ("adaptive", "isotropic"):
        kwargs["beta"] = beta
    if proven_epsilon_factor is not None:
        kwargs["proven_epsilon_factor"] = proven_epsilon_factor
    # Shift coefficient |c| = 1/2, outcomes ±1, label weights ±1: sums lie on (1/Ns)ℤ.
    step = 0.5 * 2.0 / shots
    # The canary's expected per-example gradient of ℓ = -y f: y (1 - p) sin(π/2) with
    # p = 4 q_dep / 3; only its sign matters in one dimension.
    direction = [math.copysign(1.0, float(canary_label)) if canary_label else 1.0]
    result = audit_one_step(make_model, LinearLoss, torch.utils.data.TensorDataset(xs, ys),
                            canary, trials=trials, seed=seed,
                            lattice_step=step if background == "shot" else None,
                            canary_direction=direction, confidence=confidence, label=label,
                            fresh=fresh, progress=progress, estimators=estimators, **kwargs)
    settings = dict(result.settings)
    settings.update(circuit="RY(x) RY(θ), <Z>, one qubit", theta=theta, shots=shots,
                    device="default.mixed" if q_dep else "default.qubit",
                    depolarizing_q=q_dep, canary_x=math.pi / 2 - theta,
                    canary_label=float(canary_label), data_x=-theta, sample_rate=1.0, lr=1.0,
                    background=background)
    result = dataclasses.replace(result, settings=settings)
    if plot_path is not None:
        plot_audit(result, plot_path)
    return result

