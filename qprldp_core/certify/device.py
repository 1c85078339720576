r"""Certificates for the depolarizing noise of a PennyLane circuit, and its variance floor.

PennyLane is imported only inside :func:`certify_device`: :mod:`qprldp_core` imports without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_epsilon, check_probability
from ..channels import (
    Channel,
    depolarizing,
    depolarizing_p_from_pennylane,
    depolarizing_part,
    local_depolarizing,
)
from .certificates import qldp_certificate, qprldp_certificate
from .epsilon import qldp_epsilon, qprldp_epsilon
from .statement import Certificate

__all__ = ["DeviceCertificate", "certify_device"]


@dataclass(frozen=True, eq=False)
class DeviceCertificate:
    r"""Certificates for the depolarizing noise of a PennyLane circuit or noise model.

    Attributes:
        source: "QNode", "tape" or "NoiseModel".
        depolarizing_q: PennyLane parameters q of every ``DepolarizingChannel`` found, in order.
        channel_certificates: for each distinct q, the QLDP and QPrLDP certificates of the
            single-qubit :math:`\mathcal D_p`, p = 4q/3, at ``epsilon``.
        final_noise_p: per wire, the effective p of the depolarizing noise after the last
            blocking operation on that wire (see :func:`certify_device`); empty for noise models.
        product_certificates: certificates of :math:`\mathcal D_p^{\otimes n}` on all n wires
            when every wire carries the same final noise p (else for QLDP only, with the
            smallest p, which is valid by data processing); empty if some wire has none.
        variance_floor: proven lower bound v_min on the single-shot variance of every Pauli-word
            measurement of the circuit (0 where nothing is proven).
        measurement_floors: per measurement, ``(repr, floor)``; floor None for measurements
            without an observable (``probs``, ``state``...), which do not enter v_min.
        epsilon: ε in nats of the certificates.
        delta: the δ asked for (or None).
        epsilon_for_delta: for each distinct q, ``(q, qldp_epsilon, qprldp_epsilon)`` at
            ``delta`` (empty if ``delta`` is None).
        rule: the rule used for the floor, in words.
        depolarizing_parts: for every other noise channel found (a ``QubitChannel`` of Kraus
            operators, as :func:`pennylane.from_qiskit_noise` makes, an amplitude damping...):
            ``(name, d, p)`` with p its depolarizing part
            (:func:`~qprldp_core.channels.depolarizing_part`: the channel is
            :math:`\mathcal D_p\circ\mathcal M`); its certificates in
            ``channel_certificates`` (those of :math:`\mathcal D_p` on dimension d, for
            p > 0) are proven upper bounds, not exact values.
        coverage: set by the caller that converted the noise (empty here): which parts of a
            noise model the certificates cover and which not, one dict per kind of error
            (``pennylane_qshiftdp.app.certify.noise_coverage`` for a Qiskit Aer model).
    """

    source: str
    depolarizing_q: tuple[float, ...]
    channel_certificates: tuple[Certificate, ...]
    final_noise_p: dict = field(default_factory=dict)
    product_certificates: tuple[Certificate, ...] = ()
    variance_floor: float = 0.0
    measurement_floors: tuple[tuple[str, float | None], ...] = ()
    epsilon: float = 0.0
    delta: float | None = None
    epsilon_for_delta: tuple[tuple[float, float, float], ...] = ()
    rule: str = ""
    depolarizing_parts: tuple[tuple[str, int, float], ...] = ()
    coverage: tuple[dict, ...] = ()


_FLOOR_RULE = (
    "Walking back from each measurement, on every wire, over the operations after the last "
    "blocking one: single-qubit unitaries and single-qubit unital channels commute with "
    "depolarizing noise on that wire (D_p(N(X)) = N(D_p(X)) iff N(I) = I) and with every "
    "operation on other wires, so the circuit output is (⊗_i D_{p_i}) applied to some state, "
    "with 1 - p_i the product of (1 - 4q/3) over the DepolarizingChannel(q) on wire i. For a "
    "Pauli word P (eigenvalues ±1) on support S, <P> = prod_{i in S} (1 - p_i) <P'> with "
    "|<P'>| <= 1, so Var = 1 - <P>^2 >= 1 - prod_{i in S} (1 - p_i)^2. Any other single-qubit "
    "channel N counts with its depolarizing part p (N = D_p o M, the largest such p: d times "
    "the smallest eigenvalue of its Choi matrix) and blocks unless it is unital. Blocking: "
    "multi-qubit "
    "operations, non-unital channels, mid-circuit measurements and anything unrecognised. "
    "Non-Pauli-word observables get floor 0. The floor depends only on the circuit's structure, "
    "so it holds for every parameter value (e.g. all parameter-shifted circuits)."
)


def _is_unital_single_qubit(op, qml) -> bool:
    if len(op.wires) != 1:
        return False
    if isinstance(op, qml.operation.Channel):
        try:
            ks = [np.asarray(qml.math.toarray(k), dtype=np.complex128) for k in op.kraus_matrices()]
        except Exception:  # noqa: BLE001 - unknown channel: treat as blocking
            return False
        s = sum(k @ k.conj().T for k in ks)
        return bool(np.allclose(s, np.eye(2), atol=1e-10))
    if getattr(op, "has_matrix", False) and isinstance(op, qml.operation.Operator):
        name = type(op).__name__
        return name not in ("MidMeasureMP", "Projector", "Hermitian")
    return False


#: Largest dimension of a noise channel whose depolarizing part is computed (a Choi matrix of
#: d² x d²: 256 x 256 at four qubits).
_MAX_PART_DIM = 16


def _channel_part(op, qml) -> tuple[str, int, float] | None:
    """``(name, d, p)`` of a noise channel other than ``DepolarizingChannel``: p its
    depolarizing part; ``None`` for anything that is not a channel of readable Kraus
    operators on at most :data:`_MAX_PART_DIM` dimensions."""
    if not isinstance(op, qml.operation.Channel) or type(op).__name__ == "DepolarizingChannel":
        return None
    d = 2 ** len(op.wires)
    if d > _MAX_PART_DIM:
        return None
    try:
        ks = [np.asarray(qml.math.toarray(k), dtype=np.complex128) for k in op.kraus_matrices()]
        channel = Channel(ks)
    except Exception:  # noqa: BLE001 - unreadable or not trace preserving: no part claimed
        return None
    return type(op).__name__, d, depolarizing_part(channel)


def _final_noise(tape, qml) -> dict:
    """Per wire: effective contraction factor f_i = prod (1 - p) of the final noise segment."""
    factors = {w: 1.0 for w in tape.wires}
    blocked = set()
    for op in reversed(tape.operations):
        wires = list(op.wires)
        if type(op).__name__ == "Barrier":
            continue
        if len(wires) == 1 and wires[0] not in blocked:
            w = wires[0]
            if type(op).__name__ == "DepolarizingChannel":
                q = float(qml.math.toarray(op.parameters[0]))
                factors[w] *= 1.0 - depolarizing_p_from_pennylane(q)
                continue
            part = _channel_part(op, qml)
            if part is not None:  # N = D_p o M: D_p acts last, so it counts even if M blocks
                factors[w] *= 1.0 - part[2]
            if _is_unital_single_qubit(op, qml):
                continue
        blocked.update(wires)
    return factors


def _measurement_floor(mp, factors, qml) -> float | None:
    obs = getattr(mp, "obs", None)
    if obs is None:
        return None  # no observable (probs, counts of wires, state): no Pauli-word variance
    try:
        ps = qml.pauli.pauli_sentence(obs)
    except Exception:  # noqa: BLE001 - not expressible as Pauli sentence
        return 0.0
    ps.simplify()
    if len(ps) != 1:
        return 0.0
    (word, coeff), = ps.items()
    c = complex(qml.math.toarray(coeff))
    if abs(abs(c) - 1.0) > 1e-12 or abs(c.imag) > 1e-12:
        return 0.0  # eigenvalues not ±1
    support = [w for w, pauli in word.items() if pauli != "I"]
    if not support:
        return 0.0
    prod = 1.0
    for w in support:
        prod *= factors.get(w, 1.0) ** 2
    # round toward less credit: subtract a few ulps
    return max(0.0, (1.0 - prod) * (1.0 - 1e-12))


def _noise_model_ops(nm, qml) -> list:
    """The operations every noise function of ``nm`` queues (applied to ``Identity(0)``)."""
    ops = []
    maps = list(nm.model_map.items()) + list(getattr(nm, "meas_map", {}).items())
    for _, fn in maps:
        with qml.queuing.AnnotatedQueue() as q:
            try:
                fn(qml.Identity(0), **nm.metadata)
            except Exception:  # noqa: BLE001 - noise function needs a real op; skip
                continue
        ops.extend(q.queue)
    return ops


def _part_certificates(name: str, d: int, p: float, eps: float) -> list[Certificate]:
    """QLDP and QPrLDP upper bounds for a channel N = D_p o M (those of D_p on dimension d)."""
    ch = depolarizing(p, d)
    out = []
    for cert in (qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)):
        out.append(dataclasses.replace(
            cert, side="upper_bound", exact=False, witness=None, delta_lower=None,
            channel_description=(f"{name} on {d.bit_length() - 1} qubit(s), through its "
                                 f"depolarizing part: N = D_p o M with p={p:.6g}, d={d}"),
            reference=(f"derived here (docs/qprldp.md §3, 'The depolarizing part of a "
                       f"channel'): N is at least as private as D_p; {cert.reference}")))
    return out


def certify_device(
    obj: object,
    *,
    epsilon: float,
    delta: float | None = None,
    args: tuple = (),
    kwargs: dict | None = None,
) -> DeviceCertificate:
    r"""Certify the depolarizing noise of a PennyLane QNode, tape or noise model.

    Reads every ``qml.DepolarizingChannel(q)`` (converted to :math:`\mathcal D_p`, p = 4q/3),
    certifies each distinct single-qubit channel (QLDP and QPrLDP at ``epsilon``), the n-qubit
    product of the final noise layer when it covers every wire, and computes the variance floor
    :math:`v_{\min}` used by the optimizer's ``depolarizing`` credit mode. Every other noise
    channel (a ``QubitChannel`` of Kraus operators, as :func:`pennylane.from_qiskit_noise`
    makes from a Qiskit noise model, amplitude damping, ...) counts through its *depolarizing
    part* (:func:`~qprldp_core.channels.depolarizing_part`, derived here: the largest p with
    :math:`\mathcal N = \mathcal D_p\circ\mathcal M`): its certificates are those of
    :math:`\mathcal D_p`, as proven upper bounds, and a single-qubit one contributes
    :math:`1 - p` to its wire's contraction.

    Variance floor (derived here). Rule: for each wire, walk backwards from the measurements
    over the operations acting on it after its last *blocking* operation (multi-qubit gates,
    non-unital channels, mid-circuit measurements, unknown operations). Single-qubit unitaries
    and unital channels N commute with :math:`\mathcal D_p` on that wire (:math:`\mathcal D_p
    \circ N = N \circ \mathcal D_p` iff N(I) = I) and operations on other wires commute
    trivially, so the output is :math:`(\bigotimes_i \mathcal D_{p_i})(\tau)` for some state τ,
    with :math:`1 - p_i = \prod (1 - 4q_k/3)` over that wire's final channels. The adjoint of
    :math:`\mathcal D_p` maps a traceless Pauli to :math:`(1-p)` times itself, so for a Pauli word
    P with support S, :math:`\langle P\rangle = \prod_{i\in S}(1-p_i)\,\mathrm{Tr}[P\tau]` and

    .. math::

        \mathrm{Var}(P) = 1 - \langle P\rangle^2 \ge 1 - \prod_{i\in S}(1 - p_i)^2 =: v_{\min}(P).

    Noise *before* a later multi-qubit gate is not counted (a CNOT can undo the contraction of a
    single Bloch component). The returned ``variance_floor`` is the minimum over the circuit's
    measurements with a Pauli-word observable (coefficient ±1); other observables get 0, as does
    a bare ``NoiseModel`` (where the noise lands depends on the circuit: apply it with
    ``qml.add_noise`` and pass the QNode). The floor is attained when τ is an eigenstate of P.

    The certificates are about the device channel (indistinguishability of its input states),
    not about training data: the DP-SGD guarantee of ``pennylane_qshiftdp`` does not follow from
    them, and only ``variance_floor`` enters training, through the optional shot-noise credit
    (``docs/qprldp.md`` §7.2).

    Args:
        obj: a ``qml.QNode`` (its tape is constructed at ``level="device"`` with ``args`` and
            ``kwargs``, so ``qml.add_noise`` transforms are included), a ``QuantumScript``/tape,
            or a ``qml.NoiseModel``.
        epsilon: ε ≥ 0 in nats for the certificates.
        delta: optional δ in [0, 1]; if given, the smallest certified ε for it is reported.
        args, kwargs: arguments used to build the QNode's tape (the floor does not depend on
            their values, only on the circuit structure they produce).

    Returns:
        A frozen :class:`DeviceCertificate`.

    Raises:
        TypeError: if ``obj`` is not a QNode, tape or NoiseModel.
        ValueError: for invalid ε or δ.

    References:
        Derived here; PennyLane ``DepolarizingChannel`` convention p = 4q/3.

    Example:
        >>> import pennylane as qml
        >>> ops = [qml.Hadamard(0), qml.DepolarizingChannel(0.3, wires=0)]
        >>> tape = qml.tape.QuantumScript(ops, [qml.expval(qml.PauliX(0))])
        >>> dc = certify_device(tape, epsilon=1.0)
        >>> round(dc.variance_floor, 6), dc.final_noise_p
        (0.64, {0: 0.4})
    """
    import pennylane as qml  # lazy: qprldp_core must import without PennyLane

    eps = check_epsilon(epsilon)
    if delta is not None:
        delta = check_probability(delta, "delta")
    kwargs = dict(kwargs or {})
    factors: dict = {}
    floors: list[tuple[str, float | None]] = []
    if isinstance(obj, qml.NoiseModel):
        source = "NoiseModel"
        ops = _noise_model_ops(obj, qml)
    else:
        if isinstance(obj, qml.QNode):
            source = "QNode"
            tape = qml.workflow.construct_tape(obj, level="device")(*args, **kwargs)
        elif isinstance(obj, qml.tape.QuantumScript):
            source = "tape"
            tape = obj
        else:
            raise TypeError(
                "`obj` must be a qml.QNode, a QuantumScript/tape or a qml.NoiseModel. "
                f"Found {type(obj).__name__}."
            )
        ops = list(tape.operations)
        factors = _final_noise(tape, qml)
        floors = [(repr(mp), _measurement_floor(mp, factors, qml)) for mp in tape.measurements]
    qs = [float(qml.math.toarray(op.parameters[0])) for op in ops
          if type(op).__name__ == "DepolarizingChannel"]
    parts = [part for part in (_channel_part(op, qml) for op in ops) if part is not None]
    distinct = sorted(set(qs))
    certs: list[Certificate] = []
    eps_delta = []
    for q in distinct:
        ch = depolarizing(depolarizing_p_from_pennylane(q), 2)
        certs += [qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)]
        if delta is not None:
            eps_delta.append((q, qldp_epsilon(ch, delta=delta), qprldp_epsilon(ch, delta=delta)))
    for name, d, p in dict.fromkeys(parts):
        if p > 0:
            certs += _part_certificates(name, d, p, eps)
    final_p = {w: 1.0 - f for w, f in factors.items()}
    prod: list[Certificate] = []
    if final_p and all(p > 0 for p in final_p.values()):
        ps = sorted(final_p.values())
        n = len(ps)
        same = ps[-1] - ps[0] <= 1e-12
        if all(p <= 1.0 for p in ps) or same:
            # QLDP: D_{p'} = D_s ∘ D_p for p ≤ p' ≤ 1, so the smallest p certifies by data
            # processing; QPrLDP is not closed under post-processing: only when all p are equal.
            ch = local_depolarizing(min(ps[0], 4.0 / 3.0), n)
            prod.append(qldp_certificate(ch, epsilon=eps))
            if same:
                prod.append(qprldp_certificate(ch, epsilon=eps))
    pauli_floors = [f for (_, f) in floors if f is not None]
    vmin = float(min(pauli_floors)) if pauli_floors else 0.0
    return DeviceCertificate(
        source=source,
        depolarizing_q=tuple(qs),
        channel_certificates=tuple(certs),
        final_noise_p=final_p,
        product_certificates=tuple(prod),
        variance_floor=vmin,
        measurement_floors=tuple(floors),
        epsilon=eps,
        delta=delta,
        epsilon_for_delta=tuple(eps_delta),
        rule=_FLOOR_RULE,
        depolarizing_parts=tuple(dict.fromkeys(parts)),
    )
