r"""``QShiftDPOptimizer``: Gaussian noise top-up on the summed parameter-shift gradient.

Wraps any :class:`torch.optim.Optimizer`. Before each step the parameters' ``.grad`` hold the
*sum* over the Poisson-sampled batch of the per-example parameter-shift gradients (no clipping:
each is bounded by Δ a priori, :func:`~pennylane_qshiftdp.sensitivity`). The optimizer adds, per
coordinate :math:`k`, :math:`z_k \sim N(0, \max(0, \sigma^2\Delta^2 - \mathrm{credit}_k))` with the
shot-noise credit of :mod:`~pennylane_qshiftdp.noise`, divides by the *expected* batch size
:math:`qN` (DESIGN §2), and calls the wrapped optimizer. An empty batch still adds the full noise
and counts as a step. The ledger (if given) is checked *before* the step.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from ._validation import check_beta, check_nonnegative_float, check_positive_float
from .accountant import PrivacyLedger
from .exceptions import PrivacyBudgetExceededError
from .noise import CREDIT_MODES, artificial_variance, confidence_multiplier, shot_noise_credit
from .sensitivity import Sensitivity
from .shot_statistics import ShotRecorder

__all__ = ["QShiftDPOptimizer", "StepRecord"]


class StepRecord(dict):
    """What one step added and credited (a dict: JSON-friendly)."""


class QShiftDPOptimizer:
    r"""Differentially private optimizer for parameter-shift gradients (Q-ShiftDP).

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer` (its parameters are the ones made
            private: their flattened concatenation must match ``sensitivity``'s weights).
        noise_multiplier: σ > 0 (from :func:`~pennylane_qshiftdp.calibrate_noise_multiplier`).
        sensitivity: the model's :class:`~pennylane_qshiftdp.sensitivity.Sensitivity` (Δ
            includes the adjacency factor).
        expected_batch_size: :math:`qN > 0`; the noisy sum is divided by it.
        credit: ``"none"``, ``"depolarizing"``, ``"adaptive"`` or ``"isotropic"``.
        beta: failure probability of the adaptive bound over the whole run (``adaptive`` and
            ``isotropic``; must be 0 otherwise).
        steps: planned number of steps T (Bonferroni correction of the adaptive bound).
        variance_floor: proven :math:`v_{\min}` (``depolarizing`` mode, floor of ``adaptive``).
        recorder: the :class:`~.ShotRecorder` attached to the QNode (required for a credit).
        generator: a seeded :class:`torch.Generator` (repeatable noise: an integer seed
            repeats the noise — never use it for a real release) or ``None``.
        secure_mode: draw the noise from the OS's CSPRNG (:class:`random.SystemRandom`);
            refuses a ``generator``.
        ledger: a :class:`~pennylane_qshiftdp.accountant.PrivacyLedger` charged one step per
            :meth:`step`, checked before the step.
        confidence: ``"gaussian"`` or ``"cantelli"`` confidence multiplier.

    Raises:
        ValueError: for invalid σ, batch size, credit mode, β, floor; ``adaptive`` without a
            recorder; parameter count not matching the sensitivity.

    References:
        Abadi et al., arXiv:1607.00133 (DP-SGD); Ngo et al., arXiv:2602.02962 (Q-ShiftDP).

    Example:
        >>> import numpy as np
        >>> from pennylane_qshiftdp.sensitivity import Sensitivity
        >>> w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
        >>> sens = Sensitivity(delta=1.0, delta_per_example=1.0, adjacency="add_remove",
        ...     weight_bounds=np.ones((1, 2)), measurement_bounds=np.ones(1),
        ...     parameter_bounds=np.ones((1, 2)), observable_ranges=((-1.0, 1.0),),
        ...     loss_name="linear loss", loss_grad_bounds=(1.0, 1.0),
        ...     classical_jacobian=np.eye(2), weight_names=("w",), weight_shapes=((2,),))
        >>> opt = QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=1.0,
        ...     sensitivity=sens, expected_batch_size=10,
        ...     generator=torch.Generator().manual_seed(0))
        >>> w.grad = torch.zeros(2, dtype=torch.float64)
        >>> opt.step()["artificial_variance_mean"]
        1.0
    """

    def __init__(self, optimizer: torch.optim.Optimizer, *, noise_multiplier: float,
                 sensitivity: Sensitivity, expected_batch_size: float, credit: str = "none",
                 beta: float = 0.0, steps: int | None = None, variance_floor: float = 0.0,
                 recorder: ShotRecorder | None = None, generator: torch.Generator | None = None,
                 secure_mode: bool = False, ledger: PrivacyLedger | None = None,
                 confidence: str = "gaussian"):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"`optimizer` must be a torch.optim.Optimizer. Found "
                            f"{type(optimizer).__name__}.")
        check_positive_float(noise_multiplier, "noise_multiplier")
        check_positive_float(expected_batch_size, "expected_batch_size")
        if credit not in CREDIT_MODES:
            raise ValueError(f"`credit` must be one of {CREDIT_MODES}. Found {credit!r}.")
        adaptive = credit in ("adaptive", "isotropic")
        check_beta(beta, "beta", required=adaptive)
        if credit != "none" and recorder is None:
            raise ValueError(f"credit={credit!r} needs the `recorder` attached to the QNode.")
        if adaptive and (steps is None or steps < 1):
            raise ValueError(f"`steps` (planned T) must be a positive integer for "
                             f"credit={credit!r}. Found {steps!r}.")
        check_nonnegative_float(variance_floor, "variance_floor")
        if secure_mode and generator is not None:
            raise ValueError("secure_mode draws noise from the OS's CSPRNG and refuses a "
                             "seeded `generator`.")
        self.optimizer = optimizer
        self.params = [p for g in optimizer.param_groups for p in g["params"]]
        num = sum(p.numel() for p in self.params)
        self.jacobian = np.asarray(sensitivity.classical_jacobian, dtype=float)
        if self.jacobian.shape[1] != num:
            raise ValueError(
                f"The optimizer's parameters have {num} entries but `sensitivity` bounds "
                f"{self.jacobian.shape[1]} weights; pass only the quantum weights to the optimizer."
            )
        self.noise_multiplier = float(noise_multiplier)
        self.sensitivity = sensitivity
        self.expected_batch_size = float(expected_batch_size)
        self.credit = credit
        self.beta = float(beta)
        self.variance_floor = float(variance_floor)
        self.recorder = recorder
        self.generator = generator
        self.secure_mode = bool(secure_mode)
        self.ledger = ledger
        self.z = (confidence_multiplier(beta=beta, steps=int(steps), coordinates=num,
                                        method=confidence) if adaptive else None)
        self.loss_weights: np.ndarray | None = None
        self.history: list[StepRecord] = []
        self._sysrand = random.SystemRandom() if secure_mode else None

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Zero the gradients and clear the recorder (one recorded call per step)."""
        self.optimizer.zero_grad(set_to_none=set_to_none)
        if self.recorder is not None:
            self.recorder.clear()
        self.loss_weights = None

    def set_loss_weights(self, weights) -> None:
        r"""Per-example :math:`w_j = \partial\ell_j/\partial f` of the batch, shape ``(B,)``."""
        self.loss_weights = np.asarray(weights, dtype=float).reshape(-1)

    def _noise(self, std: np.ndarray) -> np.ndarray:
        if self._sysrand is not None:
            return np.array([self._sysrand.gauss(0.0, float(s)) if s > 0 else 0.0 for s in std])
        z = torch.randn(std.size, generator=self.generator, dtype=torch.float64).numpy()
        return z * std

    def compute_credit(self):
        """Credit per coordinate for the gradient currently recorded."""
        if self.credit == "none" or self.recorder is None:
            return None
        stats = self.recorder.statistics
        if len(stats) == 0:
            return None
        if self.loss_weights is None:
            raise ValueError("Call `set_loss_weights` with the batch's ∂ℓ/∂f before `step` "
                             f"when credit={self.credit!r}.")
        if stats.call.max() > 0:
            raise ValueError(f"The recorder holds {stats.call.max() + 1} gradient calls; one "
                             f"batch must be one call (zero_grad clears the recorder).")
        return shot_noise_credit(stats, jacobian=self.jacobian, loss_weights=self.loss_weights,
                                 mode=self.credit, variance_floor=self.variance_floor, z=self.z)

    @torch.no_grad()
    def step(self, closure=None) -> StepRecord:
        """Add calibrated noise to the summed gradient, average, and step the wrapped optimizer.

        Raises:
            PrivacyBudgetExceededError: if the ledger's target would be exceeded (before any
                change to the parameters).
        """
        if closure is not None:
            raise NotImplementedError("QShiftDPOptimizer.step does not support closures.")
        if self.ledger is not None and self.ledger.would_exceed(1):
            raise PrivacyBudgetExceededError(
                f"Stopping before step {self.ledger.steps + 1}: it would spend "
                f"ε = {self.ledger.epsilon_after(1):.4f} > target "
                f"{self.ledger.target_epsilon:.4f}."
            )
        result = self.compute_credit()
        k = self.jacobian.shape[1]
        credit = np.zeros(k) if result is None else result.credit
        added = artificial_variance(credit, noise_multiplier=self.noise_multiplier,
                                    sensitivity=self.sensitivity.delta)
        noise = self._noise(np.sqrt(added))
        offset = 0
        for p in self.params:
            n = p.numel()
            z = torch.as_tensor(noise[offset:offset + n], dtype=p.dtype).reshape(p.shape)
            grad = p.grad if p.grad is not None else torch.zeros_like(p)
            p.grad = (grad + z) / self.expected_batch_size
            offset += n
        self.optimizer.step()
        if self.ledger is not None:
            self.ledger.step()
        target = self.noise_multiplier**2 * self.sensitivity.delta**2
        record = StepRecord(
            step=len(self.history) + 1,
            credit_mode=self.credit,
            target_variance=target,
            artificial_variance_mean=float(added.mean()),
            artificial_variance_min=float(added.min()),
            credited_variance_mean=float(credit.mean()),
            total_variance_min=float((added + credit).min()),
            shot_variance_estimate_mean=(float(result.estimate.mean()) if result else 0.0),
            shot_variance_lower_bound_mean=(float(result.lower_bound.mean()) if result else 0.0),
            batch_examples=(int(self.loss_weights.size) if self.loss_weights is not None
                            else None),
        )
        self.history.append(record)
        return record

    def state_dict(self) -> dict:
        """Wrapped optimizer state, step history and (if seeded) the generator state."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "history": [dict(r) for r in self.history],
            "generator": self.generator.get_state() if self.generator is not None else None,
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved."""
        self.optimizer.load_state_dict(state["optimizer"])
        self.history = [StepRecord(r) for r in state["history"]]
        if state.get("generator") is not None and self.generator is not None:
            self.generator.set_state(state["generator"])
