r"""``qshiftdp certify``: the QPrLDP certificate of a device's depolarizing noise.

The device is the one ``qshiftdp train`` simulates: the job's circuit (angle embedding,
StronglyEntanglingLayers, readout ⟨Z₀⟩) on ``--qubits`` qubits, with either

* ``--depolarizing q``: PennyLane's ``DepolarizingChannel(q)`` on every qubit after the last
  gate (what ``qshiftdp train --depolarizing q`` trains with), or
* ``--noise-model MODULE:NAME``: a PennyLane ``NoiseModel`` (or a Qiskit Aer noise model,
  converted with :func:`pennylane.from_qiskit_noise`; or a function returning either), applied
  to the circuit with :func:`pennylane.add_noise`. Each of its channels counts through its
  depolarizing part (:func:`qprldp_core.depolarizing_part`).

:func:`qprldp_core.certify_device` reads the noise and returns the QPrLDP and QLDP certificates
of every noise channel, of the final noise layer on all qubits, and the variance floor
:math:`v_{\min}` that ``--credit depolarizing`` uses. These certificates are about the device
channel (how well it hides which input state was prepared), not about training data; the
training (ε, δ) does not follow from them (docs/qprldp.md §7.2). ``qprldp certify`` certifies a
depolarizing channel given by its parameter instead (global or local, any dimension).
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
from typing import Any

__all__ = ["certify_job_device", "format_report", "load_noise_model", "report_dict"]


def load_noise_model(spec: str):
    """The noise model named by ``MODULE:NAME`` or ``path/to/file.py:NAME``.

    ``NAME`` may be a ``pennylane.NoiseModel``, a Qiskit Aer ``NoiseModel`` (converted with
    :func:`pennylane.from_qiskit_noise`, which needs pennylane-qiskit), or a callable of no
    arguments returning either.

    Raises:
        ValueError: for a spec without ``:``, a module or attribute that cannot be loaded, or
            an object that is not a noise model.
    """
    import pennylane as qml

    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"`noise_model` must be MODULE:NAME or path/to/file.py:NAME. Found "
                         f"{spec!r}.")
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            loader = importlib.util.spec_from_file_location("_qshiftdp_noise_model", module_name)
            if loader is None or loader.loader is None:
                raise ImportError(f"no such file: {module_name}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        obj = getattr(module, attr)
    except (ImportError, AttributeError, OSError) as err:
        raise ValueError(f"`noise_model` {spec!r} cannot be loaded: {type(err).__name__}: "
                         f"{err}") from err
    if callable(obj) and not isinstance(obj, qml.NoiseModel):
        obj = obj()
    if isinstance(obj, qml.NoiseModel):
        return obj
    if type(obj).__module__.startswith("qiskit_aer"):
        return qml.from_qiskit_noise(obj)
    raise ValueError(f"`noise_model` {spec!r} must name a pennylane.NoiseModel or a Qiskit Aer "
                     f"NoiseModel. Found {type(obj).__name__}.")


def certify_job_device(*, epsilon: float, qubits: int = 4, layers: int = 2,
                       depolarizing: float | None = None, noise_model=None,
                       delta: float | None = None):
    r"""Certify the noise of ``qshiftdp train``'s circuit on a noisy device.

    Args:
        epsilon: ε ≥ 0 in nats of the certificates.
        qubits: qubits n of the job's circuit (≥ 1).
        layers: StronglyEntanglingLayers (≥ 1).
        depolarizing: PennyLane's ``DepolarizingChannel`` q on every qubit after the last gate
            (q in [0, 0.75]); or
        noise_model: a ``pennylane.NoiseModel`` applied to the noiseless circuit.
        delta: also report the smallest certified ε at this δ.

    Returns:
        qprldp_core.DeviceCertificate: of the circuit (with its variance floor).
    """
    import pennylane as qml
    import torch

    from qprldp_core import certify_device

    from .models import make_qnode

    q = 0.0 if depolarizing is None else depolarizing
    qnode = make_qnode(qubits, layers, device="default.mixed", shots=None, depolarizing=q)
    if noise_model is not None:
        qnode = qml.add_noise(qnode, noise_model, level="device")  # on the native gates
    args = (torch.zeros(qubits, dtype=torch.float64),
            torch.zeros(layers, qubits, 3, dtype=torch.float64))
    return certify_device(qnode, epsilon=epsilon, delta=delta, args=args)


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
            "epsilon_for_delta": [list(e) for e in cert.epsilon_for_delta]}
