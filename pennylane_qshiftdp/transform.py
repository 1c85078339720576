r"""The private parameter-shift gradient transform (PennyLane glue).

:func:`param_shift` is a drop-in replacement for :func:`pennylane.gradients.param_shift`:
it generates exactly PennyLane's shifted tapes (same shift rules, same order, same light-cone
pruning) and post-processes them with PennyLane's own processing function, so with the same
device seed its gradient is PennyLane's. When a :class:`~.ShotRecorder` is attached, it also
records, for every shifted circuit, the :class:`~.ShotStatistics` that Q-ShiftDP's shot-noise
credit needs (arXiv:2602.02962).

How the statistics are obtained (derived here, see ``docs/transform.md``):

* Observables with at most two eigenvalues (every Pauli word, scaled or shifted, projectors):
  the single-shot values are two-valued, so variance and fourth moment are functions of the
  sample mean (:func:`~.two_point_moments`). The tapes are not changed.
* Pauli sums / Hamiltonians and other observables with more eigenvalues: the measurement
  ``expval(H)`` with :math:`H = \sum_j c_j O_j` is replaced by ``sample(O_j)`` for each term,
  the same terms the device would sample to estimate :math:`\langle H\rangle`. The estimator
  :math:`\sum_j c_j \bar x_j = \frac{1}{N_s}\sum_s h_s` with :math:`h_s = \sum_j c_j x_{js}` is
  the mean of i.i.d. single-shot values :math:`h_s` whether or not the device sampled the terms
  jointly, so the moments of :math:`h_s` are exactly those of the estimator. On default.qubit and
  lightning.qubit a tape with the Hamiltonian as its only measurement draws the same samples
  as ``expval(H)`` would (tested); the returned expectation is recomputed from the samples.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pennylane as qml
from pennylane.measurements import ExpectationMP, ProbabilityMP, VarianceMP
from pennylane.pauli import PauliWord

from . import _compat
from .exceptions import UnsupportedMeasurementError
from .shot_statistics import (
    ShotRecorder,
    ShotStatistics,
    active_recorder,
    sample_moments,
    two_point_moments,
)

__all__ = ["param_shift", "observable_range", "validate_shots", "shift_rule_coefficients"]

_TRANSFORM_NAME = "pennylane_qshiftdp.param_shift"
# Tolerance for treating two eigenvalues as equal when classifying an observable.
_EIGVAL_ATOL = 1e-10


# --------------------------------------------------------------------------------------------
# Observables
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _ObservablePlan:
    """How one ``expval`` measurement is estimated and recorded."""

    kind: str  # "two_point" (keep expval) or "samples" (replace by sample(term) per term)
    lo: float  # smallest possible value of the shot estimator
    hi: float  # largest possible value of the shot estimator
    terms: tuple = ()  # observables to sample ("samples" only)
    coeffs: tuple = ()  # multiplier of each sampled term ("samples" only)


def _real(x) -> float:
    x = complex(qml.math.toarray(x))
    return x.real


def _eigen_range(obs) -> tuple[np.ndarray, float, float]:
    eig = np.real_if_close(np.asarray(qml.eigvals(obs)))
    eig = np.unique(np.round(np.real(eig), 12))
    return eig, float(eig.min()), float(eig.max())


def _plan_for(obs) -> _ObservablePlan:
    pauli_rep = obs.pauli_rep
    if pauli_rep is not None:
        identity = PauliWord({})
        c0 = _real(pauli_rep.get(identity, 0.0))
        others = [_real(c) for w, c in pauli_rep.items() if w != identity]
        spread = float(sum(abs(c) for c in others))
        if len(others) <= 1:
            return _ObservablePlan("two_point", c0 - spread, c0 + spread)
    if isinstance(obs, qml.ops.Sum):
        if isinstance(obs, qml.ops.LinearCombination):
            coeffs, terms = obs.terms()
            coeffs = tuple(_real(c) for c in coeffs)
        else:
            terms, coeffs = tuple(obs.operands), (1.0,) * len(obs.operands)
        lo = hi = 0.0
        for c, term in zip(coeffs, terms, strict=True):
            _, t_lo, t_hi = _eigen_range(term)
            lo += min(c * t_lo, c * t_hi)
            hi += max(c * t_lo, c * t_hi)
        return _ObservablePlan("samples", lo, hi, tuple(terms), coeffs)
    eig, lo, hi = _eigen_range(obs)
    if eig.size <= 2 or np.ptp(eig) < _EIGVAL_ATOL:
        return _ObservablePlan("two_point", lo, hi)
    return _ObservablePlan("samples", lo, hi, (obs,), (1.0,))


def observable_range(obs) -> tuple[float, float]:
    r"""Range :math:`[\lambda_-, \lambda_+]` of each shot estimate of :math:`\langle O\rangle`.

    For a single observable this is its smallest and largest eigenvalue. For a sum
    :math:`H = c_0 I + \sum_j c_j O_j` that devices estimate term by term, the estimator
    :math:`c_0 + \sum_j c_j \bar x_j` can reach :math:`c_0 \pm \sum_j |c_j|\,\|O_j\|`, which may
    exceed the spectrum of :math:`H` (``X + Z`` has eigenvalues :math:`\pm\sqrt 2` but estimates
    in :math:`[-2, 2]`); the wider range is the one that bounds the released gradient.

    Args:
        obs: a PennyLane observable.

    Returns:
        tuple[float, float]: ``(lam_min, lam_max)`` in the observable's units.

    Raises:
        TypeError: if ``obs`` is not a PennyLane operator.

    References:
        Derived here (``docs/transform.md``, "Estimator range").

    Example:
        >>> observable_range(qml.Z(0))
        (-1.0, 1.0)
        >>> observable_range(qml.X(0) + qml.Z(0))
        (-2.0, 2.0)
        >>> observable_range(qml.Hamiltonian([0.5, 2.0], [qml.Identity(0), qml.Z(0) @ qml.Z(1)]))
        (-1.5, 2.5)
    """
    if not isinstance(obs, qml.operation.Operator):
        raise TypeError(f"`obs` must be a PennyLane observable. Found {type(obs).__name__}.")
    plan = _plan_for(obs)
    return plan.lo, plan.hi


def validate_shots(shots) -> qml.measurements.Shots:
    """Check that ``shots`` is ``None`` or made of positive integers; return :class:`Shots`.

    Args:
        shots: ``None``, a positive int, a ``(shots, copies)`` pair or a sequence of these.

    Returns:
        pennylane.measurements.Shots: the normalised shot specification.

    Raises:
        ValueError: if ``shots`` is not a positive integer (or a shot vector of them).

    Example:
        >>> validate_shots([(100, 2), 500]).total_shots
        700
    """
    if isinstance(shots, qml.measurements.Shots):
        return shots

    def _bad(x):
        return isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1

    items = shots if isinstance(shots, (list, tuple)) else [shots]
    if shots is not None:
        for item in items:
            parts = item if isinstance(item, (list, tuple)) else (item,)
            if len(parts) not in (1, 2) or any(_bad(x) for x in parts):
                raise ValueError(
                    f"`shots` must be None, a positive integer, a (shots, copies) pair of "
                    f"positive integers or a sequence of these. Found {shots!r}."
                )
    return qml.measurements.Shots(shots)


# Largest number of wires for which a variance's observable is squared as a matrix.
_MAX_SQUARE_WIRES = 8


def _squares_to_scalar(obs) -> bool:
    """Whether ``obs @ obs`` is a multiple of the identity (then ∂⟨A²⟩ = 0)."""
    pauli_rep = obs.pauli_rep
    if pauli_rep is not None:
        square = pauli_rep @ pauli_rep
        square.simplify()
        identity = PauliWord({})
        return all(w == identity or abs(c) < _EIGVAL_ATOL for w, c in square.items())
    if len(obs.wires) > _MAX_SQUARE_WIRES:
        return False
    m = np.asarray(qml.matrix(obs))
    m2 = m @ m
    return bool(np.allclose(m2, m2[0, 0] * np.eye(len(m2)), atol=_EIGVAL_ATOL))


def _variance_rule_is_exact(obs) -> bool:
    r"""Whether PennyLane's variance rule is right for ``obs``.

    ``param_shift`` differentiates :math:`\mathrm{Var} A = \langle A^2\rangle -
    \langle A\rangle^2` with :math:`\partial\langle A^2\rangle` measured only for
    ``Hermitian``, ``SparseHamiltonian`` and ``Projector`` observables (or tensor products
    containing them, squared factor by factor) and set to 0 for every other observable, which
    is right only when :math:`A^2` is a multiple of the identity (Pauli words, scaled or not).
    PennyLane 0.45 also sets it to 0 for sums such as ``0.7 Z(0) + 0.4 X(1)`` (wrong by up to
    the full gradient of :math:`\langle A^2\rangle`); those are refused.
    """
    squared = qml.gradients.parameter_shift.NONINVOLUTORY_OBS
    if obs.name in squared:
        return True
    if isinstance(obs, qml.ops.Prod) and any(o.name in squared for o in obs):
        factors = list(obs)
        disjoint = sum(len(o.wires) for o in factors) == len(obs.wires)
        return disjoint and all(o.name in squared or _squares_to_scalar(o) for o in factors)
    return _squares_to_scalar(obs)


def _check_measurements(tape) -> None:
    for mp in tape.measurements:
        if not isinstance(mp, (ExpectationMP, VarianceMP, ProbabilityMP)):
            raise UnsupportedMeasurementError(
                f"{_TRANSFORM_NAME} cannot differentiate `{mp}`: only expval, var and probs "
                f"returns have a parameter-shift gradient (sample, counts and state do not)."
            )
        if isinstance(mp, VarianceMP) and mp.obs is not None and not _variance_rule_is_exact(
                mp.obs):
            raise UnsupportedMeasurementError(
                f"{_TRANSFORM_NAME} cannot differentiate `{mp}`: PennyLane's variance rule "
                f"treats {mp.obs} as squaring to a multiple of the identity, which it does "
                f"not, so the gradient would be wrong. Supported: var of a Pauli word (scaled "
                f"or not) or of a qml.Hermitian / qml.Projector observable "
                f"(qml.Hermitian(qml.matrix(obs), wires=obs.wires) for this one), or expval of "
                f"any observable."
            )


# --------------------------------------------------------------------------------------------
# Shift-rule coefficients
# --------------------------------------------------------------------------------------------


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


def _coefficient_matrix(fn, tape, num_tapes) -> np.ndarray:
    """The linear map from shifted-circuit results to the gradient, ``C[i, t]``.

    ``param_shift``'s processing function is linear in the expectation values, acts the same
    way on every measurement, shot copy and batch element, and maps an extra trailing axis
    through unchanged; feeding it the identity along that axis returns ``C`` exactly.
    """
    eye = np.eye(num_tapes)
    out = fn([_probe_result(eye[t], tape) for t in range(num_tapes)])
    return _extract_param_rows(out, tape)


def shift_rule_coefficients(tape, **gradient_kwargs) -> np.ndarray:
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
    tapes, fn = _pennylane_tapes(tape, **gradient_kwargs)
    if not tapes:
        return np.zeros((len(tape.trainable_params), 0))
    return _coefficient_matrix(fn, tape, len(tapes))


# --------------------------------------------------------------------------------------------
# The transform
# --------------------------------------------------------------------------------------------


def _pennylane_tapes(tape, argnum=None, shifts=None, gradient_recipes=None, f0=None,
                     broadcast=False):
    _check_measurements(tape)
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
            f"{_TRANSFORM_NAME} needs a parameter-shift rule for every trainable gate; {what}. "
            f"Such a gradient has no a-priori bound, so it cannot be privatised without "
            f"clipping."
        ) from err


def _expand(tape, argnum=None, shifts=None, gradient_recipes=None, fallback_fn=None, f0=None,
            broadcast=False, recorder=None):
    """Expand step: PennyLane's own for ``param_shift`` (extra kwargs ignored)."""
    del fallback_fn, recorder
    return _compat.expand_transform_param_shift(
        tape, argnum=argnum, shifts=shifts, gradient_recipes=gradient_recipes, f0=f0,
        broadcast=broadcast,
    )


def _unnested(rows, tape):
    """List over shot copies of list over measurements -> PennyLane's result structure."""
    per_copy = [row[0] if len(row) == 1 else tuple(row) for row in rows]
    return tuple(per_copy) if tape.shots.has_partitioned_shots else per_copy[0]


def _rewrite(tapes, plans, shots):
    """Replace each non-two-point ``expval`` by ``sample`` of its terms.

    With a shot vector, a tape that samples terms is split into one tape per shot copy: the
    devices estimate ``expval(H)`` copy by copy, so this keeps the same order of random draws.
    Returns the new tapes and the number of tapes each original tape became.
    """
    if all(p.kind == "two_point" for p in plans):
        return list(tapes), 1
    mps = []
    for mp, plan in zip(tapes[0].measurements, plans, strict=True):
        if plan.kind == "two_point":
            mps.append(mp)
        else:
            mps.extend(qml.sample(term) for term in plan.terms)
    if not shots.has_partitioned_shots:
        return [t.copy(measurements=mps) for t in tapes], 1
    copies = [qml.measurements.Shots(int(s)) for s in shots]
    return [t.copy(measurements=mps, shots=c) for t in tapes for c in copies], len(copies)


def _copies_of(results, t, per_tape, shots, num_new):
    """Results of original shifted tape ``t``: list over shot copies of list over measurements."""
    if per_tape > 1:
        copies = results[t * per_tape:(t + 1) * per_tape]
    else:
        copies = results[t] if shots.has_partitioned_shots else (results[t],)
    return [list(c) if num_new > 1 else [c] for c in copies]


def _post_process_recording(results, *, tape, plans, num_tapes, per_tape, fn, recorder):
    """Recover ``expval`` results, record statistics, and return PennyLane's gradient."""
    shots = tape.shots
    copy_shots = [int(s) for s in shots]
    num_new = sum(1 if p.kind == "two_point" else len(p.terms) for p in plans)
    if any(s < 2 for s in copy_shots):
        raise ValueError(
            f"Shot statistics need at least 2 shots per circuit to estimate a variance. "
            f"Found shots={shots}."
        )

    exp_results = []
    stats = []  # stats[t][s][m] = (mean, var, m4), arrays of shape (B,) or ()
    for t in range(num_tapes):
        tape_rows, tape_stats = [], []
        for s, row in enumerate(_copies_of(results, t, per_tape, shots, num_new)):
            out_row, stat_row, k = [], [], 0
            for plan in plans:
                if plan.kind == "two_point":
                    value = row[k]
                    mean = np.asarray(qml.math.toarray(value), dtype=float)
                    var, m4 = two_point_moments(mean, copy_shots[s], plan.lo, plan.hi)
                    k += 1
                else:
                    samples = [np.asarray(qml.math.toarray(x), dtype=float)
                               for x in row[k:k + len(plan.terms)]]
                    k += len(plan.terms)
                    # Same arithmetic as the devices' expval of a sum: sum of term means.
                    value = sum(c * np.mean(x, axis=-1)
                                for c, x in zip(plan.coeffs, samples, strict=True))
                    per_shot = sum(c * x for c, x in zip(plan.coeffs, samples, strict=True))
                    _, var, m4 = sample_moments(per_shot, axis=-1)
                    mean = np.asarray(value, dtype=float)
                out_row.append(value)
                stat_row.append((mean, var, m4))
            tape_rows.append(out_row)
            tape_stats.append(stat_row)
        exp_results.append(_unnested(tape_rows, tape))
        stats.append(tape_stats)

    grad = fn(exp_results)
    coeffs = _coefficient_matrix(fn, tape, num_tapes)
    _record(recorder, coeffs, stats, copy_shots, len(plans))
    return grad


def _record(recorder, coeffs, stats, copy_shots, num_meas):
    params, tapes = np.nonzero(coeffs)
    cols = {k: [] for k in ("shots", "mean", "variance", "fourth_moment", "coefficient",
                            "trainable_param", "batch_index", "shot_copy", "measurement",
                            "tape_index")}
    for i, t in zip(params.tolist(), tapes.tolist(), strict=True):
        for s, row in enumerate(stats[t]):
            for m in range(num_meas):
                mean, var, m4 = (np.atleast_1d(a) for a in row[m])
                n = mean.size
                cols["shots"].append(np.full(n, copy_shots[s]))
                cols["mean"].append(mean)
                cols["variance"].append(var)
                cols["fourth_moment"].append(m4)
                cols["coefficient"].append(np.full(n, coeffs[i, t]))
                cols["trainable_param"].append(np.full(n, i))
                cols["batch_index"].append(np.arange(n))
                cols["shot_copy"].append(np.full(n, s))
                cols["measurement"].append(np.full(n, m))
                cols["tape_index"].append(np.full(n, t))
    block = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    recorder.add(ShotStatistics(**block))


def _param_shift(tape, argnum=None, shifts=None, gradient_recipes=None, fallback_fn=None,
                 f0=None, broadcast=False, recorder=None):
    if fallback_fn is not None:
        raise NotImplementedError(
            f"{_TRANSFORM_NAME} does not support `fallback_fn` (found {fallback_fn!r}): a "
            f"finite-difference fallback has no a-priori bound on the gradient."
        )
    if recorder is None:
        recorder = active_recorder()
    if recorder is not None and not isinstance(recorder, ShotRecorder):
        raise TypeError(f"`recorder` must be a ShotRecorder. Found {type(recorder).__name__}.")
    validate_shots(tape.shots)

    tapes, fn = _pennylane_tapes(tape, argnum, shifts, gradient_recipes, f0, broadcast)
    if recorder is None or not tapes:
        return tapes, fn

    if not tape.shots:
        raise ValueError(
            "Shot statistics were requested (a ShotRecorder is attached) but the circuit is "
            "analytic (shots=None); set finite shots on the QNode or detach the recorder."
        )
    if broadcast:
        raise NotImplementedError(
            f"{_TRANSFORM_NAME} cannot record shot statistics with broadcast=True (found "
            f"broadcast={broadcast!r}); use broadcast=False."
        )
    unsupported = [mp for mp in tape.measurements if not isinstance(mp, ExpectationMP)]
    if unsupported:
        raise NotImplementedError(
            f"{_TRANSFORM_NAME} records shot statistics for expval measurements only; found "
            f"{unsupported}. Detach the recorder to differentiate var/probs."
        )
    plans = [_plan_for(mp.obs) for mp in tape.measurements]
    shifted, per_tape = _rewrite(tapes, plans, tape.shots)
    post = functools.partial(_post_process_recording, tape=tape, plans=plans,
                             num_tapes=len(tapes), per_tape=per_tape, fn=fn, recorder=recorder)
    return shifted, post


def _the_param_shift():
    """The module's :data:`param_shift` (what a pickled or deep-copied one resolves to)."""
    return param_shift


class _ParamShiftTransform(qml.transforms.core.Transform):
    """:class:`pennylane.transforms.core.Transform` that pickles and deep-copies by reference.

    PennyLane's transform objects hold a ``singledispatch`` closure and do not pickle, and a deep
    copy is a new object; a QNode that uses :data:`param_shift` is then neither savable with
    ``torch.save`` nor recognisable after ``copy.deepcopy`` (Opacus clones models both ways).
    Resolving to the one module-level object keeps it a single, recognisable transform.
    """

    def __reduce__(self):
        return (_the_param_shift, ())


param_shift = _ParamShiftTransform(
    _param_shift,
    expand_transform=_expand,
    classical_cotransform=_compat.contract_qjac_with_cjac,
    final_transform=True,
)
param_shift.__doc__ = r"""Parameter-shift gradient that records per-circuit shot statistics.

    A drop-in replacement for :func:`pennylane.gradients.param_shift`: use it as
    ``qml.QNode(f, dev, diff_method=param_shift)`` (torch or autograd), or call it on a QNode
    or tape. It generates PennyLane's shifted tapes and uses PennyLane's shift rules (including
    multi-term rules such as CRX's four-term rule), light-cone pruning, shot vectors and input
    broadcasting; with the same device seed the gradient is PennyLane's, and with
    ``shots=None`` it equals it to float precision.

    .. math::

        \partial_{\varphi_i} \langle O \rangle \approx \hat g_i = \sum_t c_{it}\,\hat\mu_t,
        \qquad \hat\mu_t \in [\lambda_-, \lambda_+],\quad \sum_t c_{it} = 0 .

    Differences from PennyLane's transform, all on the side of a bounded gradient: there is
    no finite-difference fallback (a gate with no shift rule raises), and ``sample``,
    ``counts`` and ``state`` returns raise :class:`~.UnsupportedMeasurementError`.

    Args:
        tape: the circuit (QNode or tape).
        argnum: trainable parameter indices to differentiate (as in PennyLane).
        shifts: custom shift values per trainable parameter (as in PennyLane).
        gradient_recipes: custom gradient recipes (as in PennyLane).
        fallback_fn: must be ``None`` (accepted for signature compatibility).
        f0: the unshifted result, if known (as in PennyLane).
        broadcast: broadcast over shifts (as in PennyLane; not with a recorder).
        recorder: a :class:`~.ShotRecorder` receiving one :class:`~.ShotStatistics` block per
            gradient call (alternatively, activate the recorder with ``with recorder:``).

    Returns:
        The gradient tapes and processing function (as any PennyLane gradient transform).

    Raises:
        UnsupportedMeasurementError: for ``sample``, ``counts`` or ``state`` returns.
        ValueError: for a trainable gate without a shift rule, shots that are not positive
            integers, or recording with ``shots=None`` or fewer than 2 shots.
        NotImplementedError: for ``fallback_fn``, or recording ``var``/``probs`` or with
            ``broadcast=True``.

    References:
        Schuld et al., arXiv:1811.11184; Wierichs et al., arXiv:2107.12390 (general shift
        rules); Ngo et al., arXiv:2602.02962 (Q-ShiftDP).

    Example:
        >>> from pennylane import numpy as pnp
        >>> dev = qml.device("default.qubit")
        >>> @qml.qnode(dev, diff_method=param_shift)
        ... def circuit(theta):
        ...     qml.Hadamard(0)
        ...     qml.CRX(theta, wires=[0, 1])
        ...     return qml.expval(qml.X(0))
        >>> round(float(qml.grad(circuit)(pnp.array(0.5, requires_grad=True))), 7)
        -0.123702
    """
