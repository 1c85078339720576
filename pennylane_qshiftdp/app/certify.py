r"""``qshiftdp certify``: the QPrLDP certificate of a device's depolarizing noise.

The device is the one ``qshiftdp train`` simulates: the job's circuit (angle embedding,
StronglyEntanglingLayers, readout ⟨Z₀⟩) on ``--qubits`` qubits, with either

* ``--depolarizing q``: PennyLane's ``DepolarizingChannel(q)`` on every qubit after the last
  gate (what ``qshiftdp train --depolarizing q`` trains with), or
* ``--noise-model``: a fake backend's noise (``FakeManilaV2``), or ``MODULE:NAME`` naming a
  PennyLane ``NoiseModel`` or a Qiskit Aer noise model (:mod:`.noise_spec`, shared with
  ``qshiftdp train``), applied to the circuit with :func:`pennylane.add_noise` (a Qiskit model
  converted with :func:`pennylane.from_qiskit_noise`, on the circuit in Qiskit's basis). Each of
  its channels counts through its depolarizing part (:func:`qprldp_core.depolarizing_part`);
  what is not covered (thermal relaxation, reset and readout errors, ...) is reported.

:func:`qprldp_core.certify_device` reads the noise and returns the QPrLDP and QLDP certificates
of every noise channel, of the final noise layer on all qubits, and the variance floor
:math:`v_{\min}` that ``--credit depolarizing`` uses. These certificates are about the device
channel (how well it hides which input state was prepared), not about training data; the
training (ε, δ) does not follow from them (docs/qprldp.md §7.2). ``qprldp certify`` certifies a
depolarizing channel given by its parameter instead (global or local, any dimension).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from .noise_spec import is_qiskit_noise_model, load_noise_model

__all__ = ["certify_job_device", "format_report", "load_noise_model", "noise_coverage",
           "report_dict"]


#: Qiskit instruction names -> the PennyLane gates the job's circuit is decomposed into.
_QISKIT_GATES = {"cx": "CNOT", "sx": "SX", "x": "PauliX", "rz": "RZ", "id": "Identity"}


def _basis_tape(tape, qml):
    """``tape`` in Qiskit's basis {RZ, SX, X, CNOT}: every ``RY(θ)`` as SX, RZ(θ + π), SX,
    RZ(π) (Qiskit's ZSX form, two SX per rotation), so the noise model's SX errors land where
    a Qiskit device's would (a transpiler may merge gates: the count is per this form)."""
    [tape], _ = qml.transforms.decompose(tape, gate_set={"RZ", "RY", "CNOT", "SX", "PauliX"})
    ops = []
    for op in tape.operations:
        if type(op).__name__ == "RY":
            (w,), theta = op.wires, op.parameters[0]
            ops += [qml.SX(w), qml.RZ(theta + math.pi, w), qml.SX(w), qml.RZ(math.pi, w)]
        else:
            ops.append(op)
    return tape.copy(operations=ops)


def _convertible(condition) -> bool:
    """Whether every ``OpIn`` of a converted condition names PennyLane operation classes
    (pennylane-qiskit turns Qiskit's ``reset`` into a mid-circuit measurement, which ``OpIn``
    cannot compare an operation with: it raises "OpIn does not support arithmetic
    operations ...")."""
    import inspect

    cops = getattr(condition, "_cops", None)
    if cops is not None and not all(inspect.isclass(c) for c in cops):
        return False
    return all(_convertible(c) for c in getattr(condition, "operands", ()))


def _from_qiskit(noise_model, qml):
    """The PennyLane noise model of the convertible part of a Qiskit Aer ``noise_model``
    (:func:`pennylane.from_qiskit_noise` without the conditions it cannot evaluate)."""
    import warnings

    with warnings.catch_warnings():  # readout errors: reported by noise_coverage
        warnings.filterwarnings("ignore", message="Readout errors are not supported")
        converted = qml.from_qiskit_noise(noise_model)
    kept = {c: fn for c, fn in converted.model_map.items() if _convertible(c)}
    return qml.NoiseModel(kept, converted.meas_map, **converted.metadata)


def _depolarizing_part(error) -> float:
    """The depolarizing part p of a Qiskit ``QuantumError`` (0 where it cannot be read)."""
    import numpy as np
    from qiskit.quantum_info import Kraus

    from qprldp_core.channels import Channel, depolarizing_part

    try:
        return float(depolarizing_part(Channel([np.asarray(k) for k in Kraus(error).data])))
    except Exception:  # noqa: BLE001 - unreadable: nothing claimed
        return 0.0


def noise_coverage(noise_model, tape) -> list[dict]:
    """What of a Qiskit Aer ``noise_model`` the certificate covers, on the circuit ``tape``.

    Args:
        noise_model: a ``qiskit_aer.noise.NoiseModel``.
        tape: the job's circuit in Qiskit's basis (before the noise is added).

    Returns:
        One entry per kind of error: ``{"errors": ..., "qubits": [...], "status": "certified" |
        "not covered" | "not applied", "why": ...}`` (applied gate errors also have
        ``"depolarizing_p"``, one per qubit tuple); a certified gate error is certified through
        its depolarizing part p > 0 only (the rest of it, e.g. thermal relaxation, is not); an
        applied one whose part is 0 is "not covered".
    """
    used: dict[str, set] = {}
    for op in tape.operations:
        used.setdefault(type(op).__name__, set()).add(tuple(op.wires))
    out: list[dict] = []
    local = dict(getattr(noise_model, "_local_quantum_errors", {}))
    for gate, error in getattr(noise_model, "_default_quantum_errors", {}).items():
        local.setdefault(gate, {})[("all",)] = error
    for gate in sorted(local):
        qubits = sorted(local[gate])
        name = _QISKIT_GATES.get(gate)
        hit = [q for q in qubits if name in used and (q == ("all",) or q in used[name])]
        miss = [q for q in qubits if q not in hit]
        parts = {q: _depolarizing_part(local[gate][q]) for q in hit}
        certified = [q for q in hit if parts[q] > 0]
        if certified:
            out.append({"errors": f"{gate} gate errors", "qubits": [list(q) for q in certified],
                        "status": "certified",
                        "depolarizing_p": [parts[q] for q in certified],
                        "why": "through each error's depolarizing part (N = D_p o M); the rest "
                               "M (thermal relaxation T1/T2, coherent or other non-depolarizing "
                               "parts) is NOT covered"})
        zero = [q for q in hit if parts[q] <= 0]
        if zero:
            out.append({"errors": f"{gate} gate errors", "qubits": [list(q) for q in zero],
                        "status": "not covered", "depolarizing_p": [0.0] * len(zero),
                        "why": "applied, but their depolarizing part is 0 (e.g. thermal "
                               "relaxation alone): nothing of them is certified"})
        if miss:
            if gate == "reset":
                why = ("PennyLane has no reset gate to attach them to (pennylane-qiskit maps "
                       "reset to a mid-circuit measurement); the job's circuit has no reset")
            elif name is None:
                why = f"no PennyLane gate for Qiskit's {gate!r} is converted here"
            else:
                why = (f"the job's circuit has no {gate} gate on these qubits (qubits or pairs "
                       f"it does not use)")
            out.append({"errors": f"{gate} gate errors", "qubits": [list(q) for q in miss],
                        "status": "not covered" if gate == "reset" or name is None
                        else "not applied", "why": why})
    readout = sorted(getattr(noise_model, "_local_readout_errors", {}))
    if getattr(noise_model, "_default_readout_error", None) is not None:
        readout.append(("all",))
    if readout:
        out.append({"errors": "readout errors", "qubits": [list(q) for q in readout],
                    "status": "not covered",
                    "why": "classical bit flips of the measured outcomes, not a depolarizing "
                           "channel (pennylane-qiskit skips them); not certified here"})
    noiseless = sorted(w for w in used.get("CNOT", ())
                       if not any(list(w) in e["qubits"] for e in out
                                  if e["errors"] == "cx gate errors"))
    if noiseless:
        out.append({"errors": "CNOT without a cx error", "qubits": [list(w) for w in noiseless],
                    "status": "not applied",
                    "why": "the noise model has no cx error on these pairs (not in the "
                           "backend's coupling map): noiseless here, as on Qiskit Aer without "
                           "routing"})
    return out


def certify_job_device(*, epsilon: float, qubits: int = 4, layers: int = 2,
                       depolarizing: float | None = None, noise_model=None,
                       delta: float | None = None):
    r"""Certify the noise of ``qshiftdp train``'s circuit on a noisy device.

    A Qiskit Aer noise model is converted with :func:`pennylane.from_qiskit_noise` (without
    the reset errors, which it cannot apply) on the job's circuit decomposed into Qiskit's basis
    {RZ, SX, X, CNOT}; what the certificate does not cover (the non-depolarizing rest of each
    gate error, reset and readout errors, errors on gates the circuit does not use) is listed in
    the certificate's ``coverage`` (:func:`noise_coverage`).

    Args:
        epsilon: ε ≥ 0 in nats of the certificates.
        qubits: qubits n of the job's circuit (≥ 1).
        layers: StronglyEntanglingLayers (≥ 1).
        depolarizing: PennyLane's ``DepolarizingChannel`` q on every qubit after the last gate
            (q in [0, 0.75]); or
        noise_model: a ``pennylane.NoiseModel`` or a ``qiskit_aer.noise.NoiseModel`` applied
            to the noiseless circuit.
        delta: also report the smallest certified ε at this δ.

    Returns:
        qprldp_core.DeviceCertificate: of the circuit (with its variance floor); its
        ``coverage`` is :func:`noise_coverage`'s (empty without a Qiskit noise model).
    """
    import pennylane as qml
    import torch

    from qprldp_core import certify_device

    from .models import make_qnode

    q = 0.0 if depolarizing is None else depolarizing
    qnode = make_qnode(qubits, layers, device="default.mixed", shots=None, depolarizing=q)
    args = (torch.zeros(qubits, dtype=torch.float64),
            torch.zeros(layers, qubits, 3, dtype=torch.float64))
    coverage: list[dict] = []
    if noise_model is not None and is_qiskit_noise_model(noise_model):
        tape = _basis_tape(qml.workflow.construct_tape(qnode, level="device")(*args), qml)
        coverage = noise_coverage(noise_model, tape)
        [tape], _ = qml.add_noise(tape, _from_qiskit(noise_model, qml))
        cert = certify_device(tape, epsilon=epsilon, delta=delta)
    else:
        if noise_model is not None:
            qnode = qml.add_noise(qnode, noise_model, level="device")  # on the native gates
        cert = certify_device(qnode, epsilon=epsilon, delta=delta, args=args)
    return dataclasses.replace(cert, coverage=tuple(coverage))


def _up(x: float) -> str:
    """A δ or ε bound, rounded up to 6 significant digits, trailing zeros kept (never printed
    below its value; two numbers side by side have the same precision)."""
    if not math.isfinite(x):
        return "inf"
    if x == 0:
        return "0"
    decimals = max(0, 5 - math.floor(math.log10(abs(x))))
    scale = 10.0 ** decimals
    return f"{math.ceil(round(x * scale, 6)) / scale:.{decimals}f}"


def _line(cert) -> str:
    side = {"exact": "exact", "upper_bound": "proven upper bound",
            "lower_bound": "lower bound only"}[cert.side]
    vacuous = " (VACUOUS: every channel satisfies δ = 1)" if cert.vacuous else ""
    return (f"  {cert.notion:<6} (ε = {cert.epsilon:g}, δ = {_up(cert.delta)}) [{side}]"
            f"{vacuous}  {cert.channel_description}")


def format_report(cert, *, source: str, qubits: int, layers: int) -> str:
    """The certificate of :func:`certify_job_device` as text (one line per certificate)."""
    lines = [f"Device noise of the qshiftdp train circuit ({qubits} qubits, {layers} layers, "
             f"readout <Z0>): {source}"]
    found = list(cert.channel_certificates) + list(cert.product_certificates)
    if not found:
        lines.append("  no depolarizing noise found: nothing to certify (v_min = 0).")
    else:
        lines.append("Certificates (QPrLDP: the probability that an output's likelihood ratio "
                     "exceeds e^ε; QLDP: hockey-stick divergence; ε in nats):")
        lines += [_line(c) for c in cert.channel_certificates]
        lines += [_line(c) for c in cert.product_certificates]
    for name, d, p in cert.depolarizing_parts:
        lines.append(f"  {name} on {d.bit_length() - 1} qubit(s): depolarizing part p = "
                     f"{p:.6g}" + ("" if p > 0 else " (none: not certified)"))
    if cert.delta is not None:
        for q, e_qldp, e_qprldp in cert.epsilon_for_delta:
            lines.append(f"  smallest certified ε at δ = {cert.delta:g} for DepolarizingChannel"
                         f"(q={q:g}): QPrLDP {_up(e_qprldp)}, QLDP {_up(e_qldp)} (nats, rounded "
                         f"up)")
    coverage = cert.coverage
    if coverage:
        lines.append("Coverage of the noise model (only the certified parts enter the "
                     "certificates above):")
        for e in coverage:
            ps = e.get("depolarizing_p") if e["status"] == "certified" else None
            qs = ", ".join(("all" if q == ["all"] else "(" + ", ".join(map(str, q)) + ")")
                           + ("" if ps is None else f" p={ps[i]:.4g}")
                           for i, q in enumerate(e["qubits"]))
            lines.append(f"  {e['status'].upper()}: {e['errors']} on {qs}: {e['why']}")
    lines.append(f"Variance floor v_min = {cert.variance_floor:.6g}: a proven lower bound on "
                 f"every shifted circuit's single-shot variance of <Z0>, what `qshiftdp train "
                 f"--credit depolarizing` credits.")
    lines.append("These certify the device channel (input states), not the training data: the "
                 "training (ε, δ) does not follow from them (docs/qprldp.md §7.2).")
    return "\n".join(lines)


def report_dict(cert) -> dict[str, Any]:
    """The certificate as JSON-ready data."""
    def one(c):
        return {"notion": c.notion, "epsilon": c.epsilon, "delta": c.delta, "side": c.side,
                "vacuous": c.vacuous, "channel": c.channel_description,
                "reference": c.reference}
    return {"source": cert.source, "depolarizing_q": list(cert.depolarizing_q),
            "depolarizing_parts": [list(p) for p in cert.depolarizing_parts],
            "final_noise_p": {str(k): v for k, v in cert.final_noise_p.items()},
            "channel_certificates": [one(c) for c in cert.channel_certificates],
            "product_certificates": [one(c) for c in cert.product_certificates],
            "variance_floor": cert.variance_floor, "delta": cert.delta,
            "epsilon_for_delta": [list(e) for e in cert.epsilon_for_delta],
            "coverage": list(cert.coverage)}
