r"""Per-circuit shot statistics recorded by :func:`pennylane_qshiftdp.param_shift`.

For every shifted circuit that the parameter-shift transform runs with finite shots, the
recorder stores the number of shots :math:`N_s`, the sample mean :math:`\hat\mu`, the unbiased
sample variance :math:`s^2`, the sample fourth central moment :math:`\hat m_4`, the shift-rule
coefficient :math:`c_{it}` with which the circuit enters the gradient of tape parameter
:math:`\varphi_i`, and which trainable parameter, batch element (input broadcasting), shot copy
(shot vectors) and measurement it belongs to.

The statistics are stored column-wise (one numpy array per field) because a single gradient of
a batch of examples produces thousands of rows.

Definitions (for the :math:`N_s` single-shot values :math:`x_1, \dots, x_{N_s}`):

.. math::

    \hat\mu = \frac{1}{N_s}\sum_s x_s, \qquad
    s^2 = \frac{1}{N_s - 1}\sum_s (x_s - \hat\mu)^2, \qquad
    \hat m_4 = \frac{1}{N_s}\sum_s (x_s - \hat\mu)^4 .

For an observable with two eigenvalues :math:`\lambda_- < \lambda_+` (every Pauli word, possibly
scaled), :math:`x_s \in \{\lambda_-, \lambda_+\}` and with
:math:`\hat p = (\hat\mu - \lambda_-)/(\lambda_+ - \lambda_-)` (derived here, elementary):

.. math::

    s^2 = \frac{N_s}{N_s - 1}(\lambda_+ - \hat\mu)(\hat\mu - \lambda_-), \qquad
    \hat m_4 = \hat p (1 - \hat p)\left[(1 - \hat p)^3 + \hat p^3\right](\lambda_+ - \lambda_-)^4,

so no per-shot samples need to be materialised.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

__all__ = [
    "ShotStatistics",
    "ShotRecorder",
    "two_point_moments",
    "sample_moments",
]

_FIELDS = (
    "shots",
    "mean",
    "variance",
    "fourth_moment",
    "coefficient",
    "trainable_param",
    "batch_index",
    "shot_copy",
    "measurement",
    "tape_index",
)
_INT_FIELDS = frozenset(
    {"shots", "trainable_param", "batch_index", "shot_copy", "measurement", "tape_index"}
)


def two_point_moments(mean, shots, lam_min, lam_max):
    r"""Unbiased variance and fourth central moment of a two-valued sample from its mean.

    Args:
        mean: sample mean(s) :math:`\hat\mu \in [\lambda_-, \lambda_+]`, any shape.
        shots: number of shots :math:`N_s \geq 2`.
        lam_min: smaller eigenvalue :math:`\lambda_-`.
        lam_max: larger eigenvalue :math:`\lambda_+ \geq \lambda_-`.

    Returns:
        tuple[np.ndarray, np.ndarray]: ``(variance, fourth_moment)``, the unbiased sample
        variance :math:`s^2` and the (biased) sample fourth central moment, same shape as
        ``mean``.

    Raises:
        ValueError: if ``shots < 2``.

    References:
        Derived here (module docstring): a two-point distribution is fixed by its mean.

    Example:
        >>> v, m4 = two_point_moments(0.5, 4, -1.0, 1.0)   # samples (+1, +1, +1, -1)
        >>> float(v), float(m4)
        (1.0, 1.3125)
        >>> x = np.array([1.0, 1.0, 1.0, -1.0])
        >>> float(x.var(ddof=1)), float(np.mean((x - x.mean()) ** 4))
        (1.0, 1.3125)
    """
    if shots < 2:
        raise ValueError(f"`shots` must be at least 2 to estimate a variance. Found {shots}.")
    mean = np.asarray(mean, dtype=float)
    width = float(lam_max) - float(lam_min)
    if width == 0.0:
        zero = np.zeros_like(mean)
        return zero, zero.copy()
    # Clamp rounding noise: a sample mean lies in [lam_min, lam_max] exactly.
    mean = np.clip(mean, lam_min, lam_max)
    p = (mean - lam_min) / width
    var_biased = (lam_max - mean) * (mean - lam_min)
    variance = var_biased * (shots / (shots - 1))
    fourth = p * (1.0 - p) * ((1.0 - p) ** 3 + p**3) * width**4
    return variance, fourth


def sample_moments(samples, axis=-1):
    r"""Sample mean, unbiased variance and fourth central moment of raw single-shot values.

    Args:
        samples: array of single-shot values; shots along ``axis`` (at least 2).
        axis: the shot axis.

    Returns:
        tuple[np.ndarray, np.ndarray, np.ndarray]: ``(mean, variance, fourth_moment)`` with the
        shot axis removed.

    Raises:
        ValueError: if fewer than 2 shots are given.

    Example:
        >>> m, v, m4 = sample_moments(np.array([0.0, 1.0, 2.0, 3.0]))
        >>> float(m), round(float(v), 6), float(m4)
        (1.5, 1.666667, 2.5625)
    """
    samples = np.asarray(samples, dtype=float)
    n = samples.shape[axis]
    if n < 2:
        raise ValueError(f"`samples` must hold at least 2 shots along axis {axis}. Found {n}.")
    mean = samples.mean(axis=axis)
    centred = samples - np.expand_dims(mean, axis)
    variance = (centred**2).sum(axis=axis) / (n - 1)
    fourth = (centred**4).mean(axis=axis)
    return mean, variance, fourth


@dataclasses.dataclass(frozen=True)
class ShotStatistics:
    r"""Column-wise shot statistics of shifted circuits (one row per shifted circuit, measurement,
    batch element, shot copy and trainable parameter it enters).

    Attributes:
        shots: :math:`N_s` per row.
        mean: sample mean :math:`\hat\mu` (observable units).
        variance: unbiased sample single-shot variance :math:`s^2`.
        fourth_moment: sample fourth central moment :math:`\hat m_4`.
        coefficient: shift-rule coefficient :math:`c_{it}` of this circuit in
            :math:`\partial_{\varphi_i}`; the gradient estimate is
            :math:`\hat g_i = \sum_t c_{it}\hat\mu_t` (summed over term groups).
        trainable_param: index :math:`i` into the tape's trainable parameters.
        batch_index: batch element (input broadcasting); 0 for an unbroadcast tape.
        shot_copy: index into the shot vector; 0 without a shot vector.
        measurement: index of the measurement in the tape.
        tape_index: index of the shifted circuit among the transform's tapes.
        call: which recorded gradient call these rows came from (set by the recorder).
    """

    shots: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    fourth_moment: np.ndarray
    coefficient: np.ndarray
    trainable_param: np.ndarray
    batch_index: np.ndarray
    shot_copy: np.ndarray
    measurement: np.ndarray
    tape_index: np.ndarray
    # None: zeros (normalised in __post_init__)
    call: np.ndarray = dataclasses.field(default=None)  # type: ignore[arg-type]

    def __post_init__(self):
        n = None
        for name in _FIELDS:
            arr = np.asarray(getattr(self, name), dtype=np.int64 if name in _INT_FIELDS else float)
            arr = arr.reshape(-1)
            if n is None:
                n = arr.size
            elif arr.size != n:
                raise ValueError(
                    f"`{name}` must have {n} entries like `shots`. Found {arr.size}."
                )
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        assert n is not None  # _FIELDS is not empty
        call = np.zeros(n, np.int64) if self.call is None else np.asarray(self.call, np.int64)
        call = np.broadcast_to(call.reshape(-1) if call.ndim else call, (n,)).copy()
        call.setflags(write=False)
        object.__setattr__(self, "call", call)

    def __len__(self) -> int:
        return int(self.shots.size)

    @property
    def mean_variance(self) -> np.ndarray:
        r"""Estimated variance of each sample mean, :math:`s^2 / N_s`."""
        return self.variance / self.shots

    @property
    def variance_of_variance(self) -> np.ndarray:
        r"""Plug-in estimate :math:`\mathrm{Var}(s^2) \approx (\hat m_4 - s^4)/N_s` (floored at 0).

        The leading-order term of the exact expression
        :math:`\mathrm{Var}(s^2) = \mu_4/N - \sigma^4 (N-3)/(N(N-1))`; see e.g.
        Cramér, *Mathematical Methods of Statistics* (1946), §27.4.
        """
        return np.maximum(self.fourth_moment - self.variance**2, 0.0) / self.shots

    def rows(self) -> Iterator[dict]:
        """Iterate over rows as dictionaries (for inspection and tests)."""
        names = (*_FIELDS, "call")
        for k in range(len(self)):
            yield {name: getattr(self, name)[k].item() for name in names}

    def to_records(self) -> list[dict]:
        r"""Plain records: one dict per row, with Python ``int``/``float`` values.

        Keys are the field names (``shots``, ``mean``, ``variance``, ``fourth_moment``,
        ``coefficient``, ``trainable_param``, ``batch_index``, ``shot_copy``, ``measurement``,
        ``tape_index``) and ``call``, the index of the gradient call the row came from. The
        records are JSON-serialisable and load into ``pandas.DataFrame(records)`` directly;
        :meth:`from_records` inverts this exactly.

        Returns:
            A list of ``len(self)`` dicts, in row order.

        Example:
            >>> st = ShotStatistics(shots=[100], mean=[0.5], variance=[0.7575757575757576],
            ...                     fourth_moment=[0.65625], coefficient=[0.5],
            ...                     trainable_param=[0], batch_index=[0], shot_copy=[0],
            ...                     measurement=[0], tape_index=[0])
            >>> st.to_records()[0]["mean"], st.to_records()[0]["call"]
            (0.5, 0)
            >>> ShotStatistics.from_records(st.to_records()).to_records() == st.to_records()
            True
        """
        return list(self.rows())

    def to_dict_of_arrays(self) -> dict[str, np.ndarray]:
        r"""Column form: field name (and ``call``) to a writable copy of its 1-D array.

        ``ShotStatistics(**stats.to_dict_of_arrays())`` rebuilds the same statistics;
        ``numpy.savez(path, **stats.to_dict_of_arrays())`` stores them.

        Returns:
            dict of ``int64`` (counts and indices) and ``float64`` (moments, coefficients)
            arrays of length ``len(self)``.

        Example:
            >>> cols = ShotStatistics.empty().to_dict_of_arrays()
            >>> sorted(cols)[:3], cols["shots"].dtype
            (['batch_index', 'call', 'coefficient'], dtype('int64'))
        """
        return {name: getattr(self, name).copy() for name in (*_FIELDS, "call")}

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]]) -> ShotStatistics:
        """Inverse of :meth:`to_records` (a missing ``call`` key means call 0).

        Args:
            records: iterable of dicts with every field of :meth:`to_records`.

        Returns:
            The :class:`ShotStatistics` with these rows, in order.

        Raises:
            KeyError: if a record lacks a field.
        """
        records = list(records)
        if not records:
            return cls.empty()
        cols = {name: [rec[name] for rec in records] for name in _FIELDS}
        return cls(**{k: np.asarray(v) for k, v in cols.items()},
                   call=np.asarray([rec.get("call", 0) for rec in records]))

    @classmethod
    def empty(cls) -> ShotStatistics:
        """Statistics with no rows."""
        return cls(**{name: np.zeros(0) for name in _FIELDS})

    @classmethod
    def concatenate(cls, parts: Iterable[ShotStatistics]) -> ShotStatistics:
        """Concatenate several :class:`ShotStatistics` (keeps their ``call`` indices)."""
        parts = list(parts)
        if not parts:
            return cls.empty()
        return cls(
            **{n: np.concatenate([getattr(p, n) for p in parts]) for n in (*_FIELDS, "call")}
        )


_ACTIVE_RECORDER: contextvars.ContextVar[ShotRecorder | None] = contextvars.ContextVar(
    "pennylane_qshiftdp_active_recorder", default=None
)


class ShotRecorder:
    r"""Collects :class:`ShotStatistics` from :func:`pennylane_qshiftdp.param_shift`.

    Pass it by reference, either as a gradient keyword argument::

        rec = ShotRecorder()
        qnode = qml.QNode(f, dev, diff_method=qshiftdp.param_shift,
                          gradient_kwargs={"recorder": rec})

    or activate it as a context manager (context-local, thread- and task-safe; never a global)::

        with ShotRecorder() as rec:
            loss.backward()

    Each gradient call appends one :class:`ShotStatistics` block; :attr:`statistics`
    concatenates them. :meth:`clear` empties the recorder (e.g. once per optimizer step).

    Example:
        >>> rec = ShotRecorder()
        >>> len(rec.statistics)
        0
    """

    def __init__(self) -> None:
        self._blocks: list[ShotStatistics] = []
        self._tokens: list[contextvars.Token] = []

    def __enter__(self) -> ShotRecorder:
        self._tokens.append(_ACTIVE_RECORDER.set(self))
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE_RECORDER.reset(self._tokens.pop())

    def add(self, block: ShotStatistics) -> None:
        """Append one gradient call's statistics (called by the transform)."""
        block = dataclasses.replace(block, call=np.full(len(block), len(self._blocks)))
        self._blocks.append(block)

    @property
    def num_calls(self) -> int:
        """Number of gradient calls recorded."""
        return len(self._blocks)

    @property
    def blocks(self) -> tuple[ShotStatistics, ...]:
        """The statistics of each recorded gradient call, in order."""
        return tuple(self._blocks)

    @property
    def statistics(self) -> ShotStatistics:
        """All recorded rows, concatenated."""
        return ShotStatistics.concatenate(self._blocks)

    def to_records(self) -> list[dict]:
        r"""All recorded rows as plain dicts, one per row, with the gradient-call index ``call``.

        Same keys and types as :meth:`ShotStatistics.to_records`; ``call`` counts the recorder's
        gradient calls from 0 (reset by :meth:`clear`).

        Returns:
            A list of dicts, in recording order.

        Example:
            >>> rec = ShotRecorder()
            >>> block = ShotStatistics(shots=[10, 10], mean=[0.2, -0.2], variance=[1.0, 1.0],
            ...                        fourth_moment=[1.0, 1.0], coefficient=[0.5, -0.5],
            ...                        trainable_param=[0, 0], batch_index=[0, 0],
            ...                        shot_copy=[0, 0], measurement=[0, 0], tape_index=[0, 1])
            >>> rec.add(block); rec.add(block)
            >>> [(r["call"], r["tape_index"], r["mean"]) for r in rec.to_records()]
            [(0, 0, 0.2), (0, 1, -0.2), (1, 0, 0.2), (1, 1, -0.2)]
        """
        return self.statistics.to_records()

    def to_dict_of_arrays(self) -> dict[str, np.ndarray]:
        """All recorded rows in column form (see :meth:`ShotStatistics.to_dict_of_arrays`)."""
        return self.statistics.to_dict_of_arrays()

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self._blocks.clear()

    def __repr__(self) -> str:
        return f"ShotRecorder(calls={self.num_calls}, rows={sum(map(len, self._blocks))})"


def active_recorder() -> ShotRecorder | None:
    """The recorder activated by the innermost ``with ShotRecorder():`` block, if any."""
    return _ACTIVE_RECORDER.get()
