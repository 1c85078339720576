r"""PennyLane's shifted tapes for the private transform, and the coefficients of its rules.

:func:`pennylane_tapes` calls :func:`pennylane.gradients.param_shift` itself (no
finite-difference fallback: a gate without a shift rule is refused, since its gradient has no
a-priori bound); :func:`shift_rule_coefficients` reads the linear map :math:`c_{it}` from
shifted-circuit results to the gradient off PennyLane's processing function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pennylane as qml

from .. import _compat
from .observables import TRANSFORM_NAME, check_measurements

__all__ = ["shift_rule_coefficients"]


def _extract_param_rows(out, tape) -> np.ndarray:
    """Navigate param_shift's output structure to the (num_params, P) probe matrix."""
    if tape.shots.has_partitioned_shots:
        out = out[0]
    if len(tape.measurements) > 1:
        out = out[0]
    if len(tape.trainable_params) == 1:
        return np.atleast_2d(np.asarray(out, dtype=float))
    return np.stack([np.asarray(o, dtype=float) for o in out])


def _probe_result(one_hot, tape):
    res = one_hot if len(tape.measurements) == 1 else tuple(one_hot for _ in tape.measurements)
    if tape.shots.has_partitioned_shots:
        res = tuple(res for _ in range(tape.shots.num_copies))
    return res


def coefficient_matrix(fn, tape, num_tapes) -> np.ndarray:
    """The linear map from shifted-circuit results to the gradient, ``C[i, t]``.

    ``param_shift``'s processing function is linear in the expectation values, acts the same
    way on every measurement, shot copy and batch element, and maps an extra trailing axis
    through unchanged; feeding it the identity along that axis returns ``C`` exactly.
    """
    eye = np.eye(num_tapes)
    out = fn([_probe_result(eye[t], tape) for t in range(num_tapes)])
    return _extract_param_rows(out, tape)


def shift_rule_coefficients(tape: qml.tape.QuantumScript, **gradient_kwargs: Any) -> np.ndarray:
    r"""Coefficients :math:`c_{it}` of the parameter-shift rule that :func:`param_shift` applies.

    The gradient of every expectation value with respect to trainable tape parameter
    :math:`\varphi_i` is :math:`\sum_t c_{it} \langle O\rangle_t` over the shifted tapes
    :math:`t`; rows of parameters outside the observables' light cone are zero.

    Args:
        tape: a :class:`~pennylane.tape.QuantumScript` with ``expval`` or ``probs``
            measurements (already expanded to gates with shift rules).
        **gradient_kwargs: ``argnum``, ``shifts``, ``gradient_recipes``, ``f0``, as for
            :func:`pennylane.gradients.param_shift`.

    Returns:
        np.ndarray: ``C`` of shape ``(num_trainable_params, num_shifted_tapes)``.

    Raises:
        ValueError: if a trainable gate has no shift rule.

    Example:
        >>> tape = qml.tape.QuantumScript([qml.RX(0.3, 0)], [qml.expval(qml.Z(0))])
        >>> shift_rule_coefficients(tape)
        array([[ 0.5, -0.5]])
    """
    tapes, fn = pennylane_tapes(tape, **gradient_kwargs)
    if not tapes:
        return np.zeros((len(tape.trainable_params), 0))
    return coefficient_matrix(fn, tape, len(tapes))


def pennylane_tapes(tape, argnum=None, shifts=None, gradient_recipes=None, f0=None,
                     broadcast=False):
    check_measurements(tape)
    try:
        return qml.gradients.param_shift(
            tape,
            argnum=argnum,
            shifts=shifts,
            gradient_recipes=gradient_recipes,
            fallback_fn=None,
            f0=f0,
            broadcast=broadcast,
        )
    except (ValueError, qml.exceptions.OperatorPropertyUndefined) as err:
        if "differentiate" not in str(err) and "shift rule" not in str(err):
            raise
        gates = [
            f"{op.name}(wires={op.wires.tolist()})"
            for op in tape.operations
            if op.grad_method != "A" and any(qml.math.requires_grad(d) for d in op.data)
        ]
        what = (f"the gate(s) {', '.join(gates)} have none and no decomposition into gates "
                f"that do" if gates else f"PennyLane reports: {str(err).rstrip('.')}")
        raise ValueError(
            f"{TRANSFORM_NAME} needs a parameter-shift rule for every trainable gate; {what}. "
            f"Such a gradient has no a-priori bound, so it cannot be privatised without "
            f"clipping."
        ) from err


def expand_tape(tape, argnum=None, shifts=None, gradient_recipes=None, fallback_fn=None, f0=None,
            broadcast=False, recorder=None):
    """Expand step: PennyLane's own for ``param_shift`` (extra kwargs ignored)."""
    del fallback_fn, recorder
    return _compat.expand_transform_param_shift(
        tape, argnum=argnum, shifts=shifts, gradient_recipes=gradient_recipes, f0=f0,
        broadcast=broadcast,
    )
