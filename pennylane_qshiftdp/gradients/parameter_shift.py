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

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pennylane as qml
from pennylane.measurements import ExpectationMP

from .. import _compat
from ._recording import post_process_recording, rewrite_for_recording
from .observables import TRANSFORM_NAME, plan_for
from .shift_rules import expand_tape, pennylane_tapes
from .shot_statistics import ShotRecorder, active_recorder

if TYPE_CHECKING:
    from pennylane.tape import QuantumScript, QuantumScriptBatch
    from pennylane.typing import PostprocessingFn, TensorLike

__all__ = ["param_shift", "validate_shots"]


def validate_shots(shots: int | Sequence[int | tuple[int, int]] | qml.measurements.Shots | None
                   ) -> qml.measurements.Shots:
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


def _param_shift(tape: QuantumScript, argnum: int | Sequence[int] | None = None,
                 shifts: Sequence[Sequence[float]] | None = None,
                 gradient_recipes: Sequence[Sequence[Sequence[float]] | None] | None = None,
                 fallback_fn: Callable[..., Any] | None = None, f0: TensorLike | None = None,
                 broadcast: bool = False, recorder: ShotRecorder | None = None
                 ) -> tuple[QuantumScriptBatch, PostprocessingFn]:
    if fallback_fn is not None:
        raise NotImplementedError(
            f"{TRANSFORM_NAME} does not support `fallback_fn` (found {fallback_fn!r}): a "
            f"finite-difference fallback has no a-priori bound on the gradient."
        )
    if recorder is None:
        recorder = active_recorder()
    if recorder is not None and not isinstance(recorder, ShotRecorder):
        raise TypeError(f"`recorder` must be a ShotRecorder. Found {type(recorder).__name__}.")
    validate_shots(tape.shots)

    tapes, fn = pennylane_tapes(tape, argnum, shifts, gradient_recipes, f0, broadcast)
    if recorder is None or not tapes:
        return tapes, fn

    if not tape.shots:
        raise ValueError(
            "Shot statistics were requested (a ShotRecorder is attached) but the circuit is "
            "analytic (shots=None); set finite shots on the QNode or detach the recorder."
        )
    if broadcast:
        raise NotImplementedError(
            f"{TRANSFORM_NAME} cannot record shot statistics with broadcast=True (found "
            f"broadcast={broadcast!r}); use broadcast=False."
        )
    unsupported = [mp for mp in tape.measurements if not isinstance(mp, ExpectationMP)]
    if unsupported:
        raise NotImplementedError(
            f"{TRANSFORM_NAME} records shot statistics for expval measurements only; found "
            f"{unsupported}. Detach the recorder to differentiate var/probs."
        )
    plans = [plan_for(mp.obs) for mp in tape.measurements]
    shifted, per_tape = rewrite_for_recording(tapes, plans, tape.shots)
    post = functools.partial(post_process_recording, tape=tape, plans=plans,
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
    expand_transform=expand_tape,
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
