r"""Shot estimates drawn from the exact outcome law of groups of measurements.

Several measurements of one circuit share shots as default.qubit and lightning.qubit share
them: Pauli-word measurements are partitioned into qubit-wise commuting groups by PennyLane's
:func:`~pennylane.pauli.compute_partition_indices` (the devices' own partition), each group
drawn with one multinomial over the joint outcomes of its wires in its eigenbasis; ``probs``
of wires share one draw; any other measurement gets shots of its own. Observables with more
than two eigenvalues are refused with :class:`NotImplementedError`.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pennylane as qml
from numpy.typing import ArrayLike
from pennylane.measurements import ExpectationMP, ProbabilityMP, VarianceMP

from ..gradients.observables import plan_for

__all__ = ["draw_two_point"]

# Pauli words on at most this many wires are read from their outcome probabilities.
_MAX_PROBS_WIRES = 8


def draw_two_point(expval: ArrayLike, shots: int, lam_min: float, lam_max: float,
                   rng: np.random.Generator) -> np.ndarray:
    r"""Draw :math:`N_s`-shot estimates of a two-outcome observable from its exact mean.

    .. math::

        k \sim \mathrm{Binomial}(N_s, p_+),\quad
        p_+ = \frac{\langle O\rangle - \lambda_-}{\lambda_+ - \lambda_-},\quad
        \hat\mu = \frac{k\lambda_+ + (N_s - k)\lambda_-}{N_s}.

    Args:
        expval: exact expectation values :math:`\langle O\rangle \in [\lambda_-, \lambda_+]`,
            any shape (float rounding outside the range is clipped).
        shots: :math:`N_s \geq 1`.
        lam_min: smaller eigenvalue :math:`\lambda_-`.
        lam_max: larger eigenvalue :math:`\lambda_+ \geq \lambda_-`.
        rng: the generator to draw from (one vectorised binomial draw).

    Returns:
        np.ndarray: the estimates, same shape as ``expval``, each in
        :math:`\{\lambda_- + (\lambda_+ - \lambda_-) k / N_s\}`.

    Raises:
        ValueError: if ``shots < 1`` or ``lam_max < lam_min``.

    Example:
        >>> est = draw_two_point(np.array([1.0, -1.0, 0.0]), 10, -1.0, 1.0,
        ...                      np.random.default_rng(0))
        >>> est[:2].tolist(), bool(-1 <= est[2] <= 1)
        ([1.0, -1.0], True)
    """
    if isinstance(shots, bool) or not isinstance(shots, (int, np.integer)) or shots < 1:
        raise ValueError(f"`shots` must be a positive integer. Found {shots!r}.")
    if lam_max < lam_min:
        raise ValueError(f"`lam_max` must be at least `lam_min` ({lam_min}). Found {lam_max}.")
    expval = np.asarray(expval, dtype=float)
    width = float(lam_max) - float(lam_min)
    if width == 0.0:
        return np.full(expval.shape, float(lam_min))
    p_hi = np.clip((expval - lam_min) / width, 0.0, 1.0)  # float rounding may leave [0, 1]
    k = rng.binomial(int(shots), p_hi)
    # Same arithmetic as the device's mean of k values λ+ and N_s − k values λ−.
    return (k * float(lam_max) + (shots - k) * float(lam_min)) / shots


def _draw_counts(probs, shots, rng) -> np.ndarray:
    """Multinomial counts ``(..., K)`` of ``shots`` outcomes for probability rows ``(..., K)``."""
    probs = np.clip(np.asarray(probs, dtype=float), 0.0, 1.0)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    return rng.multinomial(int(shots), probs)


@dataclasses.dataclass(frozen=True)
class _Group:
    """Measurements that share their shots, and the analytic measurement their law comes from.

    ``binomial``: one expval/var of a two-point observable with eigenvalues ``lo``, ``hi``;
    ``readouts`` is ``("expval",)`` or ``("var",)``. ``analytic`` is ``probs`` in the
    eigenbasis of a (small) Pauli word, whose outcomes with eigenvalue ``hi`` are ``hi_mask``,
    or else ``expval(obs)``.
    ``multinomial``: joint outcomes of ``wires`` (in the eigenbasis of ``analytic``), and per
    member a ``(kind, payload)``: ``("expval"|"var", values over outcomes)`` or
    ``("probs", wire positions)``.
    """

    kind: str
    members: tuple
    analytic: object
    lo: float = 0.0
    hi: float = 0.0
    wires: tuple = ()
    readouts: tuple = ()
    hi_mask: np.ndarray | None = None


def _unsupported(mp) -> NotImplementedError:
    return NotImplementedError(
        f"Exact-law shot sampling supports expval and var of observables with two eigenvalues "
        f"(Pauli words, projectors) and probs; found `{mp}`"
        + (f", whose observable {mp.obs} has more than two eigenvalues (devices estimate it "
           f"term by term)" if isinstance(mp, (ExpectationMP, VarianceMP)) else "")
        + ". Use shot_sampling='device' for it."
    )


def _two_point_plan(mp):
    if isinstance(mp, (ExpectationMP, VarianceMP)) and mp.obs is not None:
        plan = plan_for(mp.obs)
        if plan.kind == "two_point":
            return plan
    if not isinstance(mp, ProbabilityMP):
        raise _unsupported(mp)
    return None


def _bits(num_wires: int) -> np.ndarray:
    """Outcome index -> bit of each wire (first wire most significant), shape ``(K, n)``."""
    idx = np.arange(2**num_wires)
    return (idx[:, None] >> np.arange(num_wires - 1, -1, -1)) & 1


def _pauli_word(obs):
    """``(coefficient, {wire: letter})`` of a scaled Pauli word."""
    [(word, coeff)] = list(obs.pauli_rep.items())
    return float(np.real(coeff)), dict(word)


def _multinomial_group(members, mps, wires, analytic) -> _Group:
    bits = _bits(len(wires))
    pos = {w: i for i, w in enumerate(wires)}
    readouts = []
    for i in members:
        mp = mps[i]
        if isinstance(mp, ProbabilityMP):
            readouts.append(("probs", tuple(pos[w] for w in mp.wires)))
        else:  # a Pauli word, diagonal (letters Z) after the group's rotation
            coeff, word = _pauli_word(mp.obs)
            parity = bits[:, [pos[w] for w in word]].sum(axis=1) % 2
            values = coeff * (1.0 - 2.0 * parity)
            readouts.append(("expval" if isinstance(mp, ExpectationMP) else "var", values))
    return _Group("multinomial", tuple(members), analytic, wires=tuple(wires),
                  readouts=tuple(readouts))


def _basis(letters: dict):
    """The product of single-qubit Paulis ``{wire: letter}`` (a group's measurement basis)."""
    paulis = [{"X": qml.X, "Y": qml.Y, "Z": qml.Z}[letter](w) for w, letter in letters.items()]
    return paulis[0] if len(paulis) == 1 else qml.prod(*paulis)


def _binomial_group(i, mp, plan) -> _Group:
    kind = "var" if isinstance(mp, VarianceMP) else "expval"
    if plan.hi > plan.lo and qml.pauli.is_pauli_word(mp.obs):
        coeff, word = _pauli_word(mp.obs)
        if 1 <= len(word) <= _MAX_PROBS_WIRES:
            # probs rather than expval: lightning.qubit's analytic expval opens an OpenMP
            # region per circuit, which costs milliseconds on a busy machine; probs does not.
            parity = _bits(len(word)).sum(axis=1) % 2
            values = coeff * (1.0 - 2.0 * parity)
            return _Group("binomial", (i,), qml.probs(op=_basis(word)), plan.lo, plan.hi,
                          wires=tuple(word), readouts=(kind,), hi_mask=values > 0)
    return _Group("binomial", (i,), qml.expval(mp.obs), plan.lo, plan.hi, readouts=(kind,))


def shot_groups(mps) -> list[_Group]:
    """Group measurements as default.qubit and lightning.qubit share shots among them."""
    plans = [_two_point_plan(mp) for mp in mps]
    if len(mps) == 1 and plans[0] is not None:
        return [_binomial_group(0, mps[0], plans[0])]
    pauli = [i for i, mp in enumerate(mps)
             if mp.obs is not None and qml.pauli.is_pauli_word(mp.obs)]
    no_obs = [i for i, mp in enumerate(mps) if mp.obs is None]
    other = [i for i, mp in enumerate(mps) if mp.obs is not None and i not in pauli]
    groups = []
    if pauli:
        with qml.QueuingManager.stop_recording():
            parts = qml.pauli.compute_partition_indices([mps[i].obs for i in pauli])
        for part in parts:
            members = [pauli[j] for j in part]
            if len(members) == 1 and plans[members[0]] is not None:
                groups.append(_binomial_group(members[0], mps[members[0]], plans[members[0]]))
                continue
            letters = {}
            for i in members:
                letters.update(_pauli_word(mps[i].obs)[1])
            groups.append(_multinomial_group(members, mps, list(letters),
                                             qml.probs(op=_basis(letters))))
    if no_obs:
        wires = list(dict.fromkeys(w for i in no_obs for w in mps[i].wires))
        groups.append(_multinomial_group(no_obs, mps, wires, qml.probs(wires=wires)))
    for i in other:
        mp = mps[i]
        if plans[i] is not None:
            groups.append(_binomial_group(i, mp, plans[i]))
        else:  # probs in the eigenbasis of a non-Pauli observable: its own outcomes
            wires = list(mp.wires)
            groups.append(_Group("multinomial", (i,), mp, wires=tuple(wires),
                                 readouts=(("probs", tuple(range(len(wires)))),)))
    return groups


def read_group(group: _Group, analytic: np.ndarray, shots: int, rng) -> list:
    """Draw one group's estimates; ``analytic`` has shape ``(N,)`` or ``(N, K)``."""
    if group.kind == "binomial":
        if group.hi_mask is not None:  # P(hi) from the outcome probabilities
            p_hi = analytic[:, group.hi_mask].sum(axis=1)
            analytic = group.lo + (group.hi - group.lo) * p_hi
        mean = draw_two_point(analytic, shots, group.lo, group.hi, rng)
        if group.readouts == ("var",):  # the device's var: ddof-0 variance of the samples
            return [np.maximum((group.hi - mean) * (mean - group.lo), 0.0)]
        return [mean]
    counts = _draw_counts(analytic, shots, rng)
    freq = counts / shots
    out = []
    n = len(group.wires)
    for kind, payload in group.readouts:
        if kind == "probs":
            joint = freq.reshape(freq.shape[0], *([2] * n))
            rest = tuple(1 + a for a in range(n) if a not in payload)
            marg = joint.sum(axis=rest) if rest else joint
            kept = [a for a in range(n) if a in payload]
            perm = [kept.index(a) for a in payload]
            out.append(np.transpose(marg, (0, *[1 + p for p in perm]))
                       .reshape(freq.shape[0], -1))
        else:
            mean = freq @ payload
            out.append(mean if kind == "expval"
                       else np.maximum(freq @ payload**2 - mean**2, 0.0))
    return out
