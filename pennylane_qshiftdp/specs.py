r"""The settings of :func:`~pennylane_qshiftdp.make_private`, grouped and checked once.

:func:`~pennylane_qshiftdp.make_private` keeps its keyword arguments (the compatibility front
end) and builds these frozen records from them; every preparation step then takes the records
it needs instead of a dozen loose settings. Each record checks its fields once, in
``__post_init__``, with the messages :func:`~pennylane_qshiftdp.make_private` has always given
(the checks that need the model or the data run later, where they always ran).

* :class:`AccountingSpec`: the budget (ε in nats, δ), the accountant and the adjacency;
* :class:`SamplingSpec`: how Poisson sampling is planned (q, b, N, epochs);
* :class:`ClipSpec`: the clip mode and what it reads (loss, input domain, adaptive settings);
* :class:`CreditSpec`: the shot-noise credit and the shot budget;
* :class:`RandomnessSpec`: the seed, or the OS's CSPRNG.

The values are stored as given, so everything downstream sees exactly what
:func:`~pennylane_qshiftdp.make_private` was called with; only :class:`SamplingSpec` stores
its numbers as its checks return them (``float``, ``int``), as make_private always used them.

Example:
    >>> AccountingSpec(target_epsilon=1.0, target_delta=1e-5).adjacency
    'add_remove'
    >>> ClipSpec(max_grad_norm=-1.0)
    Traceback (most recent call last):
        ...
    ValueError: `max_grad_norm` must be positive and finite. Found -1.0.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._validation import (
    check_beta,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_float,
    check_positive_int,
    check_sample_rate,
)
from .accountants.calibration import DEFAULT_ACCOUNTANT
from .accountants.config import ADJACENCIES
from .credit.shot_noise import CREDIT_MODES
from .optimizers.selection import CLIP_CLASSES

if TYPE_CHECKING:
    from .gradients.shot_statistics import ShotRecorder
    from .losses import BoundedLoss

__all__ = [
    "AccountingSpec", "SamplingSpec", "ClipSpec", "CreditSpec", "RandomnessSpec",
    "CLIP_MODES", "DEFAULT_PROVEN_EPSILON_FACTOR",
]

#: Accepted string values of ``max_grad_norm`` (a positive float is fixed DP-SGD clipping;
#: ``None`` chooses from the model's structure,
#: :func:`~pennylane_qshiftdp.default_clip_mode`): ``"calibrated"`` (a C chosen on public
#: synthetic inputs, clipped as a float C is) and every mode with an optimizer class of its
#: own (:data:`~pennylane_qshiftdp.optimizers.selection.CLIP_CLASSES`, read here so that a new
#: mode is named in one place).
CLIP_MODES: tuple[str, ...] = ("calibrated", *(
    mode for mode in CLIP_CLASSES if mode not in ("flat", "per_layer")))

#: With shot-noise credit, the artificial noise never drops below the level that alone gives
#: ε = factor × target ε (docs/noise.md, "Noise floor").
DEFAULT_PROVEN_EPSILON_FACTOR = 1.5


@dataclasses.dataclass(frozen=True)
class AccountingSpec:
    r"""The privacy budget and how it is accounted.

    Args:
        target_epsilon: the budget ε > 0, in nats (σ is calibrated so that the planned run
            spends at most this).
        target_delta: the budget δ ∈ (0, 1), well below 1/N.
        accountant: a name of Opacus's accountant registry: ``"pld"`` (the default,
            dp-accounting's privacy loss distributions), ``"rdp"``, ``"prv"``, or one a user
            registered; checked when σ is calibrated.
        adjacency: ``"add_remove"`` (Opacus's convention) or ``"replace_one"`` (the noise
            follows the doubled sensitivity 2C).
        preprocessing_note: which data-dependent preprocessing is not protected (text for
            the privacy statement), or ``None``; checked by the ledger.

    Raises:
        ValueError: if ε or δ is out of range, or the adjacency is unknown.
        TypeError: if ε or δ is not a real number.

    Source:
        the front-end checks of :func:`~pennylane_qshiftdp.make_private` (issue 46).
    """

    target_epsilon: float
    target_delta: float
    accountant: str = DEFAULT_ACCOUNTANT
    adjacency: str = "add_remove"
    preprocessing_note: str | None = None

    def __post_init__(self) -> None:
        check_epsilon(self.target_epsilon, "target_epsilon")
        check_delta(self.target_delta, "target_delta")
        check_choice(self.adjacency, "adjacency", ADJACENCIES)


@dataclasses.dataclass(frozen=True)
class SamplingSpec:
    r"""How Poisson sampling is planned: the rate q, the public divisor b and the length.

    The numbers are stored as their checks return them (``float``; ``dataset_size`` an
    ``int``).

    Args:
        epochs: training epochs E > 0 (may be fractional): T = ⌈E / q⌉ steps.
        sample_rate: the Poisson sampling rate q ∈ (0, 1] (public), or ``None``: then
            b / ``dataset_size`` for a declared size, else ``1/len(data_loader)`` (N is then
            treated as public).
        expected_batch_size: the public constant b > 0 (examples) the noisy sum is divided
            by, or ``None`` for the loader's ``batch_size``.
        dataset_size: a declared, public data set size N (a positive integer), or ``None``;
            exclusive with ``sample_rate``.

    Raises:
        ValueError: if both ``sample_rate`` and ``dataset_size`` are given, or a value is out
            of range.
        TypeError: if a value has the wrong type.

    Source:
        the sampling checks of :func:`~pennylane_qshiftdp.make_private` (opacus#819: b is
        never q·N; docs/engine.md, "Public normaliser").
    """

    epochs: float
    sample_rate: float | None = None
    expected_batch_size: float | None = None
    dataset_size: int | None = None

    def __post_init__(self) -> None:
        if self.sample_rate is not None and self.dataset_size is not None:
            raise ValueError(f"Give `sample_rate` or `dataset_size` (q = expected_batch_size / "
                             f"dataset_size), not both. Found sample_rate={self.sample_rate!r}, "
                             f"dataset_size={self.dataset_size!r}.")
        if self.expected_batch_size is not None:
            object.__setattr__(self, "expected_batch_size", check_positive_float(
                self.expected_batch_size, "expected_batch_size"))
        if self.sample_rate is not None:
            object.__setattr__(self, "sample_rate",
                               check_sample_rate(self.sample_rate, "sample_rate"))
        elif self.dataset_size is not None:
            object.__setattr__(self, "dataset_size",
                               check_positive_int(self.dataset_size, "dataset_size"))
        object.__setattr__(self, "epochs", check_positive_float(self.epochs, "epochs"))


@dataclasses.dataclass(frozen=True)
class ClipSpec:
    r"""The clip mode and everything it reads.

    Args:
        max_grad_norm: ``None`` (make_private chooses:
            :func:`~pennylane_qshiftdp.default_clip_mode`, or ``"certified"`` with
            ``strict``), one of :data:`CLIP_MODES`, or a positive float C (fixed DP-SGD
            clipping; units of the gradient's L2 norm).
        classical_max_grad_norm: the clip norm C_cl > 0 of the classical parameters of a
            hybrid model under ``"certified"`` (per-layer clipping), or ``None``; refused by
            ``"calibrated"`` and ``"automatic"``.
        loss: the :class:`~pennylane_qshiftdp.losses.BoundedLoss` whose gradient bound enters
            Δ, or ``None`` (a linear loss, with a warning under ``"certified"``).
        strict: refuse a model the certified bound does not cover (and make ``"certified"``
            the default clip).
        adaptive_clipping: the settings of ``"adaptive"`` (a dict), or ``None``.
        input_range: ``(low, high)`` bounding every input feature (``"public"``; the
            synthetic inputs of ``"calibrated"``), or ``None``.
        jacobian_bound: passed to :func:`~pennylane_qshiftdp.sensitivity`, or ``None``.
        criterion: ``(outputs, targets) -> loss`` the loop back-propagates (probed for
            coupling; the calibration's loss), or ``None``.
        chosen_by_default: ``True`` when ``max_grad_norm`` was chosen by make_private (the
            statement says so).

    Raises:
        ValueError: if ``max_grad_norm`` is an unknown string or not positive.
        TypeError: if ``max_grad_norm`` is neither a string, a real number nor ``None``.

    Source:
        the clip-mode check of :func:`~pennylane_qshiftdp.make_private` (issue 46).
    """

    max_grad_norm: float | str | None = None
    classical_max_grad_norm: float | None = None
    loss: BoundedLoss | None = None
    strict: bool = False
    adaptive_clipping: dict | None = None
    input_range: tuple[float, float] | None = None
    jacobian_bound: Any = None
    criterion: Callable | None = None
    chosen_by_default: bool = False

    def __post_init__(self) -> None:
        mode = self.max_grad_norm
        if isinstance(mode, str):
            if mode not in CLIP_MODES:
                raise ValueError(f"`max_grad_norm` must be one of {CLIP_MODES} or a positive "
                                 f"float. Found {mode!r}.")
        elif mode is not None:
            check_positive_float(mode, "max_grad_norm")


@dataclasses.dataclass(frozen=True)
class CreditSpec:
    r"""The shot-noise credit (``"certified"`` clipping only) and the shot budget.

    Args:
        credit: one of :data:`~pennylane_qshiftdp.CREDIT_MODES` (``"none"`` by default); an
            unknown mode is refused, with the list, when the model is checked.
        beta: failure probability β: in (0, 1) for ``"adaptive"`` and ``"isotropic"``,
            exactly 0 otherwise.
        variance_floor: lower bound v_min ≥ 0 on every circuit's single-shot variance (in
            units of the observable squared); checked against the observables later.
        variance_floor_source: ``"proven"`` (from :func:`qprldp_core.certify_device`) or
            ``"declared"``.
        proven_epsilon_factor: κ > 1 (finite): with a credit the added noise alone gives ε =
            κ × target (nats).
        recorder: the :class:`~pennylane_qshiftdp.ShotRecorder` attached to the QNode
            (needed by a credit), or ``None``.
        shot_budget: shots per step for the parameter-shift circuits, or ``None`` (each
            circuit has its QNode's shots).

    Raises:
        ValueError: if β or κ is out of range for the mode, or the source is unknown.
        TypeError: if β is not a real number.

    Source:
        the credit checks of :func:`~pennylane_qshiftdp.make_private` (docs/noise.md).
    """

    credit: str = "none"
    beta: float = 0.0
    variance_floor: float = 0.0
    variance_floor_source: str = "declared"
    proven_epsilon_factor: float = DEFAULT_PROVEN_EPSILON_FACTOR
    recorder: ShotRecorder | None = None
    shot_budget: int | None = None

    def __post_init__(self) -> None:
        credit, factor = self.credit, self.proven_epsilon_factor
        if credit in CREDIT_MODES:  # an unknown mode is refused, with the list, further on
            check_beta(self.beta, "beta", required=credit in ("adaptive", "isotropic"))
        if credit != "none" and not (isinstance(factor, (int, float)) and math.isfinite(factor)
                                     and factor > 1.0):
            raise ValueError(
                f"`proven_epsilon_factor` must be a finite number above 1 (the proven ε may "
                f"exceed the target by at most this factor when shot noise is credited). Found "
                f"{factor!r}."
            )
        if self.variance_floor_source not in ("proven", "declared"):
            raise ValueError(f"`variance_floor_source` must be 'proven' or 'declared'. Found "
                             f"{self.variance_floor_source!r}.")


@dataclasses.dataclass(frozen=True)
class RandomnessSpec:
    r"""Where the DP noise and the Poisson sampling draw their randomness.

    Args:
        seed: an integer seeding Poisson sampling and the DP noise (repeatable research runs;
            NOT for a real release), or ``None`` (seeded from the OS).
        secure_mode: draw the DP noise from the OS's CSPRNG (refuses ``seed``).

    Raises:
        ValueError: if ``secure_mode`` is given with a ``seed``.

    Source:
        the randomness check of :func:`~pennylane_qshiftdp.make_private`.
    """

    seed: int | None = None
    secure_mode: bool = False

    def __post_init__(self) -> None:
        if self.secure_mode and self.seed is not None:
            raise ValueError("secure_mode draws DP noise from the OS's CSPRNG and refuses "
                             "`seed`.")
