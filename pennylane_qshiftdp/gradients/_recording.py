r"""Recording shot statistics through the private transform (``docs/transform.md``).

Observables with two eigenvalues keep their ``expval`` tapes: variance and fourth moment follow
from the sample mean (:func:`~.two_point_moments`). Every other ``expval`` is replaced by
``sample`` of its terms (:func:`rewrite_for_recording`), the same terms the device would sample
to estimate it; :func:`post_process_recording` recomputes the expectation values from the
samples, records one :class:`~.ShotStatistics` block and returns PennyLane's gradient.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml

from .shift_rules import coefficient_matrix
from .shot_statistics import ShotStatistics, sample_moments, two_point_moments

__all__: list[str] = []


def _unnested(rows, tape):
    """List over shot copies of list over measurements -> PennyLane's result structure."""
    per_copy = [row[0] if len(row) == 1 else tuple(row) for row in rows]
    return tuple(per_copy) if tape.shots.has_partitioned_shots else per_copy[0]


def rewrite_for_recording(tapes, plans, shots):
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


def post_process_recording(results, *, tape, plans, num_tapes, per_tape, fn, recorder,
                           tape_shots=None):
    """Recover ``expval`` results, record statistics, and return PennyLane's gradient.

    ``tape_shots``: per shifted tape its shots (a shot budget split over the circuits), else
    every tape has ``tape.shots``."""
    shots = tape.shots
    copy_shots = [int(s) for s in shots]
    num_new = sum(1 if p.kind == "two_point" else len(p.terms) for p in plans)
    if tape_shots is not None and shots.has_partitioned_shots:
        raise NotImplementedError("A shot budget does not support shot vectors.")
    tape_copy_shots = ([copy_shots] * num_tapes if tape_shots is None
                       else [[int(n)] for n in tape_shots])
    if any(s < 2 for row in tape_copy_shots for s in row):
        found = shots if tape_shots is None else sorted({int(n) for n in tape_shots})
        raise ValueError(
            f"Shot statistics need at least 2 shots per circuit to estimate a variance. "
            f"Found shots={found}."
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
                    var, m4 = two_point_moments(mean, tape_copy_shots[t][s], plan.lo,
                                                plan.hi)
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
    coeffs = coefficient_matrix(fn, tape, num_tapes)
    _record(recorder, coeffs, stats, tape_copy_shots, len(plans))
    return grad


def _record(recorder, coeffs, stats, tape_copy_shots, num_meas) -> None:
    params, tapes = np.nonzero(coeffs)
    cols: dict[str, list] = {
        k: [] for k in ("shots", "mean", "variance", "fourth_moment", "coefficient",
                        "trainable_param", "batch_index", "shot_copy", "measurement", "tape_index")}
    for i, t in zip(params.tolist(), tapes.tolist(), strict=True):
        for s, row in enumerate(stats[t]):
            for m in range(num_meas):
                mean, var, m4 = (np.atleast_1d(a) for a in row[m])
                n = mean.size
                cols["shots"].append(np.full(n, tape_copy_shots[t][s]))
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
