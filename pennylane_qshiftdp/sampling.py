r"""Exact-law shot sampling: shot estimates drawn from a simulator's exact outcome law.

A shot estimate of a circuit depends on the circuit only through its outcome distribution. On a
simulator that distribution is computed exactly, so the :math:`N_s`-shot estimate can be drawn
from it directly instead of simulating :math:`N_s` single shots. For an observable with two
eigenvalues :math:`\lambda_- < \lambda_+` (every Pauli word, scaled or shifted, and projectors)
the number of shots that return :math:`\lambda_+` is binomial:

.. math::

    k \sim \mathrm{Binomial}(N_s, p_+), \qquad
    p_+ = P(\lambda_+) = \frac{\langle O\rangle - \lambda_-}{\lambda_+ - \lambda_-}, \qquad
    \hat\mu = \frac{k\,\lambda_+ + (N_s - k)\,\lambda_-}{N_s},

since :math:`\langle O\rangle = \lambda_- (1 - p_+) + \lambda_+ p_+`. ``probs`` returns are
multinomial counts over their outcomes divided by :math:`N_s`. The drawn estimate has exactly
the law of the device's estimate (the device's :math:`N_s` i.i.d. shots give the same count law),
and so have the shot statistics recorded from it (variance and fourth moment of a two-valued
sample are functions of its mean, :func:`~.two_point_moments`). Derived here (elementary).

Several measurements of one circuit share shots as default.qubit and lightning.qubit share
them: Pauli-word measurements are partitioned into qubit-wise commuting groups by PennyLane's
:func:`~pennylane.pauli.compute_partition_indices` (the devices' own partition), each group
drawn with one multinomial over the joint outcomes of its wires in its eigenbasis; ``probs``
of wires share one draw; any other measurement gets shots of its own.
Observables with more than two eigenvalues (Hamiltonians and Pauli sums, which devices estimate
term by term) are refused with :class:`NotImplementedError`; use device sampling for them.

How it is switched on. The per-example evaluation of a :class:`pennylane_qshiftdp.qnn.TorchLayer`
(:mod:`~pennylane_qshiftdp.quantum_layer`) reads the QNode's mode, set with
:func:`use_exact_law` or :func:`set_shot_sampling` on a QNode, a TorchLayer or any module
containing TorchLayers (also the module returned by :func:`~pennylane_qshiftdp.make_private`)::

    model = QuantumClassifier(4, 2, device="default.qubit", shots=1000, seed=0)
    use_exact_law(model)

The forward circuit and all shifted circuits are then executed *analytically* (copies with
``shots=None``, still one :func:`pennylane.execute` call; on a device that simulates broadcast
tapes at once, such as default.qubit, they are merged into a few broadcast tapes, from which
gates outside the measured wires' light cone are dropped and, on default.qubit and
default.mixed, runs of single-qubit gates are fused into one broadcast unitary: both exact) and
every estimate is drawn with one vectorised draw per measurement group. The draws come from the
device's own numpy ``Generator`` (``device._rng`` of default.qubit, lightning.qubit and
default.mixed), so the device seed and per-epoch reseeding (the training job's ``--resume``)
repeat them exactly; a device without one (hardware, remote simulators) is refused. As with
the device's own sampling, the shot noise then comes from a seeded pseudo-random generator.
Direct calls of the QNode (outside a TorchLayer) keep sampling on the device. The mode is an
attribute of the QNode rather than a gradient keyword argument because PennyLane passes every
gradient keyword to the transform, which would then refuse the QNode elsewhere.
"""

from __future__ import annotations

import dataclasses
import weakref

import numpy as np
import pennylane as qml
from pennylane.measurements import ExpectationMP, ProbabilityMP, VarianceMP

from . import _compat
from .transform import _plan_for, param_shift

__all__ = [
    "SHOT_SAMPLING_MODES",
    "draw_two_point",
    "device_generator",
    "execute_exact_law",
    "set_shot_sampling",
    "shot_sampling",
    "use_exact_law",
]

#: Accepted shot-sampling modes: the device samples every shot, or estimates are drawn from the
#: exact outcome law of an analytic simulation.
SHOT_SAMPLING_MODES = ("device", "exact_law")

# Attribute of a QNode holding its mode (absent means "device").
_MODE_ATTR = "_qshiftdp_shot_sampling"
# Largest number of state-vector amplitudes (merged batch × 2^wires) of one merged broadcast
# tape: 2^20 complex128 amplitudes are 16 MiB per copy of the state in default.qubit; larger
# merged tapes were no faster at 8 to 12 qubits (benchmarks/bench_transform.py --step).
_MAX_MERGED_AMPLITUDES = 2**20
# Pauli words on at most this many wires are read from their outcome probabilities.
_MAX_PROBS_WIRES = 8


# --------------------------------------------------------------------------------------------
# Choosing the mode
# --------------------------------------------------------------------------------------------


def device_generator(device) -> np.random.Generator:
    r"""The numpy ``Generator`` with which a simulator samples shots (``device._rng``).

    Args:
        device: a PennyLane device.

    Returns:
        numpy.random.Generator: the device's own generator (not a copy).

    Raises:
        NotImplementedError: if the device keeps no numpy ``Generator`` (hardware, remote or
            other non-simulator devices): its outcome law is not available to draw from.

    Example:
        >>> dev = qml.device("default.qubit", seed=1)
        >>> device_generator(dev) is dev._rng
        True
    """
    rng = getattr(device, "_rng", None)
    if not isinstance(rng, np.random.Generator):
        raise NotImplementedError(
            f"Exact-law shot sampling needs a simulator that samples with a numpy Generator "
            f"(default.qubit, lightning.qubit, default.mixed); device "
            f"{getattr(device, 'name', device)!r} has none. Use shot_sampling='device'."
        )
    return rng


def _qnodes_of(target) -> list:
    if isinstance(target, qml.QNode):
        return [target]
    if isinstance(target, qml.qnn.TorchLayer):
        return [target.qnode]
    modules = getattr(target, "modules", None)
    if callable(modules):
        qnodes = [m.qnode for m in modules() if isinstance(m, qml.qnn.TorchLayer)]
        if qnodes:
            return qnodes
        raise ValueError(f"`target` must contain a pennylane.qnn.TorchLayer. Found a "
                         f"{type(target).__name__} without one.")
    raise TypeError(f"`target` must be a QNode, a TorchLayer or a torch.nn.Module. Found "
                    f"{type(target).__name__}.")


def _check_seed(seed) -> None:
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return
    items = seed if isinstance(seed, (list, tuple)) else [seed]
    for s in items:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"`seed` must be None, a non-negative integer, a sequence of them "
                            f"or a numpy SeedSequence. Found {seed!r}.")
        if s < 0:
            raise ValueError(f"`seed` must be non-negative. Found {seed!r}.")


def set_shot_sampling(target, mode: str, *, seed=None) -> list:
    r"""Choose how the per-example evaluation of TorchLayers draws shot estimates.

    ``"device"`` (default): the device samples every shot of every circuit.
    ``"exact_law"``: the circuits run analytically and each :math:`N_s`-shot estimate is drawn
    from the exact outcome law with the device's own generator (module docstring); same law,
    much faster on simulators. The mode belongs to the QNode and applies to every evaluation of
    its TorchLayer (training steps, Opacus's grad sampler and ``torch.no_grad()`` evaluation);
    with ``shots=None`` both modes are analytic.

    Args:
        target: a QNode using :func:`~pennylane_qshiftdp.param_shift`, a TorchLayer of one, or
            a ``torch.nn.Module`` containing such TorchLayers (all are set).
        mode: one of :data:`SHOT_SAMPLING_MODES`.
        seed: if given, reseeds the generator of every device involved in place (an integer
            seed repeats the shot noise exactly); ``None`` keeps the device's current state.

    Returns:
        list: the QNodes whose mode was set.

    Raises:
        ValueError: for an unknown ``mode``, a module without TorchLayer, a QNode whose diff
            method is not the private transform, or a negative ``seed``.
        TypeError: for a ``target`` or ``seed`` of the wrong type.
        NotImplementedError: for ``"exact_law"`` (or a ``seed``) on a device without a numpy
            generator (not a simulator).

    Example:
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> qn = make_qnode(1, 1, device="default.qubit", shots=100, seed=0)
        >>> [shot_sampling(q) for q in set_shot_sampling(qn, "exact_law", seed=3)]
        ['exact_law']
    """
    if mode not in SHOT_SAMPLING_MODES:
        raise ValueError(f"`mode` must be one of {SHOT_SAMPLING_MODES}. Found {mode!r}.")
    _check_seed(seed)
    qnodes = _qnodes_of(target)
    for qnode in qnodes:
        if qnode.diff_method is not param_shift:
            name = getattr(qnode.diff_method, "__name__", qnode.diff_method)
            raise ValueError(
                f"Shot sampling modes apply to QNodes differentiated by "
                f"pennylane_qshiftdp.param_shift. Found diff_method={name!r}."
            )
        if mode == "exact_law":
            device_generator(qnode.device)
    if seed is not None:
        seen = set()
        for qnode in qnodes:
            if id(qnode.device) not in seen:
                seen.add(id(qnode.device))
                _compat.reseed_device(qnode.device, seed)
    for qnode in qnodes:
        setattr(qnode, _MODE_ATTR, mode)
    return qnodes


def use_exact_law(target, *, seed=None):
    r"""Switch ``target``'s TorchLayers to exact-law shot sampling; return ``target``.

    Shorthand for ``set_shot_sampling(target, "exact_law", seed=seed)``.

    Args:
        target: a QNode, TorchLayer or module containing TorchLayers (see
            :func:`set_shot_sampling`).
        seed: optional reseed of the device generators (an integer repeats the shot noise).

    Returns:
        ``target``, for chaining.

    Raises:
        ValueError: as :func:`set_shot_sampling` (no TorchLayer, a QNode not differentiated by
            the private transform, a negative ``seed``).
        TypeError: for a ``target`` or ``seed`` of the wrong type.
        NotImplementedError: for a device without a numpy generator (hardware, remote).

    Example:
        >>> from pennylane_qshiftdp.models import QuantumClassifier
        >>> model = use_exact_law(QuantumClassifier(2, 1, device="default.qubit", seed=0))
        >>> shot_sampling(model.qlayer.qnode)
        'exact_law'
    """
    set_shot_sampling(target, "exact_law", seed=seed)
    return target


def shot_sampling(qnode) -> str:
    """The shot-sampling mode of a QNode: ``"device"`` unless set otherwise.

    Args:
        qnode: a :class:`pennylane.QNode`.

    Returns:
        str: one of :data:`SHOT_SAMPLING_MODES`.

    Example:
        >>> shot_sampling(qml.QNode(lambda: qml.expval(qml.Z(0)), qml.device("default.qubit")))
        'device'
    """
    return getattr(qnode, _MODE_ATTR, "device")


# --------------------------------------------------------------------------------------------
# Draws
# --------------------------------------------------------------------------------------------


def draw_two_point(expval, shots: int, lam_min: float, lam_max: float,
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


# --------------------------------------------------------------------------------------------
# Measurement groups (the device's grouping of shared shots)
# --------------------------------------------------------------------------------------------


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
        plan = _plan_for(mp.obs)
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


def _groups(mps) -> list[_Group]:
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


def _read(group: _Group, analytic: np.ndarray, shots: int, rng) -> list:
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


# --------------------------------------------------------------------------------------------
# Merged analytic execution
# --------------------------------------------------------------------------------------------


def _stacked_parameters(template, param_sets, beff):
    """Operation parameters of all circuits stacked along the batch axis.

    Returns, per operation of ``template``, ``None`` (its parameters are the same in every
    circuit) or a list with, per parameter, ``None`` (the same unbroadcast value everywhere) or
    an array ``(C·beff, ...)``; ``None`` overall if the circuits cannot share a broadcast tape.
    """
    def column(k, nd):
        try:
            arr = np.stack([ps[k] for ps in param_sets])  # (C, ...) or (C, beff, ...)
        except ValueError:  # shapes differ between circuits
            return _NO_MERGE
        nd = arr.ndim - 1 if nd is None else nd
        if arr.ndim == nd + 1:  # unbroadcast in every circuit
            if np.all(arr == arr[:1]):
                return None
            return np.repeat(arr, beff, axis=0) if beff > 1 else arr
        if arr.ndim == nd + 2 and arr.shape[1] == beff:
            return arr.reshape(-1, *arr.shape[2:])
        return _NO_MERGE

    stacked, k = _stack_operations(template, column)
    if stacked is None:
        return None
    # Observable parameters (after the operations') must not vary between circuits.
    for k2 in range(k, len(param_sets[0])):
        first = np.asarray(param_sets[0][k2])
        if any(not np.array_equal(np.asarray(ps[k2]), first) for ps in param_sets[1:]):
            return None
    return stacked


#: A parameter column that cannot be merged into a broadcast tape.
_NO_MERGE = object()


def _stack_operations(template, column):
    """Per operation of ``template``, ``None`` or the list of ``column(k, ndim)`` over its
    parameters (``k``: the tape parameter index, ``ndim``: the gate's unbroadcast parameter
    dimension or ``None``); returns ``(stacked, number of operation parameters)``, with
    ``stacked`` ``None`` if a column is :data:`_NO_MERGE` or a gate has no ``ndim_params``."""
    stacked, k = [], 0
    for op in template.operations:
        if not op.data:
            stacked.append(None)
            continue
        try:
            nds = tuple(op.ndim_params)
        except (AttributeError, NotImplementedError, TypeError):
            return None, k
        new = []
        for j in range(len(op.data)):
            col = column(k, nds[j] if j < len(nds) else None)
            k += 1
            if col is _NO_MERGE:
                return None, k
            new.append(col)
        stacked.append(None if all(d is None for d in new) else new)
    return stacked, k


def _stacked_from_offsets(template, offsets, beff):
    """:func:`_stacked_parameters` for the circuits ``template`` with every parameter moved
    by the rows of ``offsets`` (per tape parameter an array ``(C, *shape)``, row ``c`` the
    offset of circuit ``c``), without building one parameter list per circuit."""
    base = template.get_parameters(trainable_only=False)

    def column(k, nd):
        b, off = np.asarray(base[k]), np.asarray(offsets[k])
        nd = b.ndim if nd is None else nd
        if b.ndim == nd:  # unbroadcast
            if not off.any():
                return None
            arr = b[None] + off
            return np.repeat(arr, beff, axis=0) if beff > 1 else arr
        if b.ndim == nd + 1 and b.shape[0] == beff:
            arr = b[None] + off.reshape(off.shape[0], 1, *off.shape[1:])
            return arr.reshape(-1, *arr.shape[2:])
        return _NO_MERGE

    stacked, k = _stack_operations(template, column)
    if stacked is None:
        return None
    if any(np.asarray(offsets[k2]).any() for k2 in range(k, len(base))):
        return None  # observable parameters must not vary between circuits
    return stacked


_NATIVE_BROADCAST = weakref.WeakKeyDictionary()


def _broadcasts_natively(device) -> bool:
    """Whether the device simulates a broadcast tape at once (default.qubit) rather than
    splitting it into one tape per batch element (lightning.qubit's ``broadcast_expand``),
    which would make merging circuits only add work (remembered per device object)."""
    try:
        return _NATIVE_BROADCAST[device]
    except (KeyError, TypeError):
        pass
    native = _device_broadcasts_natively(device)
    try:
        _NATIVE_BROADCAST[device] = native
    except TypeError:  # not weakly referenceable
        pass
    return native


def _device_broadcasts_natively(device) -> bool:
    try:
        pipeline = device.preprocess_transforms()
    except (AttributeError, NotImplementedError, TypeError):
        return False
    split = qml.transforms.broadcast_expand.tape_transform
    return not any(getattr(t, "tape_transform", None) is split
               for t in pipeline)


def _light_cone(operations, measurements) -> list:
    r"""The operations in the backward light cone of the measured wires.

    Walking the circuit backwards from the wires the measurements read, an operation is kept
    if it acts on a wire in the cone, whose wires then join it. A unitary acting only on wires
    outside the cone of everything after it does not change the reduced state of the measured
    wires (:math:`\mathrm{Tr}_{\bar M}[(I\otimes V)\rho(I\otimes V)^\dagger]
    = \mathrm{Tr}_{\bar M}\rho` for :math:`V` on the traced-out wires), so every measurement
    of those wires is unchanged. Derived here (elementary). The circuit is returned unchanged
    if any operation is not unitary (has no matrix: channels, mid-circuit measurements, state
    preparations) or a measurement reads all wires implicitly (``probs()``, ``state()``).
    """
    cone = set()
    for mp in measurements:
        if not len(mp.wires):
            return list(operations)
        cone.update(mp.wires)
    if not all(op.has_matrix for op in operations):
        return list(operations)
    kept = []
    for op in reversed(operations):
        if cone.intersection(op.wires):
            cone.update(op.wires)
            kept.append(op)
    return kept[::-1]


def _fuse_single_qubit(operations) -> list:
    r"""Runs of single-qubit gates on a wire, with nothing else on that wire between them,
    replaced by one :class:`~pennylane.QubitUnitary` of their (broadcast) product.

    A run :math:`U_1, \dots, U_k` (:math:`k \ge 2`) becomes :math:`U_k \cdots U_1`, placed
    where the run ends; it commutes with the gates in between, which act on other wires. The
    product is computed for all batch elements at once (:func:`_one_qubit_matrix`,
    :func:`_matmul_2x2`), so a broadcast simulator applies one gate instead of :math:`k` (the
    embedding rotation and the first trainable rotation of a layered model become one).
    Single gates, gates whose parameters are not numpy arrays, and gates without a matrix
    (channels, measurements) are kept as they are.
    """
    pending: dict = {}  # wire -> list of single-qubit gates not yet emitted
    out = []

    def flush(wire):
        run = pending.pop(wire, None)
        if not run:
            return
        if len(run) == 1:
            out.append(run[0])
            return
        mat = _one_qubit_matrix(run[0])
        for op in run[1:]:
            m = _one_qubit_matrix(op)
            mat = _matmul_2x2(m, mat)
        out.append(qml.QubitUnitary(mat, wires=run[0].wires, unitary_check=False))

    for op in operations:
        if len(op.wires) == 1 and op.has_matrix and \
                all(qml.math.get_interface(d) == "numpy" for d in op.data):
            pending.setdefault(op.wires[0], []).append(op)
            continue
        for w in op.wires:
            flush(w)
        out.append(op)
    for w in list(pending):
        flush(w)
    return out


def _matmul_2x2(a, b):
    """``a @ b`` for (stacks of) 2x2 matrices, entry by entry: numpy's matmul and einsum loop
    over the stack one tiny product at a time."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape, dtype=np.result_type(a, b))
    for i in range(2):
        for k in range(2):
            out[..., i, k] = a[..., i, 0] * b[..., 0, k] + a[..., i, 1] * b[..., 1, k]
    return out


def _rotation_matrix(theta, generator):
    """``exp(-i theta/2 P)`` for P in X, Y, Z, shape ``theta.shape + (2, 2)``."""
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    m = np.empty(np.shape(theta) + (2, 2), dtype=complex)
    if generator == "Z":
        m[..., 0, 0], m[..., 1, 1] = c - 1j * s, c + 1j * s
        m[..., 0, 1] = m[..., 1, 0] = 0.0
    elif generator == "Y":
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1], m[..., 1, 0] = -s, s
    else:
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1] = m[..., 1, 0] = -1j * s
    return m


def _one_qubit_matrix(op) -> np.ndarray:
    """The (broadcast) matrix of a single-qubit gate, ``(2, 2)`` or ``(batch, 2, 2)``: closed
    forms for RX, RY, RZ and Rot (PennyLane's conventions, checked against
    :meth:`~pennylane.operation.Operator.matrix` in the tests), PennyLane's matrix otherwise.
    """
    if type(op) in (qml.RX, qml.RY, qml.RZ):
        return _rotation_matrix(np.asarray(op.data[0], dtype=float), op.name[-1])
    if type(op) is qml.Rot:  # RZ(omega) RY(theta) RZ(phi)
        return _rot_matrix(*(np.asarray(d, dtype=float) for d in op.data))
    return np.asarray(op.matrix(), dtype=complex)


def _rot_matrix(phi, theta, omega):
    """Broadcast matrix of ``Rot(phi, theta, omega)`` (shape ``batch + (2, 2)``)."""
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    plus, minus = np.exp(-0.5j * (phi + omega)), np.exp(0.5j * (phi - omega))
    shape = np.broadcast(phi, theta, omega).shape
    m = np.empty(shape + (2, 2), dtype=complex)
    m[..., 0, 0], m[..., 0, 1] = plus * c, -minus * s
    m[..., 1, 0], m[..., 1, 1] = np.conj(minus) * s, np.conj(plus) * c
    return m


def _fuses_gates(device) -> bool:
    """Whether merged tapes for ``device`` get :func:`_fuse_single_qubit`: on PennyLane's
    Python simulators, where each broadcast gate is one ``einsum`` over the whole batch and a
    :class:`~pennylane.QubitUnitary` is native. The exact classes only: a subclass could
    attach noise per gate in its preprocessing, which fusing gates would change."""
    return type(device) in (qml.devices.DefaultQubit, qml.devices.DefaultMixed)


def _merged_tapes(template, stacked, num_circuits, measurements, max_amplitudes, *,
                  fuse=False):
    """Analytic broadcast tapes running ``num_circuits`` circuits (their parameters
    ``stacked`` along the batch axis, see :func:`_stacked_parameters`), as
    ``[(tape, number of circuits)]``; ``None`` if the circuits cannot be merged. Operations
    outside the measured wires' light cone are dropped (:func:`_light_cone`) and, with
    ``fuse``, single-qubit runs fused (:func:`_fuse_single_qubit`)."""
    beff = template.batch_size or 1
    if stacked is None:
        return None
    per_circuit = beff * 2 ** max(len(template.wires), 1)
    rows = max(1, max_amplitudes // per_circuit)
    chunks = []
    for start in range(0, num_circuits, rows):
        stop = min(start + rows, num_circuits)
        ops = []
        for op, new in zip(template.operations, stacked, strict=True):
            if new is None:
                ops.append(op)
                continue
            data = [op.data[j] if d is None else d[start * beff:stop * beff]
                    for j, d in enumerate(new)]
            new_op = qml.ops.functions.bind_new_parameters(op, data)
            if new_op.batch_size != (stop - start) * beff:
                return None  # the gate does not broadcast
            ops.append(new_op)
        ops = _light_cone(ops, measurements)
        if fuse:
            ops = _fuse_single_qubit(ops)
        chunks.append((qml.tape.QuantumScript(ops, measurements, shots=None), stop - start))
    return chunks


def _as_rows(result, num_meas):
    return [result] if num_meas == 1 else list(result)


def _check_shots(shots) -> None:
    if not shots:
        raise ValueError("Exact-law sampling draws finite-shot estimates; the tapes are "
                         "analytic (shots=None). Execute them with pennylane.execute.")
    if shots.has_partitioned_shots:
        raise NotImplementedError(f"Exact-law shot sampling does not support shot vectors "
                                  f"(found {shots}).")


def execute_exact_law(tapes, device, *, max_amplitudes: int = _MAX_MERGED_AMPLITUDES) -> list:
    r"""Execute tapes analytically and draw every shot estimate from the exact outcome law.

    The tapes must have the same measurements and finite shots (not a shot vector). Tapes with
    the same gates, differing only in parameters (a forward tape and its parameter-shift tapes),
    are merged into broadcast tapes of at most ``max_amplitudes`` amplitudes; others run one
    analytic copy each. All run in one :func:`pennylane.execute` call with ``shots=None``; then,
    per measurement group (module docstring), one vectorised binomial or multinomial draw over
    all tapes and batch elements uses the device's generator.

    Args:
        tapes: the circuits, all with the same measurements and shots.
        device: a simulator with a numpy generator (see :func:`device_generator`).
        max_amplitudes: bound on merged batch size × :math:`2^{\text{wires}}` per broadcast tape.

    Returns:
        list: per tape, results in the structure the device returns with shots (one array per
        measurement, a tuple for several; a leading batch axis for broadcast tapes).

    Raises:
        ValueError: for tapes without finite shots, with different shots, batch sizes or
            measurements, or a non-positive ``max_amplitudes``.
        NotImplementedError: for a shot vector, a device without a numpy generator, or a
            measurement other than expval/var of a two-outcome observable and probs.

    Example:
        >>> dev = qml.device("default.qubit", seed=0)
        >>> tape = qml.tape.QuantumScript([qml.RX(np.pi, 0)], [qml.expval(qml.Z(0))], shots=10)
        >>> [float(r) for r in execute_exact_law([tape], dev)]
        [-1.0]
    """
    if not tapes:
        return []
    template = tapes[0]
    _check_shots(template.shots)
    key = [mp.hash for mp in template.measurements]
    for t in tapes[1:]:
        if t.batch_size != template.batch_size:
            raise ValueError(f"All tapes must have the same batch size. Found "
                             f"{template.batch_size} and {t.batch_size}.")
        if t.shots != template.shots:
            raise ValueError(f"All tapes must have the same shots. Found {template.shots} and "
                             f"{t.shots}.")
        if [mp.hash for mp in t.measurements] != key:
            raise ValueError(f"All tapes must have the same measurements. Found "
                             f"{template.measurements} and {t.measurements}.")
    signature = [(op.name, op.wires, len(op.data)) for op in template.operations]
    if all([(op.name, op.wires, len(op.data)) for op in t.operations] == signature
           for t in tapes[1:]):
        return _execute(template, [t.get_parameters(trainable_only=False) for t in tapes],
                        device, max_amplitudes)
    return _execute(template, None, device, max_amplitudes, tapes=tapes)


def execute_offsets(template, offsets, device, *, analytic: bool = False) -> list:
    r"""The circuits ``template`` with its parameters moved by each row of ``offsets``, merged
    into broadcast tapes (light cone, single-qubit fusion) where the device broadcasts natively.

    With ``analytic=False`` every estimate is drawn from the exact outcome law
    (:func:`execute_exact_law`, the tape's finite shots); with ``analytic=True`` the tape's own
    measurements are returned analytically (``shots=None``), exactly as
    :func:`pennylane.execute` returns them for the separate circuits, up to floating-point
    rounding of the fused gates (dropping gates outside the light cone is exact).

    Args:
        template: a tape (possibly broadcast); with ``analytic=False`` it needs finite shots.
        offsets: per tape parameter (``get_parameters(trainable_only=False)`` order) an array
            ``(C, *shape)`` added to it: C circuits.
        device: the device to run them on.
        analytic: return analytic results (see above).

    Returns:
        list: per circuit, results in the structure the device returns (one array per
        measurement, a tuple for several; a leading batch axis for a broadcast template).

    Raises:
        ValueError: with ``analytic=False``, for a template without finite shots.
        NotImplementedError: as :func:`execute_exact_law`.
    """
    return _execute(template, None, device, offsets=offsets, analytic=analytic)


def _execute(template, param_sets, device, max_amplitudes=_MAX_MERGED_AMPLITUDES, *,
             tapes=None, offsets=None, analytic=False) -> list:
    """:func:`execute_exact_law` of the circuits ``template`` with each parameter set
    (all tape parameters, as ``get_parameters(trainable_only=False)``), of ``template`` with
    its parameters moved by each row of ``offsets`` (per tape parameter an array
    ``(C, *shape)``; ``param_sets`` is then ``None``), or of ``tapes``; with ``analytic``, the
    measurements' analytic values instead of exact-law draws."""
    if isinstance(max_amplitudes, bool) or not isinstance(max_amplitudes, (int, np.integer)) \
            or max_amplitudes < 1:
        raise ValueError(f"`max_amplitudes` must be a positive integer. Found "
                         f"{max_amplitudes!r}.")
    shots = template.shots
    mps = list(template.measurements)
    if analytic:  # one reader per measurement: its analytic value
        groups, analytic_mps = None, mps
    else:
        _check_shots(shots)
        rng = device_generator(device)
        groups = _groups(mps)
        analytic_mps = [g.analytic for g in groups]
    batch = template.batch_size
    beff = batch or 1

    chunks = None
    if tapes is None and _broadcasts_natively(device):
        if offsets is not None:
            n_circ = len(np.asarray(offsets[0])) if offsets else 1
            stacked = _stacked_from_offsets(template, offsets, beff)
        else:
            n_circ = len(param_sets)
            stacked = _stacked_parameters(template, param_sets, beff)
        chunks = _merged_tapes(template, stacked, n_circ, analytic_mps, max_amplitudes,
                               fuse=_fuses_gates(device))
    if chunks is None and tapes is None and param_sets is None:
        base = template.get_parameters(trainable_only=False)
        n_circ = len(np.asarray(offsets[0])) if offsets else 1
        param_sets = [[b + np.asarray(o)[c] for b, o in zip(base, offsets, strict=True)]
                      for c in range(n_circ)]
    if chunks is None and tapes is None:
        indices = list(range(len(param_sets[0])))
        tapes = [template.bind_new_parameters(ps, indices) for ps in param_sets]
    if chunks is None:  # one analytic copy per circuit
        chunks = [(t.copy(measurements=analytic_mps, shots=None), 1) for t in tapes]
    num = sum(c[1] for c in chunks)
    results = qml.execute([c[0] for c in chunks], device, diff_method=None)

    per_group = [[] for _ in analytic_mps]
    for (tape, n_circuits), res in zip(chunks, results, strict=True):
        n_rows = n_circuits * beff
        for g, r in enumerate(_as_rows(res, len(analytic_mps))):
            arr = np.asarray(qml.math.toarray(r), dtype=float)
            arr = arr.reshape(n_rows, *arr.shape[1:]) if tape.batch_size is not None else \
                np.broadcast_to(arr, (n_rows, *arr.shape))
            per_group[g].append(arr)

    values = [None] * len(mps)
    if groups is None:
        for i, parts in enumerate(per_group):
            v = np.concatenate(parts, axis=0)
            values[i] = v.reshape(num, beff, *v.shape[1:])
    for g, group in enumerate(groups or ()):
        exact = np.concatenate(per_group[g], axis=0)  # (num · beff, ...)
        for i, v in zip(group.members, _read(group, exact, shots.total_shots, rng),
                        strict=True):
            values[i] = v.reshape(num, beff, *v.shape[1:])

    out = []
    for t in range(num):
        row = [v[t] if batch else v[t, 0] for v in values]
        out.append(row[0] if len(row) == 1 else tuple(row))
    return out
