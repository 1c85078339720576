r"""Quantum classifiers built on :class:`pennylane.qnn.TorchLayer` (hybrid-friendly).

The default model: angle embedding of :math:`n` features on :math:`n` qubits, ``layers``
:class:`~pennylane.StronglyEntanglingLayers`, output :math:`f = \langle Z_0\rangle \in [-1, 1]`,
prediction :math:`\mathrm{sign}(f)`. Its QNode differentiates with
:func:`pennylane_qshiftdp.param_shift` and records shot statistics into ``recorder``.
"""

from __future__ import annotations

import math

import pennylane as qml
import torch

from ._validation import check_nonnegative_float, check_positive_int
from .shot_statistics import ShotRecorder
from .transform import param_shift, validate_shots

__all__ = ["HybridClassifier", "QuantumClassifier", "make_qnode"]


def make_qnode(n_qubits: int, layers: int, *, device: str = "lightning.qubit",
               shots: int | None = 1000, seed: int | None = None,
               recorder: ShotRecorder | None = None, rotation: str = "Y",
               depolarizing: float = 0.0) -> qml.QNode:
    r"""The classifier's QNode ``circuit(inputs, weights) -> ⟨Z_0⟩``.

    Args:
        n_qubits: number of qubits (= features), ≥ 1.
        layers: number of StronglyEntanglingLayers, ≥ 1.
        device: a PennyLane device name (``"lightning.qubit"`` or ``"default.qubit"``...).
        shots: shots per circuit :math:`N_s` (positive int) or ``None`` (analytic).
        seed: device seed (shot sampling).
        recorder: :class:`~.ShotRecorder` receiving shot statistics.
        rotation: axis of the angle embedding.
        depolarizing: hardware-noise model: PennyLane's ``DepolarizingChannel(q)`` parameter
            :math:`q \in [0, 3/4]` (the channel :math:`D_p` with :math:`p = 4q/3`) applied to
            every qubit after the last gate; needs ``device="default.mixed"``. Its proven
            variance floor comes from :func:`qprldp_core.certify_device`.

    Returns:
        pennylane.QNode: with ``diff_method=pennylane_qshiftdp.param_shift``.

    Raises:
        ValueError: for non-positive ``n_qubits``/``layers`` or invalid ``shots``.
        TypeError: for non-integer ``n_qubits``/``layers``.

    Example:
        >>> qn = make_qnode(2, 1, device="default.qubit", shots=None)
        >>> float(qn(torch.zeros(2), torch.zeros(1, 2, 3)))
        1.0
    """
    check_positive_int(n_qubits, "n_qubits")
    check_positive_int(layers, "layers")
    validate_shots(shots)
    if not (0.0 <= depolarizing <= 0.75):
        raise ValueError(f"`depolarizing` (PennyLane's q) must be in [0, 0.75]. "
                         f"Found {depolarizing!r}.")
    if depolarizing > 0 and device != "default.mixed":
        raise ValueError(f"`depolarizing` > 0 needs a mixed-state simulator: pass "
                         f"device='default.mixed'. Found device={device!r}.")
    dev = qml.device(device, wires=n_qubits, seed=seed)
    gradient_kwargs = {"recorder": recorder} if recorder is not None else {}

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n_qubits), rotation=rotation)
        qml.StronglyEntanglingLayers(weights, wires=range(n_qubits))
        if depolarizing > 0:
            for wire in range(n_qubits):
                qml.DepolarizingChannel(depolarizing, wires=wire)
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                      gradient_kwargs=gradient_kwargs)
    return qml.set_shots(qnode, shots=shots)


class QuantumClassifier(torch.nn.Module):
    r"""Angle embedding + StronglyEntanglingLayers binary classifier (a ``TorchLayer``).

    Args:
        n_qubits: number of qubits and input features.
        layers: number of entangling layers.
        device, shots, seed, recorder, depolarizing: as in :func:`make_qnode`.
        init_scale: standard deviation of the near-identity weight initialisation.
        init_seed: seed of the weight initialisation.

    Example:
        >>> model = QuantumClassifier(2, 1, device="default.qubit", shots=None, init_scale=0.0)
        >>> model(torch.zeros(3, 2)).shape
        torch.Size([3])
    """

    def __init__(self, n_qubits: int = 4, layers: int = 2, *, device: str = "lightning.qubit",
                 shots: int | None = 1000, seed: int | None = None,
                 recorder: ShotRecorder | None = None, init_scale: float = 0.01,
                 init_seed: int = 0, depolarizing: float = 0.0):
        super().__init__()
        check_nonnegative_float(init_scale, "init_scale")
        self.n_qubits, self.layers, self.shots = n_qubits, layers, shots
        self.depolarizing = depolarizing
        self.qnode = make_qnode(n_qubits, layers, device=device, shots=shots, seed=seed,
                                recorder=recorder, depolarizing=depolarizing)
        gen = torch.Generator().manual_seed(init_seed)

        def init(tensor):
            with torch.no_grad():
                tensor.copy_(torch.randn(tensor.shape, generator=gen) * init_scale)
            return tensor

        self.qlayer = qml.qnn.TorchLayer(self.qnode, {"weights": (layers, n_qubits, 3)},
                                         init_method=init)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.qlayer(x)
        return out.reshape(-1)

    def variance_floor(self) -> float:
        r"""Proven lower bound :math:`v_{\min}` on every circuit's single-shot variance.

        From :func:`qprldp_core.certify_device` on this model's circuit (0 without noise).
        """
        from qprldp_core import certify_device

        weights = self.qlayer.weights.detach().double()
        # ε only labels the certificates that come with the floor; the floor does not use it.
        cert = certify_device(self.qnode, epsilon=1.0,
                              args=(torch.zeros(self.n_qubits, dtype=torch.float64), weights))
        return float(cert.variance_floor)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Labels in {−1, +1}."""
        with torch.no_grad():
            return torch.where(self.forward(x) >= 0, 1.0, -1.0)


class HybridClassifier(QuantumClassifier):
    r"""Hybrid classifier: ``Linear → π·sigmoid (angles) → TorchLayer → Linear``.

    The classical layers are trainable (their per-example gradients come from Opacus; the
    quantum weights' from :func:`~pennylane_qshiftdp.param_shift`). The input layer starts as
    the identity and the output layer as :math:`y = f`, so at initialisation the model is the
    :class:`QuantumClassifier` on the angles :math:`\pi\,\mathrm{sigmoid}(x)`.

    Args:
        n_qubits, layers, device, shots, seed, recorder, init_scale, init_seed, depolarizing:
            as in :class:`QuantumClassifier`.
        n_features: number of input features (default ``n_qubits``).

    Example:
        >>> model = HybridClassifier(2, 1, device="default.qubit", shots=None)
        >>> model(torch.zeros(3, 2, dtype=torch.float64)).shape
        torch.Size([3])
    """

    def __init__(self, n_qubits: int = 4, layers: int = 2, *, n_features: int | None = None,
                 **kwargs):
        super().__init__(n_qubits, layers, **kwargs)
        n_features = n_qubits if n_features is None else check_positive_int(n_features,
                                                                            "n_features")
        self.pre = torch.nn.Linear(n_features, n_qubits).double()
        self.post = torch.nn.Linear(1, 1).double()
        with torch.no_grad():
            self.pre.weight.copy_(torch.eye(n_qubits, n_features))
            self.pre.bias.zero_()
            self.post.weight.fill_(1.0)
            self.post.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angles = math.pi * torch.sigmoid(self.pre(x.double()))
        f = self.qlayer(angles).reshape(-1, 1)
        return self.post(f).reshape(-1)
