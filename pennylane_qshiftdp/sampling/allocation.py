r"""A per-example shot budget split over the parameter-shift circuits, shots ∝ |coefficient|.

The parameter-shift estimate of :math:`\partial f/\partial\varphi_i` is
:math:`\hat g_i = \sum_t c_{it}\hat\mu_t`, with :math:`\hat\mu_t` the mean of :math:`N_t`
shots of shifted circuit :math:`t`, so :math:`\mathrm{Var}\,\hat g_i = \sum_t c_{it}^2 v_t/N_t`
(:math:`v_t` the single-shot variance). At a fixed total :math:`\sum_t N_t = S` this is smallest
for :math:`N_t \propto |c_{it}|\sqrt{v_t}` (minimise :math:`\sum_t a_t/N_t` subject to
:math:`\sum_t N_t = S`: the Lagrange condition :math:`a_t/N_t^2 = \lambda` gives
:math:`N_t = S\sqrt{a_t}/\sum_s\sqrt{a_s}`; derived here). The :math:`v_t` are unknown before
the circuits run and depend on the data, so they are taken equal: :math:`N_t \propto |c_t|`
with :math:`|c_t| = \max_i |c_{it}|` (PennyLane gives each shifted circuit to one parameter).
For PennyLane's two-term rules every :math:`|c_t|` is :math:`1/2` and the split is even; the
four-term rules of the controlled rotations give their outer shifts about 5.8 times fewer
shots than their inner ones. (PennyLane's own ``param_shift`` gives every circuit the QNode's
shots; pennylane#3227 proposed this split and was closed unmerged.)

The split depends on the circuit's structure and the public budget only, never on the data.
The certified bound :math:`\Delta` does not change (it holds for every shot outcome at any
:math:`N_t`); a shot-noise credit computes each circuit's variance with its own :math:`N_t`.

How it is switched on: :func:`set_shot_budget` on a QNode, a TorchLayer or a module holding
TorchLayers (``make_private(shot_budget=...)`` sets it from a per-step budget); it applies to the
per-example evaluation of :class:`~pennylane_qshiftdp.qnn.TorchLayer`. The forward circuit keeps
the QNode's own shots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pennylane as qml
from numpy.typing import ArrayLike

from ..gradients.parameter_shift import param_shift

if TYPE_CHECKING:
    import torch

__all__ = ["set_shot_budget", "set_step_shot_budget", "shot_budget", "split_shots"]

# Attribute of a QNode holding its per-example shot budget of the shifted circuits.
_BUDGET_ATTR = "_qshiftdp_shot_budget"


def split_shots(budget: int, weights: ArrayLike) -> np.ndarray:
    r"""Split ``budget`` shots over circuits in proportion to ``weights``, rounding down.

    .. math::

        N_t = \lfloor S\, w_t / W\rfloor,\qquad W = \sum_t w_t,

    so :math:`\sum_t N_t \le S` (the remainder, less than one shot per circuit, is not spent)
    and circuits of equal weight get equal shots (they then share one device batch).

    Args:
        budget: total shots :math:`S \ge 1`.
        weights: :math:`w_t > 0`, one per circuit (the absolute shift coefficients).

    Returns:
        np.ndarray: the integer shots :math:`N_t \ge 1` (int64).

    Raises:
        ValueError: for a non-positive ``budget``, an empty or non-positive ``weights``, or a
            budget too small to give every circuit a shot (the message gives the smallest one).
        TypeError: for a non-integer ``budget``.

    Example:
        >>> split_shots(100, [0.5, 0.5, 0.5, 0.5]).tolist()
        [25, 25, 25, 25]
        >>> split_shots(100, [0.427, 0.427, 0.073, 0.073]).tolist()
        [42, 42, 7, 7]
    """
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)):
        raise TypeError(f"`budget` must be an integer number of shots. Found {budget!r}.")
    if budget < 1:
        raise ValueError(f"`budget` must be at least 1. Found {budget}.")
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"`weights` must be positive and finite, one per circuit. Found "
                         f"{w.tolist()}.")
    # a share within 1e-9 of an integer is that integer (205 · 0.01 / 0.01 = 204.99999...)
    shots = np.floor(budget * w / w.sum() + 1e-9).astype(np.int64)
    if np.any(shots < 1):
        smallest = int(np.ceil(w.sum() / w.min()))
        raise ValueError(
            f"`budget` = {budget} shots cannot give each of the {w.size} circuits a shot in "
            f"proportion to their coefficients (the smallest share is "
            f"{budget * w.min() / w.sum():.3g} shots); use at least {smallest}.")
    return shots


def _check_budget(shots_per_example) -> int | None:
    if shots_per_example is None:
        return None
    if isinstance(shots_per_example, bool) or not isinstance(shots_per_example,
                                                             (int, np.integer)):
        raise TypeError(f"`shots_per_example` must be a positive integer or None. Found "
                        f"{shots_per_example!r}.")
    if shots_per_example < 1:
        raise ValueError(f"`shots_per_example` must be a positive integer or None. Found "
                         f"{shots_per_example}.")
    return int(shots_per_example)


def set_shot_budget(target: qml.QNode | torch.nn.Module,
                    shots_per_example: int | None) -> list[qml.QNode]:
    r"""Give every example's shifted circuits ``shots_per_example`` shots in all, split
    ∝ |shift coefficient| (:func:`split_shots`); ``None`` gives each the QNode's shots again.

    The forward circuit keeps the QNode's shots. Applies to the per-example evaluation of
    :class:`~pennylane_qshiftdp.qnn.TorchLayer` with finite shots (device or exact-law
    sampling); circuits with different shots go to the device in one batch per shot count.

    Args:
        target: a QNode using :func:`~pennylane_qshiftdp.param_shift`, a TorchLayer of one, or
            a ``torch.nn.Module`` containing such TorchLayers (all are set).
        shots_per_example: the shots of one example's shifted circuits together (≥ 1), or
            ``None``.

    Returns:
        list: the QNodes whose budget was set.

    Raises:
        ValueError: for a non-positive budget, a module without TorchLayer, a QNode whose
            diff method is not the private transform, or an analytic QNode (``shots=None``).
        TypeError: for a ``target`` or budget of the wrong type.

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.set_shots(qml.QNode(lambda inputs, w: qml.expval(qml.Z(0)), dev,
        ...                              diff_method=param_shift), shots=100)
        >>> [shot_budget(q) for q in set_shot_budget(qn, 400)]
        [400]
    """
    from .modes import qnodes_of

    budget = _check_budget(shots_per_example)
    qnodes = qnodes_of(target)
    for qnode in qnodes:
        if qnode.diff_method is not param_shift:
            name = getattr(qnode.diff_method, "__name__", qnode.diff_method)
            raise ValueError(f"A shot budget applies to QNodes differentiated by "
                             f"pennylane_qshiftdp.param_shift. Found diff_method={name!r}.")
        if budget is not None and not qnode.shots:
            raise ValueError("A shot budget splits finite shots over the shifted circuits; "
                             "the QNode is analytic (shots=None). Set finite shots first.")
    for qnode in qnodes:
        setattr(qnode, _BUDGET_ATTR, budget)
    return qnodes


def shot_budget(qnode: qml.QNode) -> int | None:
    """The per-example shot budget of ``qnode``'s shifted circuits, or ``None`` (each has the
    QNode's shots).

    Example:
        >>> import pennylane as qml
        >>> shot_budget(qml.QNode(lambda: qml.expval(qml.Z(0)), qml.device("default.qubit")))
    """
    return getattr(qnode, _BUDGET_ATTR, None)


def set_step_shot_budget(target: qml.QNode | torch.nn.Module, shots_per_step: int, *,
                         expected_batch_size: float) -> int:
    r"""Split a per-step budget of the shifted circuits' shots over the expected batch.

    Each of the :math:`L` quantum layers of ``target`` gets
    :math:`\lfloor S / (L \bar B)\rfloor` shots per example (:func:`set_shot_budget`), with
    :math:`\bar B = qN` the *expected* batch size: a divisor that depends on the realised
    Poisson batch would make one example's shots, and so its gradient's law, depend on the
    other examples in the batch. A step of :math:`B` examples then spends about
    :math:`S B/\bar B` shots on its shifted circuits (:math:`S` on average).

    Args:
        target: a QNode, a TorchLayer or a module holding TorchLayers (as
            :func:`set_shot_budget`).
        shots_per_step: :math:`S \ge 1`.
        expected_batch_size: :math:`\bar B > 0` (public: the loader's expected batch).

    Returns:
        int: the shots per example and layer.

    Raises:
        ValueError: for a budget below one shot per example and layer, or as
            :func:`set_shot_budget`.
        TypeError: as :func:`set_shot_budget`.

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.set_shots(qml.QNode(lambda inputs, w: qml.expval(qml.Z(0)), dev,
        ...                              diff_method=param_shift), shots=100)
        >>> set_step_shot_budget(qn, 10_000, expected_batch_size=20.5)
        487
    """
    from .modes import qnodes_of

    budget = _check_budget(shots_per_step)
    if budget is None:
        raise TypeError("`shots_per_step` must be a positive integer. Found None.")
    expected = float(expected_batch_size)
    if not (expected > 0 and np.isfinite(expected)):
        raise ValueError(f"`expected_batch_size` must be positive and finite. Found "
                         f"{expected_batch_size!r}.")
    layers = len(qnodes_of(target))
    per_example = int(np.floor(budget / (layers * expected)))
    if per_example < 1:
        raise ValueError(
            f"`shots_per_step` = {budget} is less than one shot per example and quantum layer "
            f"({layers} layer(s), expected batch {expected:g}); use at least "
            f"{int(np.ceil(layers * expected))}.")
    set_shot_budget(target, per_example)
    return per_example
