r"""A-priori sensitivity of the per-example parameter-shift gradient (no clipping).

Derivation (``docs/transform.md``, "Sensitivity"; Q-ShiftDP arXiv:2602.02962 for the two-term
case). For tape parameter :math:`\varphi_i` with shift rule :math:`\{(c_{it}, s_{it})\}`, the
released estimate is :math:`\hat g_i = \sum_t c_{it}\hat\mu_t` with every sample mean
:math:`\hat\mu_t \in [\lambda_-, \lambda_+]`. If :math:`\sum_t c_{it} = 0`,
:math:`\hat g_i = \sum_t c_{it}(\hat\mu_t - \tfrac{\lambda_- + \lambda_+}{2})`, so for every
shot outcome

.. math::

    |\hat g_i| \le b_i = \frac{\lambda_+ - \lambda_-}{2}\,\|c_i\|_1

(otherwise :math:`b_i = \max(|\lambda_-|, |\lambda_+|)\|c_i\|_1`). A weight :math:`\theta_k`
feeding several gate parameters through a data-independent classical Jacobian
:math:`J_{ik} = \partial\varphi_i/\partial\theta_k` gets :math:`B_k = \sum_i |J_{ik}| b_i`, and
output :math:`m` has :math:`\|\nabla_\theta \hat f_m\|_2 \le \Delta_m = \|B_{\cdot m}\|_2`. For the
per-example gradient :math:`g = \sum_m a_m \nabla_\theta \hat f_m` with
:math:`a = \nabla_f \ell` certified by the loss (:mod:`~pennylane_qshiftdp.losses`),

.. math::

    \|g\|_2 \le \Delta = \min\Big(\|a\|_{1,\max}\,\max_m \Delta_m,\;
        \|a\|_{2,\max}\sqrt{\textstyle\sum_m \Delta_m^2}\Big),

by the triangle and Cauchy–Schwarz inequalities. Under add/remove adjacency the L2
sensitivity of the summed gradient is :math:`\Delta`; under replace-one it is :math:`2\Delta`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pennylane as qml
import torch
from numpy.typing import ArrayLike

from ..exceptions import SensitivityError
from ..losses import BoundedLoss, LinearLoss
from .observables import observable_range
from .shift_rules import expand_tape, shift_rule_coefficients

__all__ = ["Sensitivity", "sensitivity", "ADJACENCIES"]

#: Supported neighbouring relations and the factor they multiply Δ by.
ADJACENCIES = {"add_remove": 1.0, "replace_one": 2.0}

# Tolerance on Σ_t c_it = 0 (shift-rule coefficients are exact up to float rounding).
_COEFF_SUM_ATOL = 1e-10
# Two classical Jacobians are "the same" within this tolerance (float rounding of autodiff).
_JACOBIAN_ATOL = 1e-9
# Number of random points at which the classical Jacobian is re-evaluated.
_JACOBIAN_PROBES = 3


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    r"""The a-priori L2 sensitivity of one example's gradient, with its parts.

    Attributes:
        delta: :math:`\Delta` including the adjacency factor (the value noise is scaled by).
        delta_per_example: :math:`\Delta` before the adjacency factor.
        adjacency: ``"add_remove"`` or ``"replace_one"``.
        weight_bounds: :math:`B_{km}`, shape ``(num_measurements, num_weights)``: bound on
            :math:`|\partial \hat f_m/\partial\theta_k|` (weights flattened in argument order).
        measurement_bounds: :math:`\Delta_m`, shape ``(num_measurements,)``.
        parameter_bounds: :math:`b_{im}`, shape ``(num_measurements, num_tape_params)``.
        observable_ranges: ``(lam_min, lam_max)`` of each measurement's estimator.
        loss_name: the loss.
        loss_grad_bounds: certified ``(L1, L2)`` bounds on :math:`\nabla_f\ell`.
        classical_jacobian: :math:`J`, shape ``(num_tape_params, num_weights)``.
        weight_names: names of the trainable arguments, in flattening order.
        weight_shapes: their shapes.
        jacobian_bound_used: whether a user-supplied Jacobian bound replaced :math:`|J|`.
    """

    delta: float
    delta_per_example: float
    adjacency: str
    weight_bounds: np.ndarray
    measurement_bounds: np.ndarray
    parameter_bounds: np.ndarray
    observable_ranges: tuple
    loss_name: str
    loss_grad_bounds: tuple
    classical_jacobian: np.ndarray
    weight_names: tuple
    weight_shapes: tuple
    jacobian_bound_used: bool = False

    @property
    def per_weight(self) -> np.ndarray:
        r"""Bound on each weight's gradient coordinate over all outputs, :math:`\max_m B_{km}`."""
        return self.weight_bounds.max(axis=0) if self.weight_bounds.size else self.weight_bounds

    def summary(self) -> str:
        """A short human-readable account of Δ and its parts."""
        ranges = ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in self.observable_ranges)
        return (
            f"Δ = {self.delta:.6g} ({self.adjacency}; per example {self.delta_per_example:.6g}); "
            f"Δ_m = {np.array2string(self.measurement_bounds, precision=4)}; observable "
            f"ranges {ranges}; {self.loss_name} with |∇_f ℓ|_1 ≤ {self.loss_grad_bounds[0]:g}, "
            f"|∇_f ℓ|_2 ≤ {self.loss_grad_bounds[1]:g}"
        )

    def as_dict(self) -> dict:
        """JSON-friendly dictionary of the scalar parts."""
        return {
            "delta": self.delta,
            "delta_per_example": self.delta_per_example,
            "adjacency": self.adjacency,
            "measurement_bounds": self.measurement_bounds.tolist(),
            "observable_ranges": [list(r) for r in self.observable_ranges],
            "loss": self.loss_name,
            "loss_grad_bounds": list(self.loss_grad_bounds),
            "max_weight_bound": float(self.per_weight.max()) if self.per_weight.size else 0.0,
            "jacobian_bound_used": self.jacobian_bound_used,
        }


def _is_trainable(x) -> bool:
    if isinstance(x, torch.Tensor):
        return bool(x.requires_grad)
    return bool(getattr(x, "requires_grad", False))


def _to_torch(x, requires_grad):
    t = torch.as_tensor(np.asarray(qml.math.unwrap(x.detach() if isinstance(x, torch.Tensor)
                                                    else x)), dtype=torch.float64)
    return t.clone().requires_grad_(requires_grad)


def _as_data(x):
    arr = x.detach().numpy() if isinstance(x, torch.Tensor) else qml.math.unwrap(x)
    if isinstance(arr, (np.ndarray, float, np.floating)) and np.asarray(arr).dtype.kind == "f":
        return torch.as_tensor(np.asarray(arr), dtype=torch.float64)
    return x


def _gradient_tape(qnode, args, kwargs):
    batch, _ = qml.workflow.construct_batch(qnode, level="gradient")(*args, **kwargs)
    if len(batch) != 1:
        raise NotImplementedError(
            f"sensitivity supports QNodes that produce a single tape; found {len(batch)} tapes."
        )
    [tape], _ = expand_tape(batch[0])
    return tape


class _Split:
    """Split a QNode call into trainable weights and fixed (data) arguments."""

    def __init__(self, args, kwargs):
        # Data arguments are converted to torch so that weights and data share an interface.
        self.args = [a if _is_trainable(a) else _as_data(a) for a in args]
        self.kwargs = {k: v if _is_trainable(v) else _as_data(v) for k, v in kwargs.items()}
        self.slots = [("arg", i) for i, a in enumerate(self.args) if _is_trainable(a)]
        self.slots += [("kw", k) for k, v in self.kwargs.items() if _is_trainable(v)]
        if not self.slots:
            raise ValueError(
                "No trainable argument found: mark the weights with requires_grad=True "
                "(torch tensors or pennylane.numpy arrays)."
            )
        self.names = tuple(f"arg{i}" if s == "arg" else str(i) for s, i in self.slots)
        self.weights = [_to_torch(self._get(s), False) for s in self.slots]
        self.shapes = tuple(tuple(w.shape) for w in self.weights)
        fixed = [(i, a) for i, a in enumerate(self.args) if not _is_trainable(a)]
        fixed += [(k, v) for k, v in self.kwargs.items() if not _is_trainable(v)]
        self.fixed = fixed

    def _get(self, slot):
        kind, key = slot
        return self.args[key] if kind == "arg" else self.kwargs[key]

    def call_args(self, weights, data_override=None):
        args, kwargs = list(self.args), dict(self.kwargs)
        for (kind, key), w in zip(self.slots, weights, strict=True):
            if kind == "arg":
                args[key] = w
            else:
                kwargs[key] = w
        for key, val in (data_override or {}).items():
            if isinstance(key, int):
                args[key] = val
            else:
                kwargs[key] = val
        return args, kwargs


def _classical_jacobian(qnode, split, weights, data_override=None):
    flat_sizes = [w.numel() for w in weights]

    def tape_params(*flat_ws):
        ws = [fw.reshape(w.shape) for fw, w in zip(flat_ws, weights, strict=True)]
        args, kwargs = split.call_args(ws, data_override)
        tape = _gradient_tape(qnode, args, kwargs)
        params = tape.get_parameters(trainable_only=True)
        if not params:
            return torch.zeros(0, dtype=torch.float64)
        return torch.stack([torch.as_tensor(p, dtype=torch.float64).reshape(()) for p in params])

    flat = tuple(w.detach().reshape(-1).clone() for w in weights)
    jac = torch.autograd.functional.jacobian(tape_params, flat)
    if not isinstance(jac, tuple):
        jac = (jac,)
    jac = [j.reshape(j.shape[0], n) if j.ndim else j.reshape(0, n)
           for j, n in zip(jac, flat_sizes, strict=True)]
    return torch.cat(jac, dim=1).numpy() if jac else np.zeros((0, 0))


def _perturbed(split, rng):
    """Random weights and data of the same shapes (to test that J is constant)."""
    weights = [torch.as_tensor(rng.normal(size=w.shape) * 2.0, dtype=torch.float64)
               for w in split.weights]
    data = {}
    for key, val in split.fixed:
        arr = np.asarray(qml.math.unwrap(val.detach() if isinstance(val, torch.Tensor) else val))
        if arr.dtype.kind in "fc" and arr.size:
            data[key] = torch.as_tensor(arr + rng.normal(size=arr.shape), dtype=torch.float64)
    return weights, data


def _parameter_bounds(tape, ranges) -> np.ndarray:
    """b_im: the bound of ∂⟨O_m⟩/∂φ_i for every tape parameter i and measurement m (the shift
    rule of each measurement's light cone; ``ranges``: the observables' [lo, hi])."""
    measurements = tape.measurements
    b = np.zeros((len(measurements), len(tape.trainable_params)))
    for m, (mp, (lo, hi)) in enumerate(zip(measurements, ranges, strict=True)):
        coeffs = shift_rule_coefficients(
            tape.copy(measurements=[mp], trainable_params=tape.trainable_params)
        )
        l1 = np.abs(coeffs).sum(axis=1)
        balanced = np.abs(coeffs.sum(axis=1)) <= _COEFF_SUM_ATOL
        b[m] = np.where(balanced, (hi - lo) / 2.0, max(abs(lo), abs(hi))) * l1
    return b


def _jacobian_support(qnode, split, jac: np.ndarray, seed) -> tuple[np.ndarray, str | None]:
    """Where the classical Jacobian is non-zero at ``jac`` or any of the probes of random
    weights and data, and what it varies with (``"the input data"``, ``"the weights"`` or
    ``None``)."""
    rng = np.random.default_rng(seed)
    support = np.abs(jac) > 0
    varies = None
    for _ in range(_JACOBIAN_PROBES):
        w_p, data_p = _perturbed(split, rng)
        override: dict
        for override in (data_p, {}):
            jac_p = _classical_jacobian(qnode, split, w_p if not override else split.weights,
                                        override)
            if jac_p.shape != jac.shape or not np.allclose(jac_p, jac, atol=_JACOBIAN_ATOL):
                varies = "the input data" if override else "the weights"
            if jac_p.shape == jac.shape:
                support |= np.abs(jac_p) > 0
    return support, varies


def _abs_jacobian(jac: np.ndarray, support: np.ndarray, varies: str | None,
                  jacobian_bound) -> np.ndarray:
    """|∂φ_i/∂θ_k|: the classical Jacobian's where it is constant, else ``jacobian_bound``
    (a scalar on the Jacobian's support, or an array of its shape)."""
    if jacobian_bound is None:
        if varies is not None:
            raise SensitivityError(
                f"The classical Jacobian from the trainable weights to the gate parameters "
                f"depends on {varies} (e.g. RX(w * x) or RX(w ** 2)), so the gradient has no "
                f"data-independent bound. Pass `jacobian_bound` with a bound on "
                f"|∂φ_i/∂θ_k| that holds for every input, or use separate gates for data and "
                f"weights: RX(x) RX(w)."
            )
        return np.abs(jac)
    bound = np.asarray(jacobian_bound, dtype=float)
    if bound.ndim == 0:
        bound = np.where(support, float(bound), 0.0)
    if bound.shape != jac.shape or not np.all(np.isfinite(bound)) or np.any(bound < 0):
        raise ValueError(
            f"`jacobian_bound` must be a finite non-negative scalar or an array of shape "
            f"{jac.shape}. Found shape {bound.shape}."
        )
    return bound


def sensitivity(qnode: qml.QNode, *args: Any, loss: BoundedLoss | None = None,
                adjacency: str = "add_remove", jacobian_bound: ArrayLike | None = None,
                seed: int = 0, **kwargs: Any) -> Sensitivity:
    r"""A-priori L2 bound :math:`\Delta` on one example's parameter-shift gradient.

    Args:
        qnode: the QNode (any PennyLane device; its gates are expanded as
            :func:`~pennylane_qshiftdp.param_shift` expands them). Its measurements must be
            ``expval`` of bounded observables.
        *args, **kwargs: a representative call of the QNode. Trainable weights are the
            arguments with ``requires_grad=True`` (torch tensors or ``pennylane.numpy``
            arrays); every other floating-point argument is treated as data.
        loss: a :class:`~pennylane_qshiftdp.losses.BoundedLoss` (default :class:`LinearLoss`).
        adjacency: ``"add_remove"`` (Opacus's default) or ``"replace_one"`` (doubles Δ).
        jacobian_bound: optional bound on :math:`|\partial\varphi_i/\partial\theta_k|` over all
            inputs, a scalar or an array of shape ``(num_tape_params, num_weights)``; required
            when the classical Jacobian depends on the data (``RX(w * x)``). A scalar applies
            to every pair that is non-zero at the evaluated and probe points.
        seed: seed of the random probe points for the data-dependence check.

    Returns:
        Sensitivity: Δ and its parts.

    Raises:
        ValueError: for an unknown ``adjacency``, no trainable argument, an unbounded
            measurement, or a gate with no shift rule.
        SensitivityError: if the classical Jacobian depends on the data or on the weights
            (checked at the given point and at random probe points) and no
            ``jacobian_bound`` was supplied.

    References:
        Derived here (module docstring; ``docs/transform.md``); two-term case:
        Ngo et al., arXiv:2602.02962.

    Example:
        >>> from pennylane import numpy as pnp
        >>> dev = qml.device("default.qubit", wires=2)
        >>> @qml.qnode(dev)
        ... def circuit(w):
        ...     qml.RX(w[0], 0)
        ...     qml.RY(w[1], 1)
        ...     qml.CNOT([0, 1])
        ...     return qml.expval(qml.Z(1))
        >>> s = sensitivity(circuit, pnp.array([0.1, 0.2], requires_grad=True))
        >>> round(s.delta, 12) == round(2 ** 0.5, 12)
        True
    """
    if adjacency not in ADJACENCIES:
        raise ValueError(
            f"`adjacency` must be one of {sorted(ADJACENCIES)}. Found {adjacency!r}."
        )
    loss = LinearLoss() if loss is None else loss
    if not isinstance(loss, BoundedLoss):
        raise TypeError(
            f"`loss` must be a pennylane_qshiftdp.losses.BoundedLoss (declare a custom loss "
            f"with DeclaredLoss). Found {type(loss).__name__}."
        )
    split = _Split(args, kwargs)
    call_args, call_kwargs = split.call_args(
        [w.clone().requires_grad_(True) for w in split.weights]
    )
    tape = _gradient_tape(qnode, call_args, call_kwargs)
    measurements = tape.measurements
    for mp in measurements:
        if not isinstance(mp, qml.measurements.ExpectationMP):
            raise ValueError(
                f"sensitivity bounds expval measurements of bounded observables only. "
                f"Found {mp}."
            )
    ranges = tuple(observable_range(mp.obs) for mp in measurements)

    # b_im: per tape parameter and measurement (light cone per measurement).
    num_params = len(tape.trainable_params)
    b = _parameter_bounds(tape, ranges)

    # Classical Jacobian and its data (in)dependence.
    jac = _classical_jacobian(qnode, split, split.weights)
    if jac.shape[0] != num_params:
        raise ValueError(
            f"Internal mismatch: {jac.shape[0]} differentiable gate parameters but "
            f"{num_params} trainable tape parameters."
        )
    support, varies = _jacobian_support(qnode, split, jac, seed)
    abs_jac = _abs_jacobian(jac, support, varies, jacobian_bound)

    weight_bounds = b @ abs_jac  # (M, K)
    measurement_bounds = np.sqrt((weight_bounds**2).sum(axis=1))
    lo = min(r[0] for r in ranges)
    hi = max(r[1] for r in ranges)
    l1, l2 = loss.grad_bounds(output_range=(lo, hi), num_outputs=len(measurements))
    per_example = min(
        l1 * float(measurement_bounds.max(initial=0.0)),
        l2 * math.sqrt(float((measurement_bounds**2).sum())),
    )
    return Sensitivity(
        delta=per_example * ADJACENCIES[adjacency],
        delta_per_example=per_example,
        adjacency=adjacency,
        weight_bounds=weight_bounds,
        measurement_bounds=measurement_bounds,
        parameter_bounds=b,
        observable_ranges=ranges,
        loss_name=loss.name,
        loss_grad_bounds=(l1, l2),
        classical_jacobian=jac,
        weight_names=split.names,
        weight_shapes=split.shapes,
        jacobian_bound_used=jacobian_bound is not None,
    )
