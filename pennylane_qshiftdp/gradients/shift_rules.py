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

__all__ = ["check_differentiable", "check_rebindable", "shift_rule_coefficients"]


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


def _is_complex(value) -> bool:
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(dtype, "is_complex"):  # a torch dtype
        return bool(dtype.is_complex)
    return bool(np.iscomplexobj(value))


def check_differentiable(tape: qml.tape.QuantumScript, indices=None) -> None:
    """Refuse tape parameters that a parameter-shift rule cannot differentiate, naming the
    operation and what works instead.

    A parameter-shift rule differentiates a *real* gate parameter by re-running the circuit
    with that parameter moved. PennyLane's ``param_shift`` returns 0 for a complex parameter
    (``qml.exp(P, 1j * w)``), and cannot build shifted circuits of an operation whose
    parameters it cannot rebind (``qml.evolve`` of a Hamiltonian of several terms).

    Args:
        tape: the tape (expanded for the transform).
        indices: the tape parameters that will be differentiated (default: the trainable
            ones).

    Raises:
        NotImplementedError: for a complex parameter or an operation whose parameters cannot
            be rebound.
    """
    indices = tape.trainable_params if indices is None else indices
    num_op_params = sum(len(op.data) for op in tape.operations)
    seen: set[int] = set()
    for i in indices:
        if i >= num_op_params:
            continue  # an observable's parameter (refused elsewhere if trainable)
        info = tape.par_info[i]
        op, value = info["op"], info["op"].data[info["p_idx"]]
        if _is_complex(value):
            raise NotImplementedError(
                f"{TRANSFORM_NAME}: a differentiated parameter of `{op.name}` on wires "
                f"{op.wires.tolist()} is complex ({value!r}); a parameter-shift rule "
                f"differentiates real gate parameters only (PennyLane's param_shift silently "
                f"returns 0 here). Let the weight enter through a real angle: e.g. "
                f"exp(i·w·P) for a Pauli word P is qml.PauliRot(-2 * w, word, wires)."
            )
        if id(op) not in seen:
            seen.add(id(op))
            check_rebindable(op)


def check_rebindable(op) -> None:
    """Refuse an operation whose parameters PennyLane cannot rebind: no shifted circuit of it
    can be built, and PennyLane cannot run it with torch parameters either.

    Raises:
        NotImplementedError: naming the operation and what to write instead.
    """
    try:
        qml.ops.functions.bind_new_parameters(op, list(op.data))
    except Exception as err:  # noqa: BLE001 - PennyLane cannot rebind this operation
        raise NotImplementedError(
            f"{TRANSFORM_NAME}: PennyLane cannot rebind the parameters of `{op.name}` on "
            f"wires {op.wires.tolist()} ({type(err).__name__}: {err}), so no shifted circuit "
            f"of it can be built (nor can PennyLane run it with torch parameters). "
            f"{_instead(op)}"
        ) from err


def _instead(op) -> str:
    """What to write instead of an operation that cannot be shifted."""
    if isinstance(op, qml.ops.op_math.Evolution):
        return ("For a Hamiltonian of several terms write qml.ApproxTimeEvolution(H, t, n) or "
                "qml.TrotterProduct(H, t, n) (PauliRot gates, each with a shift rule), or "
                "qml.evolve of a single Pauli word.")
    return ("Use gates with a parameter-shift rule (PennyLane's rotations, PauliRot, "
            "IsingXX/YY/ZZ, controlled rotations) or a template built from them.")


def _unshiftable(tape, err) -> NotImplementedError:
    """The refusal for a tape on which PennyLane's ``param_shift`` itself fails: the first
    trainable operation on which it fails alone is named."""
    for t_idx in tape.trainable_params:
        op = tape.par_info[t_idx]["op"]
        if not isinstance(op, qml.operation.Operator) or op in tape.observables:
            continue
        single = qml.tape.QuantumScript([op], tape.measurements, shots=tape.shots)
        single.trainable_params = list(range(len(op.data)))
        try:
            qml.gradients.param_shift(single, fallback_fn=None)
        except Exception as inner:  # noqa: BLE001 - this is the operation PennyLane fails on
            return NotImplementedError(
                f"{TRANSFORM_NAME}: PennyLane's param_shift cannot differentiate `{op.name}` on "
                f"wires {op.wires.tolist()} ({type(inner).__name__}: {inner}). {_instead(op)}")
    return NotImplementedError(
        f"{TRANSFORM_NAME}: PennyLane's param_shift failed on this circuit "
        f"({type(err).__name__}: {err}). {_instead(None)}")


def pennylane_tapes(tape, argnum=None, shifts=None, gradient_recipes=None, f0=None,
                     broadcast=False):
    check_measurements(tape)
    check_differentiable(tape)
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
    except (TypeError, IndexError, KeyError, AttributeError, ZeroDivisionError) as err:
        # PennyLane fails inside its own rule for this circuit (e.g. a controlled PauliRot):
        # refuse, naming the operation, rather than surface its internal error.
        raise _unshiftable(tape, err) from err


def expand_tape(tape, argnum=None, shifts=None, gradient_recipes=None, fallback_fn=None, f0=None,
            broadcast=False, recorder=None):
    """Expand step: PennyLane's own for ``param_shift`` (extra kwargs ignored)."""
    del fallback_fn, recorder
    return _compat.expand_transform_param_shift(
        tape, argnum=argnum, shifts=shifts, gradient_recipes=gradient_recipes, f0=f0,
        broadcast=broadcast,
    )
