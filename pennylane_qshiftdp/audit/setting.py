r"""The fixed one-qubit audit setting: power at its defaults, and the shot lattice.

Circuit ``RY(x) RY(θ)``, ⟨Z⟩, θ = 0.3, 30 examples of zero gradient (the default "zero"
background: the release on D is the DP noise alone) or of maximal shot variance (the "shot"
background, on which the lattice score once showed ε ≥ 8 against a claimed 1.99 of the first
version's shot-noise credit), and a zero-variance canary. On the zero background the canary's
gradient is 4 C by default (its loss weight exceeds the declared bound, so the enforced clip
binds): the release moves by exactly the sensitivity C, and by 4 C if a mechanism does not clip.
:func:`audit_setting` runs :func:`~pennylane_qshiftdp.audit.one_step.audit_one_step` on it in
every credit and clip mode (:data:`SETTING_MODES`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from typing import Any

import pennylane as qml
import torch

from .._validation import check_finite_float, check_positive_float, check_positive_int
from ..gradients.parameter_shift import param_shift
from ..gradients.shot_statistics import ShotRecorder
from ..losses import LinearLoss
from .one_step import audit_one_step
from .plot import plot_audit
from .result import AuditResult
from .specs import TrialSpec, reject_unknown, spec_from

__all__ = [
    "BACKGROUNDS",
    "SETTING_MODES",
    "ZERO_BACKGROUND_CANARY_LABEL",
    "SettingSpec",
    "audit_setting",
]

#: Backgrounds of :func:`audit_setting`: the other examples' gradients ("zero" is the default).
BACKGROUNDS = ("zero", "shot")

#: The zero background's default canary label: its gradient is 4 × the clip norm C = Δ = 1, so
#: the clip binds on it (a mechanism that does not clip moves the release by 4 C).
ZERO_BACKGROUND_CANARY_LABEL = 4.0

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


def _setting_circuit(q_dep: float):
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RY(weights[0], wires=0)
        if q_dep:
            qml.DepolarizingChannel(q_dep, wires=0)
        return qml.expval(qml.Z(0))

    return circuit


def _weighted_linear_loss(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """ℓ = −y f per example, for any label y (the canary's may exceed the declared |y| ≤ 1)."""
    return -(targets.reshape(-1).to(outputs.dtype) * outputs.reshape(len(targets), -1)[:, 0])


def _setting_mode(mode: str | None, credit: str | None, max_grad_norm: float | str | None,
                  clip_norm: float) -> tuple[str, float | str, str]:
    """(credit, max_grad_norm, label) of a :data:`SETTING_MODES` name, or of the explicit
    ``credit``/``max_grad_norm`` (labelled by the mode they match, if any)."""
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
    return credit, max_grad_norm, label


def _model_factory(circuit: Callable, q_dep: float, shots: int, theta: float,
                   use_recorder: bool) -> Callable[[int], tuple[qml.qnn.TorchLayer, dict]]:
    """``make_model(device_seed)`` of :func:`audit_one_step`: the setting's one-qubit layer at
    θ (with a shot recorder for a credit mode, and the proven variance floor with device
    noise)."""

    def make_model(device_seed: int) -> tuple[qml.qnn.TorchLayer, dict[str, Any]]:
        dev = qml.device("default.mixed" if q_dep else "default.qubit", wires=1,
                         seed=device_seed)
        recorder = ShotRecorder() if use_recorder else None
        qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                          gradient_kwargs={"recorder": recorder} if recorder else {})
        qnode = qml.set_shots(qnode, shots=shots)
        layer = qml.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
        with torch.no_grad():
            layer.weights.fill_(theta)
        extra: dict[str, Any] = {"recorder": recorder} if recorder is not None else {}
        if q_dep:
            from qprldp_core import certify_device

            cert = certify_device(qnode, epsilon=1.0,
                                  args=(torch.zeros(1, dtype=torch.float64),
                                        torch.zeros(1, dtype=torch.float64)))
            extra.update(variance_floor=float(cert.variance_floor),
                         variance_floor_source="proven")
        return layer, extra

    return make_model


@dataclasses.dataclass(frozen=True)
class SettingSpec:
    r"""The mechanism :func:`audit_setting` audits: the one-qubit setting, its mode and budget.

    Validated when built; the fields keep the values given (``mode``, ``credit``,
    ``max_grad_norm``, ``depolarizing`` and ``canary_label`` may be ``None``), and what they
    resolve to is in the attributes that are not arguments (``label``, ``resolved_credit``,
    ``resolved_max_grad_norm``, ``depolarizing_q``, ``resolved_canary_label``), so
    :func:`dataclasses.replace` of a field resolves the defaults afresh.

    Attributes:
        mode: a key of :data:`SETTING_MODES` (``"none"``, ``"depolarizing"``,
            ``"adaptive"``, ``"isotropic"``, ``"fixed_clip"``, ``"adaptive_clip"``); or
            ``None`` and ``credit``/``max_grad_norm``.
        credit: shot-noise credit mode (with ``mode=None``; default ``"none"``).
        max_grad_norm: ``"certified"``, ``"adaptive"`` or a positive float (with
            ``mode=None``; default ``"certified"``).
        shots: :math:`N_s \ge 1` per shifted circuit.
        theta: the weight θ.
        num_examples: size of :math:`D`, a positive even number on the shot background.
        target_epsilon, target_delta: the budget (ε in nats).
        beta: β of the ``adaptive`` and ``isotropic`` credits.
        depolarizing: PennyLane ``DepolarizingChannel`` parameter :math:`q_{dep} \in [0, 3/4]`
            before the measurement; its variance floor :math:`v_{\min}` comes from
            :func:`qprldp_core.certify_device` (source ``"proven"``). Default 0.25 for
            ``credit="depolarizing"``, else 0 (noiseless ``default.qubit``).
        clip_norm: the clip norm of ``mode="fixed_clip"``.
        canary_label: the canary's label (loss weight), a finite non-zero number; default 4
            (``"zero"``) or :math:`1 - 1/(2N_s)` (``"shot"``). Above 1 in magnitude it exceeds
            the declared loss bound, so the certified clip binds on the canary (a diagnostic of
            the step record, never a weaker guarantee).
        background: ``"zero"`` (zero gradients; the default) or ``"shot"`` (examples of
            maximal shot variance; adds the ``lattice`` score).
        proven_epsilon_factor: passed to :func:`make_private` with a credit mode (``None``:
            its default); a large factor lowers the noise floor, which the audit then probes.
        label: the mode's name (or ``credit=..., max_grad_norm=...``), the result's label.
        resolved_credit, resolved_max_grad_norm: the credit and clip passed to make_private.
        depolarizing_q: :math:`q_{dep}` used (0 without device noise).
        resolved_canary_label: the canary's label used.

    Raises:
        ValueError: for an unknown mode, a mode together with ``credit``/``max_grad_norm``,
            or invalid setting parameters.
        TypeError: for ``shots``/``num_examples`` that are not integers.

    Source:
        This module; the zero background is that of Nasr et al., arXiv:2302.07956 (v1).

    Example:
        >>> spec = SettingSpec("fixed_clip", clip_norm=0.25)
        >>> spec.resolved_credit, spec.resolved_max_grad_norm, spec.resolved_canary_label
        ('none', 0.25, 4.0)
    """

    mode: str | None = None
    credit: str | None = None
    max_grad_norm: float | str | None = None
    shots: int = 2
    theta: float = 0.3
    num_examples: int = 30
    target_epsilon: float = 2.0
    target_delta: float = 1e-5
    beta: float = 1e-3
    depolarizing: float | None = None
    clip_norm: float = 0.5
    canary_label: float | None = None
    background: str = "zero"
    proven_epsilon_factor: float | None = None
    label: str = dataclasses.field(init=False)
    resolved_credit: str = dataclasses.field(init=False, repr=False)
    resolved_max_grad_norm: float | str = dataclasses.field(init=False, repr=False)
    depolarizing_q: float = dataclasses.field(init=False, repr=False)
    resolved_canary_label: float = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: the checked values, once
        credit, max_grad_norm, label = _setting_mode(self.mode, self.credit,
                                                     self.max_grad_norm, self.clip_norm)
        put(self, "label", label)
        put(self, "resolved_credit", credit)
        put(self, "resolved_max_grad_norm", max_grad_norm)
        shots = check_positive_int(self.shots, "shots")
        put(self, "shots", shots)
        put(self, "theta", float(self.theta))
        num_examples = check_positive_int(self.num_examples, "num_examples")
        put(self, "num_examples", num_examples)
        background = self.background
        if num_examples % 2 and background == "shot":
            raise ValueError(f"`num_examples` must be even (balanced labels ±1). Found "
                             f"{num_examples}.")
        if background not in BACKGROUNDS:
            raise ValueError(f"`background` must be one of {BACKGROUNDS}. Found "
                             f"{background!r}.")
        canary_label = self.canary_label
        if canary_label is None:
            canary_label = (ZERO_BACKGROUND_CANARY_LABEL if background == "zero"
                            else 1.0 - 0.5 / shots)
        canary_label = check_finite_float(canary_label, "canary_label")
        if canary_label == 0.0:
            raise ValueError("`canary_label` must be non-zero (a canary with label 0 has no "
                             "gradient). Found 0.0.")
        put(self, "resolved_canary_label", canary_label)
        depolarizing = self.depolarizing
        q_dep = float((0.25 if credit == "depolarizing" else 0.0) if depolarizing is None
                      else depolarizing)
        if not 0.0 <= q_dep <= 0.75:
            raise ValueError(f"`depolarizing` must be in [0, 0.75] (PennyLane's q). Found "
                             f"{depolarizing!r}.")
        put(self, "depolarizing_q", q_dep)

    def make_model(self) -> Callable[[int], tuple[qml.qnn.TorchLayer, dict]]:
        """``make_model(device_seed)`` of :func:`audit_one_step`: the setting's layer."""
        credit = self.resolved_credit
        use_recorder = credit not in ("none",) and credit is not None
        return _model_factory(_setting_circuit(self.depolarizing_q), self.depolarizing_q,
                              self.shots, self.theta, use_recorder)

    def data(self) -> tuple[torch.utils.data.TensorDataset, tuple[torch.Tensor, torch.Tensor]]:
        """:math:`D` and the canary ``(x, y)``."""
        n, theta = self.num_examples, self.theta
        xs = torch.full((n, 1), -theta, dtype=torch.float64)
        ys = (torch.tensor([1.0, -1.0] * (n // 2), dtype=torch.float64)
              if self.background == "shot" else torch.zeros(n, dtype=torch.float64))
        canary = (torch.tensor([math.pi / 2 - theta], dtype=torch.float64),
                  torch.tensor(float(self.resolved_canary_label), dtype=torch.float64))
        return torch.utils.data.TensorDataset(xs, ys), canary

    def make_private_kwargs(self) -> dict[str, Any]:
        """The :func:`make_private` arguments of the mode and budget."""
        credit, max_grad_norm = self.resolved_credit, self.resolved_max_grad_norm
        kwargs: dict[str, Any] = dict(target_epsilon=self.target_epsilon,
                                      target_delta=self.target_delta,
                                      max_grad_norm=max_grad_norm, credit=credit)
        if max_grad_norm == "certified":  # the declared bound |∂ℓ/∂f| ≤ 1: C = Δ = 1
            kwargs["loss"] = LinearLoss()
        if credit in ("adaptive", "isotropic"):
            kwargs["beta"] = self.beta
        if self.proven_epsilon_factor is not None:
            kwargs["proven_epsilon_factor"] = self.proven_epsilon_factor
        return kwargs


def audit_setting(mode: str | None = None, spec: SettingSpec | None = None,
                  trial_spec: TrialSpec | None = None, *,
                  plot_path: str | os.PathLike | None = None, fresh: bool = False,
                  private_hook: Callable | None = None, **options: Any) -> AuditResult:
    r"""Audit one private step of the one-qubit setting (make_private end to end, in the box).

    Circuit ``RY(x) RY(θ)`` on one qubit, ⟨Z⟩, one weight θ (``theta``), a QNode with
    ``diff_method=pennylane_qshiftdp.param_shift`` and ``shots`` on ``default.qubit`` (or
    ``default.mixed`` with a final ``DepolarizingChannel(depolarizing)``), linear loss
    :math:`\ell = -y f` declared to make_private as
    :class:`~pennylane_qshiftdp.losses.LinearLoss` (:math:`|y| \le 1`, so
    :math:`C = \Delta = 1` under certified clipping). :math:`D`: ``num_examples`` examples with
    :math:`x = -\theta` and label 0, whose gradients are exactly 0 (``background="zero"``, the
    default: the "zero background" world of Nasr et al., arXiv:2302.07956, in which the release
    on :math:`D` is the DP noise alone), or the same inputs with balanced labels ±1 (both
    shifted circuits have ⟨Z⟩ = 0: maximal shot variance; ``background="shot"``).
    :math:`D'`: :math:`D` plus the canary :math:`x = \pi/2 - \theta` (both shifted circuits
    are Z eigenstates: no shot variance without device noise) with label ``canary_label``; its
    gradient is ``canary_label`` :math:`\cdot (1 - p)`. The default on the zero background is
    4 (:data:`ZERO_BACKGROUND_CANARY_LABEL`): above the declared loss bound, so the clip binds
    on the canary and the release moves by exactly the sensitivity C (a mechanism that does not
    clip moves it by 4 C, one with half the noise by 2 of its standard deviations σ/2: both
    are refuted at the defaults). On the shot background the default is :math:`1 - 1/(2N_s)`
    (half a lattice step off the lattice, which the ``lattice`` score sees; it probes a
    shot-noise credit, not clipping).
    One step at q = 1 (``sample_rate=1``) with the public divisor b = ``num_examples`` in both
    worlds, SGD learning rate 1, budget (``target_epsilon``, ``target_delta``). The ``lattice``
    score uses
    :math:`h = |c|(\lambda_{\max} - \lambda_{\min})/N_s = 1/N_s` (shift coefficient 1/2, ±1
    outcomes, labels ±1): every sum over :math:`D` lies on :math:`h\mathbb Z`, and the canary
    adds :math:`(1 - p)\cdot` ``canary_label`` to it.

    Args:
        mode: a key of :data:`SETTING_MODES` (the field ``mode`` of ``spec``), or ``None``.
        spec: the setting (:class:`SettingSpec`: mode or credit and clip, shots, θ, data set,
            budget, device noise, canary, background); default ``SettingSpec()``.
        trial_spec: the trials (:class:`~pennylane_qshiftdp.audit.specs.TrialSpec`); default
            2000 per world, seed 0, confidence 0.95, both estimators.
        plot_path: if given, the score histograms are written there (PNG).
        fresh: rebuild model and make_private for every trial (see :func:`audit_one_step`).
        private_hook: ``None`` in normal use; **for testing the audit itself** (a broken
            mechanism), see :func:`audit_one_step`.
        **options: fields of :class:`SettingSpec` or
            :class:`~pennylane_qshiftdp.audit.specs.TrialSpec` as keywords (e.g.
            ``shots=10, trials=400, seed=1``): they replace those of ``spec``/``trial_spec``.

    Returns:
        AuditResult: see :func:`audit_one_step`; ``label`` is the mode. Its ``ceilings`` are
        the largest ε each estimator can certify with these trials (2000 per world: about
        5.4 for Clopper–Pearson and 38 for Gaussian DP); a claim above a ceiling cannot be
        refuted by that estimator.

    Power at the defaults (docs/audit.md, "Power and tightness"): against the claim 1.991 of
    ``audit_setting()``, half the Gaussian noise and no clipping are refuted, and the correct
    mechanism is not refuted in 20 of 20 seeds (tests, ``-m slow``).

    Raises:
        ValueError: for an unknown mode, a mode together with ``credit``/``max_grad_norm``,
            or invalid setting parameters (as :class:`SettingSpec` raises them) or trials.
        TypeError: for a keyword that is no field of either spec.

    Example:
        >>> r = audit_setting(spec=SettingSpec("none"), trial_spec=TrialSpec(40, seed=1))
        >>> r.verdict, r.epsilon_lower_bound <= r.claimed_epsilon, r.settings["canary_label"]
        ('not refuted', True, 4.0)
    """
    options = dict(options)
    if mode is not None:
        options["mode"] = mode
    spec = spec_from(SettingSpec, spec, options, "spec")
    trial_spec = spec_from(TrialSpec, trial_spec, options, "trial_spec", trials=2000)
    reject_unknown("audit_setting", options)
    data, canary = spec.data()
    # Shift coefficient |c| = 1/2, outcomes ±1, label weights ±1: sums lie on (1/Ns)ℤ.
    step = 0.5 * 2.0 / spec.shots
    # The canary's expected per-example gradient of ℓ = -y f: y (1 - p) sin(π/2) with
    # p = 4 q_dep / 3; only its sign matters in one dimension.
    canary_label = spec.resolved_canary_label
    direction = [math.copysign(1.0, float(canary_label)) if canary_label else 1.0]
    result = audit_one_step(spec.make_model(), lambda: _weighted_linear_loss, data, canary,
                            trial_spec, lattice_step=step if spec.background == "shot" else None,
                            canary_direction=direction, label=spec.label, fresh=fresh,
                            private_hook=private_hook, **spec.make_private_kwargs())
    settings = dict(result.settings)
    theta, q_dep = spec.theta, spec.depolarizing_q
    settings.update(circuit="RY(x) RY(θ), <Z>, one qubit", theta=theta, shots=spec.shots,
                    device="default.mixed" if q_dep else "default.qubit",
                    depolarizing_q=q_dep, canary_x=math.pi / 2 - theta,
                    canary_label=float(canary_label), data_x=-theta, sample_rate=1.0, lr=1.0,
                    background=spec.background)
    result = dataclasses.replace(result, settings=settings)
    if plot_path is not None:
        plot_audit(result, plot_path)
    return result
