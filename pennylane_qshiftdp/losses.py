r"""Losses with certified bounds on :math:`\nabla_f \ell`, the gradient with respect to the outputs.

The per-example gradient of a loss :math:`\ell(f(\theta; x), y)` with respect to the weights is
:math:`g = \sum_m (\partial\ell/\partial f_m) \nabla_\theta f_m`. Q-ShiftDP bounds
:math:`\|\nabla_\theta f_m\|_2` from the shift rule (:mod:`pennylane_qshiftdp.sensitivity`), so a
loss only has to certify bounds on :math:`\|\nabla_f\ell\|_1` and :math:`\|\nabla_f\ell\|_2`
over every output :math:`f \in [\lambda_-, \lambda_+]^M` and every admissible target. Each loss
also checks the certified bound on the gradients it actually produces and raises
:class:`~.SensitivityError` if it is ever exceeded (never under-noises).

All losses take outputs of shape ``(batch, M)`` (or ``(batch,)`` for ``M = 1``) and return the
per-example losses, shape ``(batch,)``.
"""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Callable

import torch

from ._validation import check_nonnegative_float, check_positive_float
from .exceptions import PrivacyWarning, SensitivityError

__all__ = [
    "BoundedLoss",
    "LinearLoss",
    "LogisticLoss",
    "MarginLoss",
    "MSELoss",
    "SoftmaxCrossEntropyLoss",
    "DeclaredLoss",
]

# Relative slack when checking observed gradients against certified bounds (float rounding).
_CHECK_RTOL = 1e-9


def _check_range(output_range):
    lo, hi = (float(v) for v in output_range)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"`output_range` must be a finite pair lo <= hi. Found {output_range!r}.")
    return lo, hi


def _check_num_outputs(num_outputs):
    if isinstance(num_outputs, bool) or not isinstance(num_outputs, int) or num_outputs < 1:
        raise ValueError(f"`num_outputs` must be a positive integer. Found {num_outputs!r}.")
    return num_outputs


class BoundedLoss(abc.ABC):
    r"""A per-example loss with certified bounds on :math:`\|\nabla_f \ell\|_1` and
    :math:`\|\nabla_f \ell\|_2`."""

    #: Human-readable name used in privacy statements.
    name = "loss"

    @abc.abstractmethod
    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Per-example losses, shape ``(batch,)``."""

    @abc.abstractmethod
    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        r"""Certified ``(L1, L2)`` bounds on :math:`\nabla_f\ell` for outputs in ``output_range``.

        Args:
            output_range: ``(lo, hi)``, the range of every output :math:`f_m`.
            num_outputs: number of outputs :math:`M \geq 1`.
        """

    def output_gradients(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        r"""Per-example :math:`\partial\ell/\partial f`, shape ``(batch, M)`` (autograd)."""
        out = outputs.detach().clone().requires_grad_(True)
        (grad,) = torch.autograd.grad(self(out, targets).sum(), out)
        return grad.reshape(grad.shape[0], -1) if grad.ndim else grad.reshape(1, 1)

    def check(self, outputs: torch.Tensor, targets: torch.Tensor, *,
              output_range: tuple[float, float], num_outputs: int | None = None) -> torch.Tensor:
        r"""Compute :math:`\partial\ell/\partial f` and raise if it exceeds the certified bounds.

        Raises:
            SensitivityError: if an example's gradient norm exceeds the certified bound.
        """
        grad = self.output_gradients(outputs, targets)
        return self.verify(grad, output_range=output_range, num_outputs=num_outputs)

    def verify(self, grad: torch.Tensor, *, output_range: tuple[float, float],
               num_outputs: int | None = None,
               hint: str = "the outputs or targets are outside the declared range"
               ) -> torch.Tensor:
        r"""Raise if per-example gradients ``grad`` (shape ``(B, M)``) exceed the certified bounds.

        Returns:
            ``grad`` unchanged.

        Raises:
            SensitivityError: if an example's L1 or L2 norm exceeds the certified bound.
        """
        m = grad.shape[1] if num_outputs is None else num_outputs
        l1, l2 = self.grad_bounds(output_range=output_range, num_outputs=m)
        n1 = grad.abs().sum(dim=1).max().item() if grad.numel() else 0.0
        n2 = grad.norm(dim=1).max().item() if grad.numel() else 0.0
        if n1 > l1 * (1 + _CHECK_RTOL) + 1e-12 or n2 > l2 * (1 + _CHECK_RTOL) + 1e-12:
            raise SensitivityError(
                f"The gradient of {self.name} with respect to the outputs exceeded its certified "
                f"bound (L1 {n1:.6g} > {l1:.6g} or L2 {n2:.6g} > {l2:.6g}); {hint}. No step "
                f"was taken."
            )
        return grad


class LinearLoss(BoundedLoss):
    r"""Linear (correlation) loss :math:`\ell = -\frac{1}{M}\sum_m y_m f_m`, :math:`|y_m| \le 1`.

    :math:`|\partial\ell/\partial f_m| = |y_m|/M \le 1/M`, so :math:`\|\nabla_f\ell\|_1 \le 1` and
    :math:`\|\nabla_f\ell\|_2 \le 1/\sqrt{M}`.

    Example:
        >>> loss = LinearLoss()
        >>> loss(torch.tensor([0.5, -0.2]), torch.tensor([1.0, -1.0])).tolist()
        [-0.5, -0.2]
        >>> loss.grad_bounds(output_range=(-1, 1), num_outputs=1)
        (1.0, 1.0)
    """

    name = "linear loss"

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs, targets = _as_2d(outputs), _as_2d(targets).to(outputs.dtype)
        if targets.numel() and targets.abs().max() > 1:
            raise ValueError(
                f"`targets` of LinearLoss must lie in [-1, 1]. Found {targets.abs().max().item()}."
            )
        if (targets.numel() > 1 and bool(((targets == 0) | (targets == 1)).all())
                and bool((targets == 0).any()) and not getattr(self, "_warned_01", False)):
            self._warned_01 = True
            warnings.warn(
                "LinearLoss got targets in {0, 1}: examples with target 0 contribute no "
                "gradient (ℓ = −y·f). Map the labels to {−1, +1} (e.g. y = 2·label − 1).",
                PrivacyWarning, stacklevel=2)
        return -(targets * outputs).mean(dim=1)

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        _check_range(output_range)
        m = _check_num_outputs(num_outputs)
        return 1.0, 1.0 / math.sqrt(m)


class LogisticLoss(BoundedLoss):
    r"""Logistic loss :math:`\ell = \log(1 + e^{-y s f})` of one output, labels :math:`y = \pm 1`.

    The binary cross-entropy of :math:`\sigma(s f)`: :math:`s f` is the logit (an expectation
    value :math:`f \in [-1, 1]` scaled by :math:`s > 0`). :math:`\partial\ell/\partial f =
    -y s\,\sigma(-y s f)`, so :math:`|\partial\ell/\partial f| < s` and both norms are at most
    :math:`s` (derived here). Unlike :class:`LinearLoss` its gradient vanishes on examples
    classified with a margin, so training concentrates on the others.

    Args:
        logit_scale: :math:`s > 0`.

    Raises:
        ValueError: for a non-positive ``logit_scale``, targets other than :math:`\pm 1`, or
            more than one output.

    Example:
        >>> loss = LogisticLoss(logit_scale=2.0)
        >>> values = loss(torch.tensor([0.0, 1.0]), torch.tensor([1.0, -1.0]))
        >>> [round(v, 4) for v in values.tolist()]
        [0.6931, 2.1269]
        >>> loss.grad_bounds(output_range=(-1, 1), num_outputs=1)
        (2.0, 2.0)
    """

    name = "logistic loss"

    def __init__(self, logit_scale: float = 1.0):
        self.logit_scale = check_positive_float(logit_scale, "logit_scale")

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs, targets = _as_2d(outputs), _as_2d(targets).to(outputs.dtype)
        if outputs.shape[1] != 1:
            raise ValueError(f"LogisticLoss takes one output per example. Found "
                             f"{outputs.shape[1]}.")
        if targets.numel() and not bool((targets.abs() == 1).all()):
            raise ValueError(f"`targets` of LogisticLoss must be -1 or +1. Found "
                             f"{sorted(set(targets.reshape(-1).tolist()))}.")
        return torch.nn.functional.softplus(-self.logit_scale * targets[:, 0] * outputs[:, 0])

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        _check_range(output_range)
        if _check_num_outputs(num_outputs) != 1:
            raise ValueError(f"LogisticLoss takes one output per example. Found {num_outputs}.")
        return self.logit_scale, self.logit_scale


class MarginLoss(BoundedLoss):
    r"""Hinge (margin) loss :math:`\ell = \max(0, \kappa - y f)` for one output, :math:`y = \pm 1`.

    :math:`\partial\ell/\partial f \in \{0, -y\}`, so both norms are at most 1.

    Args:
        margin: :math:`\kappa \geq 0`.

    Example:
        >>> MarginLoss(margin=0.5)(torch.tensor([0.8, -0.2]), torch.tensor([1.0, 1.0])).tolist()
        [0.0, 0.7]
    """

    name = "margin loss"

    def __init__(self, margin: float = 1.0):
        self.margin = check_nonnegative_float(margin, "margin")

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs, targets = _as_2d(outputs), _as_2d(targets).to(outputs.dtype)
        if outputs.shape[1] != 1:
            raise ValueError(f"MarginLoss takes one output per example. Found {outputs.shape[1]}.")
        return torch.clamp(self.margin - targets[:, 0] * outputs[:, 0], min=0.0)

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        _check_range(output_range)
        if _check_num_outputs(num_outputs) != 1:
            raise ValueError(f"MarginLoss takes one output per example. Found {num_outputs}.")
        return 1.0, 1.0


class MSELoss(BoundedLoss):
    r"""Squared error :math:`\ell = \frac{1}{M}\sum_m (f_m - y_m)^2` with :math:`|y_m| \le B_y`.

    :math:`|\partial\ell/\partial f_m| = \frac{2}{M}|f_m - y_m| \le \frac{2}{M}(\max(|\lambda_-|,
    |\lambda_+|) + B_y)`; with outputs in :math:`[-1, 1]` and targets :math:`\pm 1` this is 4
    for one output.

    Args:
        target_bound: :math:`B_y`, a bound on :math:`|y_m|` (checked on every call).

    Example:
        >>> MSELoss(target_bound=1.0).grad_bounds(output_range=(-1, 1), num_outputs=1)
        (4.0, 4.0)
    """

    name = "mean squared error"

    def __init__(self, target_bound: float = 1.0):
        self.target_bound = check_nonnegative_float(target_bound, "target_bound")

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs, targets = _as_2d(outputs), _as_2d(targets).to(outputs.dtype)
        if targets.numel() and targets.abs().max().item() > self.target_bound:
            raise ValueError(
                f"`targets` must satisfy |y| <= target_bound={self.target_bound}. "
                f"Found {targets.abs().max().item()}."
            )
        return ((outputs - targets) ** 2).mean(dim=1)

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        lo, hi = _check_range(output_range)
        m = _check_num_outputs(num_outputs)
        per = 2.0 * (max(abs(lo), abs(hi)) + self.target_bound) / m
        return per * m, per * math.sqrt(m)


class SoftmaxCrossEntropyLoss(BoundedLoss):
    r"""Cross-entropy of :math:`\mathrm{softmax}(s f)` over :math:`M \ge 2` expectation values.

    With :math:`p = \mathrm{softmax}(s f)`, :math:`\nabla_f \ell = s(p - e_y)`, hence
    :math:`\|\nabla_f\ell\|_1 = 2s(1 - p_y) \le 2s` and
    :math:`\|\nabla_f\ell\|_2^2 = s^2[(1-p_y)^2 + \sum_{m\ne y} p_m^2] \le 2 s^2`
    (derived here).

    Args:
        logit_scale: :math:`s > 0`, multiplies the expectation values to form logits.

    Example:
        >>> loss = SoftmaxCrossEntropyLoss(logit_scale=2.0)
        >>> loss.grad_bounds(output_range=(-1, 1), num_outputs=3)
        (4.0, 2.8284271247461903)
    """

    name = "softmax cross-entropy"

    def __init__(self, logit_scale: float = 1.0):
        self.logit_scale = check_positive_float(logit_scale, "logit_scale")

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        outputs = _as_2d(outputs)
        targets = torch.as_tensor(targets).reshape(-1).long()
        if outputs.shape[1] < 2:
            raise ValueError(
                f"SoftmaxCrossEntropyLoss needs at least 2 outputs. Found {outputs.shape[1]}."
            )
        if targets.numel() and (targets.min() < 0 or targets.max() >= outputs.shape[1]):
            raise ValueError(
                f"`targets` must be class indices in [0, {outputs.shape[1] - 1}]. "
                f"Found {targets.tolist()}."
            )
        return torch.nn.functional.cross_entropy(
            self.logit_scale * outputs, targets, reduction="none"
        )

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        _check_range(output_range)
        _check_num_outputs(num_outputs)
        return 2.0 * self.logit_scale, math.sqrt(2.0) * self.logit_scale


class DeclaredLoss(BoundedLoss):
    r"""A user-defined loss with user-declared bounds on :math:`\nabla_f\ell`.

    The declaration is checked on every batch by :meth:`check`; a violation raises
    :class:`~.SensitivityError` before any noise is calibrated on it.

    Args:
        fn: ``fn(outputs, targets) -> per-example losses`` (differentiable in torch).
        grad_l1: declared bound on :math:`\|\nabla_f\ell\|_1`.
        grad_l2: declared bound on :math:`\|\nabla_f\ell\|_2` (default: ``grad_l1``).

    Example:
        >>> loss = DeclaredLoss(lambda f, y: 0.5 * (f - y).reshape(-1) ** 2, grad_l1=2.0)
        >>> loss.grad_bounds(output_range=(-1, 1), num_outputs=1)
        (2.0, 2.0)
    """

    name = "declared loss"

    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], *,
                 grad_l1: float, grad_l2: float | None = None):
        if not callable(fn):
            raise TypeError(f"`fn` must be callable. Found {type(fn).__name__}.")
        grad_l2 = grad_l1 if grad_l2 is None else grad_l2
        self.fn = fn
        self.grad_l1 = check_positive_float(grad_l1, "grad_l1")
        self.grad_l2 = check_positive_float(grad_l2, "grad_l2")

    def __call__(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.fn(outputs, targets)

    def grad_bounds(self, *, output_range: tuple[float, float],
                    num_outputs: int) -> tuple[float, float]:
        _check_range(output_range)
        _check_num_outputs(num_outputs)
        return self.grad_l1, self.grad_l2


def _as_2d(x):
    x = torch.as_tensor(x)
    return x.reshape(-1, 1) if x.ndim <= 1 else x.reshape(x.shape[0], -1)
