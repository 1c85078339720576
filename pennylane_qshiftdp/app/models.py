r"""Quantum classifiers built on :class:`pennylane.qnn.TorchLayer` (hybrid-friendly).

The default model: angle embedding of :math:`n` features on :math:`n` qubits, ``layers``
:class:`~pennylane.StronglyEntanglingLayers`, output :math:`f = \langle Z_0\rangle \in [-1, 1]`,
prediction :math:`\mathrm{sign}(f)`. Its QNode differentiates with
:func:`pennylane_qshiftdp.param_shift` and records shot statistics into ``recorder``.

With ``n_classes`` :math:`K \ge 3` the same circuit measures :math:`K` commuting Pauli-Z words
(:func:`readout_observables`: :math:`Z_0, \dots, Z_{n-1}`, then :math:`Z_iZ_{i+1}`), each
output in :math:`[-1, 1]`; the prediction is the argmax, and the job trains it with
:class:`~pennylane_qshiftdp.losses.SoftmaxCrossEntropyLoss` on the logits :math:`s f`. The
readouts commute qubit-wise, so on hardware (and under exact-law sampling) they share the
shots of one circuit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import pennylane as qml
import torch

from .._validation import check_nonnegative_float, check_positive_int
from ..gradients.parameter_shift import param_shift, validate_shots
from ..gradients.shot_statistics import ShotRecorder
from ..qnn import TorchLayer
from .config import check_input_center

__all__ = ["SEEDED_DEVICES", "HybridClassifier", "QuantumClassifier", "QuantumNeuronClassifier",
           "make_device", "make_qnode", "make_neuron_qnode", "max_classes",
           "neutral_readout_wire", "readout_observables"]

#: PennyLane simulators that take ``seed=`` and sample shots with a numpy ``Generator``
#: (``device._rng``), which the job seeds and reseeds. Other devices get no seed: qiskit.aer
#: would take ``seed=`` into its run options and ignore it, braket.local.qubit refuses it when
#: it runs, and Aer's ``seed_simulator`` would repeat the same draws in every job (every step).
SEEDED_DEVICES = ("default.qubit", "default.mixed", "lightning.qubit", "lightning.gpu",
                  "lightning.kokkos")


def make_device(name: str, wires: int, *, seed: int | None = None,
                options: dict | None = None) -> qml.devices.Device:
    r"""The PennyLane device ``name`` on ``wires`` wires, seeded where it can be.

    Args:
        name: a PennyLane device name (``"default.qubit"``, ``"lightning.qubit"``,
            ``"qiskit.aer"``, ``"braket.local.qubit"``...).
        wires: number of wires, ≥ 1.
        seed: seed of the shot sampling, passed only to :data:`SEEDED_DEVICES` (every other
            device samples with a generator of its own, not seeded here).
        options: further keyword arguments of the device (e.g. ``{"noise_model": ...}`` for
            qiskit.aer).

    Returns:
        pennylane.devices.Device: the device.

    Raises:
        pennylane.exceptions.DeviceError: for a device name no installed plugin provides.

    Example:
        >>> make_device("default.qubit", 2, seed=1).wires.tolist()
        [0, 1]
    """
    kwargs = dict(options or {})
    if name in SEEDED_DEVICES:
        kwargs["seed"] = seed
    return qml.device(name, wires=check_positive_int(wires, "wires"), **kwargs)


def max_classes(n_qubits: int) -> int:
    r"""Largest number of classes on ``n_qubits`` qubits: :math:`n + (n - 1) = 2n - 1`.

    Example:
        >>> max_classes(4), max_classes(8)
        (7, 15)
    """
    return 2 * check_positive_int(n_qubits, "n_qubits") - 1


def readout_observables(n_qubits: int, n_classes: int) -> list:
    r"""The :math:`K` commuting Pauli-Z readouts of a :math:`K`-class classifier.

    :math:`K = 2` (binary): ``[Z(0)]``, one output. :math:`K \ge 3`: :math:`Z_0, \dots,
    Z_{\min(K, n) - 1}`, then :math:`Z_0Z_1, Z_1Z_2, \dots` until there are :math:`K`; all
    diagonal in the computational basis, eigenvalues :math:`\pm 1`.

    Args:
        n_qubits: number of qubits :math:`n \ge 1`.
        n_classes: number of classes :math:`2 \le K \le \max(2, 2n - 1)` (:func:`max_classes`;
            the binary readout needs one qubit).

    Returns:
        list: the observables, one per output (one for :math:`K = 2`).

    Raises:
        ValueError: for ``n_classes`` below 2 or above :math:`2n - 1` (the message names
            ``n_classes`` and ``n_qubits``).
        TypeError: for a non-integer ``n_qubits`` or ``n_classes``.

    Example:
        >>> readout_observables(3, 4)
        [Z(0), Z(1), Z(2), Z(0) @ Z(1)]
    """
    n = check_positive_int(n_qubits, "n_qubits")
    k = check_positive_int(n_classes, "n_classes")
    if k < 2 or (k > 2 and k > max_classes(n)):  # binary: one readout, any n
        raise ValueError(
            f"`n_classes` must be between 2 and 2 * n_qubits - 1 = {max_classes(n)} "
            f"(n_qubits = {n}: {n} single-qubit Z readouts and {n - 1} neighbouring ZZ pairs). "
            f"Found n_classes={n_classes!r}; use at least {(k + 2) // 2} qubits."
        )
    if k == 2:
        return [qml.Z(0)]
    singles = [qml.Z(i) for i in range(min(k, n))]
    pairs = [qml.Z(i) @ qml.Z(i + 1) for i in range(k - len(singles))]
    return singles + pairs


def make_qnode(n_qubits: int, layers: int, *, device: str = "lightning.qubit",
               shots: int | None = 1000, seed: int | None = None,
               recorder: ShotRecorder | None = None, rotation: str = "Y",
               depolarizing: float = 0.0, n_classes: int = 2,
               device_options: dict | None = None) -> qml.QNode:
    r"""The classifier's QNode ``circuit(inputs, weights) -> ⟨Z_0⟩`` (or a tuple of readouts).

    Args:
        n_qubits: number of qubits (= features), ≥ 1.
        layers: number of StronglyEntanglingLayers, ≥ 1.
        device: a PennyLane device name (``"lightning.qubit"`` or ``"default.qubit"``...).
        shots: shots per circuit :math:`N_s` (positive int) or ``None`` (analytic).
        seed: device seed (shot sampling; only for the simulators of :data:`SEEDED_DEVICES`).
        recorder: :class:`~.ShotRecorder` receiving shot statistics.
        rotation: axis of the angle embedding.
        depolarizing: hardware-noise model: PennyLane's ``DepolarizingChannel(q)`` parameter
            :math:`q \in [0, 3/4]` (the channel :math:`D_p` with :math:`p = 4q/3`) applied to
            every qubit after the last gate; needs ``device="default.mixed"``. Its proven
            variance floor comes from :func:`qprldp_core.certify_device`.
        n_classes: 2 (binary: one output ⟨Z_0⟩) or :math:`K \ge 3` (a tuple of the
            :math:`K` expectation values of :func:`readout_observables`).
        device_options: further keyword arguments of the device (:func:`make_device`).

    Returns:
        pennylane.QNode: with ``diff_method=pennylane_qshiftdp.param_shift``.

    Raises:
        ValueError: for non-positive ``n_qubits``/``layers``, invalid ``shots``, or
            ``n_classes`` outside :math:`[2, 2n - 1]`.
        TypeError: for non-integer ``n_qubits``/``layers``/``n_classes``.

    Example:
        >>> qn = make_qnode(2, 1, device="default.qubit", shots=None)
        >>> float(qn(torch.zeros(2), torch.zeros(1, 2, 3)))
        1.0
    """
    check_positive_int(n_qubits, "n_qubits")
    check_positive_int(layers, "layers")
    validate_shots(shots)
    observables = readout_observables(n_qubits, n_classes)
    if not (0.0 <= depolarizing <= 0.75):
        raise ValueError(f"`depolarizing` (PennyLane's q) must be in [0, 0.75]. "
                         f"Found {depolarizing!r}.")
    if depolarizing > 0 and device != "default.mixed":
        raise ValueError(f"`depolarizing` > 0 needs a mixed-state simulator: pass "
                         f"device='default.mixed'. Found device={device!r}.")
    dev = make_device(device, n_qubits, seed=seed, options=device_options)
    gradient_kwargs = {"recorder": recorder} if recorder is not None else {}

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n_qubits), rotation=rotation)
        qml.StronglyEntanglingLayers(weights, wires=range(n_qubits))
        if depolarizing > 0:
            for wire in range(n_qubits):
                qml.DepolarizingChannel(depolarizing, wires=wire)
        if len(observables) == 1:
            return qml.expval(observables[0])
        # a tuple (not a list): TorchLayer then stacks the readouts as (K, B, 1) on every path
        return tuple(qml.expval(o) for o in observables)

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                      gradient_kwargs=gradient_kwargs)
    return qml.set_shots(qnode, shots=shots)


@functools.lru_cache(maxsize=32)
def neutral_readout_wire(n_qubits: int, layers: int) -> int:
    r"""The wire whose last-layer rotation makes the binary readout start at zero.

    With every weight zero, the circuit (real ``RY`` embedding, identity rotations, CNOTs)
    keeps a real state :math:`|\psi(x)\rangle`. Setting the last layer's rotation on wire
    :math:`w` to :math:`\mathrm{Rot}(\pi/2, \pi/2, 0)` turns :math:`Z` on that wire into
    :math:`\pm Y`; if :math:`w` lies in the support of the Heisenberg image of :math:`Z_0`
    under the last CNOT block, the readout becomes :math:`\langle\psi(x)|P|\psi(x)\rangle`
    for a Pauli string :math:`P` with one :math:`Y`, which vanishes on every real state: the
    classifier starts at :math:`f(x) = 0` for every input — neither right nor inverted. (Derived
    here.) Found by evaluating the analytic circuit at 8 seeded random inputs of
    :math:`[0, \pi]^n` for each wire in turn (no data involved).

    Args:
        n_qubits: number of qubits, ≥ 1.
        layers: number of StronglyEntanglingLayers, ≥ 1.

    Returns:
        int: the first wire :math:`w` with :math:`\max_x |f(x)| < 10^{-9}`.

    Raises:
        RuntimeError: if no wire neutralises the readout (not the case for this circuit).

    Example:
        >>> neutral_readout_wire(4, 2)
        2
    """
    check_positive_int(n_qubits, "n_qubits")
    check_positive_int(layers, "layers")
    qnode = make_qnode(n_qubits, layers, device="default.qubit", shots=None)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(8, n_qubits, generator=gen, dtype=torch.float64) * math.pi
    for wire in range(n_qubits):
        w = torch.zeros(layers, n_qubits, 3, dtype=torch.float64)
        w[-1, wire, 0] = w[-1, wire, 1] = math.pi / 2
        with torch.no_grad():
            f = torch.as_tensor(qnode(x, w))
        if float(f.abs().max()) < 1e-9:
            return wire
    raise RuntimeError(f"No last-layer rotation neutralises the readout of a {n_qubits}-qubit, "
                       f"{layers}-layer circuit.")


class _Predictions:
    """``predict`` for a classifier with ``n_outputs`` readouts (one: sign; several: argmax)."""

    n_outputs: int
    forward: Callable[[torch.Tensor], torch.Tensor]

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """Labels in {−1, +1} (two classes) or class indices 0..K−1 as float64 (argmax)."""
        with torch.no_grad():
            out = self.forward(x)
            if self.n_outputs == 1:
                return torch.where(out >= 0, 1.0, -1.0)
            return out.argmax(dim=-1).to(torch.float64)


class QuantumClassifier(_Predictions, torch.nn.Module):
    r"""Angle embedding + StronglyEntanglingLayers classifier (a ``TorchLayer``).

    ``n_classes=2`` (default): output :math:`\langle Z_0\rangle` of shape ``(B,)``, labels
    :math:`\pm 1`, prediction by sign. ``n_classes`` :math:`= K \ge 3`: outputs of shape
    ``(B, K)`` (:func:`readout_observables`, each in :math:`[-1, 1]`), prediction
    :math:`\arg\max_k f_k` (class indices).

    Args:
        n_qubits: number of qubits and input features.
        layers: number of entangling layers.
        device, shots, seed, recorder, depolarizing: as in :func:`make_qnode`.
        device_options: as in :func:`make_qnode`.
        init_scale: standard deviation of the near-identity weight initialisation.
        init_seed: seed of the weight initialisation.
        n_classes: number of classes :math:`K`, from 2 to :math:`2n - 1`.
        init: ``"neutral"`` (binary default): near-identity weights plus the last-layer
            rotation of :func:`neutral_readout_wire` set to :math:`(\pi/2, \pi/2, \cdot)`, so
            that :math:`f(x) \approx 0` for every input at the start (with a near-identity
            start the untrained classifier is a fixed function of the first feature, which can
            be the task inverted: digits 0 vs 1 starts at 2 % accuracy and DP noise can leave
            it stuck); ``"small"``: near-identity weights only (multi-class default, where the
            readouts cannot all start at zero). ``"auto"`` picks by ``n_classes``.

    Raises:
        ValueError: for ``n_classes`` outside :math:`[2, 2n - 1]` (names ``n_classes`` and
            ``n_qubits``), a negative ``init_scale``, an unknown ``init`` or
            ``init="neutral"`` with ``n_classes`` ≥ 3.

    Example:
        >>> model = QuantumClassifier(2, 1, device="default.qubit", shots=None, init_scale=0.0)
        >>> model(torch.zeros(3, 2)).shape
        torch.Size([3])
        >>> model = QuantumClassifier(2, 1, device="default.qubit", shots=None, n_classes=3)
        >>> model(torch.zeros(4, 2, dtype=torch.float64)).shape
        torch.Size([4, 3])
    """

    def __init__(self, n_qubits: int = 4, layers: int = 2, *, device: str = "lightning.qubit",
                 shots: int | None = 1000, seed: int | None = None,
                 recorder: ShotRecorder | None = None, init_scale: float = 0.01,
                 init_seed: int = 0, depolarizing: float = 0.0, n_classes: int = 2,
                 init: str = "auto", device_options: dict | None = None):
        super().__init__()
        check_nonnegative_float(init_scale, "init_scale")
        if init not in ("auto", "neutral", "small"):
            raise ValueError(f"`init` must be 'auto', 'neutral' or 'small'. Found {init!r}.")
        if init == "neutral" and n_classes != 2:
            raise ValueError(f"`init='neutral'` is for the binary readout (n_classes=2). Found "
                             f"n_classes={n_classes!r}; use init='small'.")
        neutral = init == "neutral" or (init == "auto" and n_classes == 2)
        self.n_qubits, self.layers, self.shots = n_qubits, layers, shots
        self.depolarizing = depolarizing
        self.qnode = make_qnode(n_qubits, layers, device=device, shots=shots, seed=seed,
                                recorder=recorder, depolarizing=depolarizing,
                                n_classes=n_classes, device_options=device_options)
        self.n_classes = int(n_classes)
        self.n_outputs = 1 if self.n_classes == 2 else self.n_classes
        gen = torch.Generator().manual_seed(init_seed)

        def init_weights(tensor):
            with torch.no_grad():
                tensor.copy_(torch.randn(tensor.shape, generator=gen) * init_scale)
                if neutral:
                    tensor[-1, neutral_readout_wire(n_qubits, layers), :2] = math.pi / 2
            return tensor

        self.qlayer = TorchLayer(self.qnode, {"weights": (layers, n_qubits, 3)},
                                 init_method=init_weights)

    def _readouts(self, x: torch.Tensor) -> torch.Tensor:
        """The TorchLayer's outputs as ``(B, n_outputs)`` (``(n_outputs,)`` for one example)."""
        out = self.qlayer(x)
        if self.n_outputs == 1:
            return out.reshape(-1, 1) if x.ndim > 1 else out.reshape(1)
        # several measurements: TorchLayer stacks them along the first axis, (K, B, 1)
        if x.ndim == 1:
            return out.reshape(self.n_outputs)
        return out.reshape(self.n_outputs, -1).transpose(0, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self._readouts(x)
        return out.reshape(-1) if self.n_outputs == 1 else out

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



class HybridClassifier(QuantumClassifier):
    r"""Hybrid classifier: ``Linear → π·sigmoid (angles) → TorchLayer → Linear``.

    The classical layers are trainable (their per-example gradients come from Opacus; the
    quantum weights' from :func:`~pennylane_qshiftdp.param_shift`). The input layer starts as
    the identity and the output layer as :math:`y = f`, so at initialisation the model is the
    :class:`QuantumClassifier` on the angles :math:`\pi\,\mathrm{sigmoid}(x)`.

    Args:
        n_qubits, layers, device, shots, seed, recorder, init_scale, init_seed: as in
            :class:`QuantumClassifier`.
        depolarizing, device_options: as in :class:`QuantumClassifier`.
        n_features: number of input features (default ``n_qubits``).
        n_classes: as in :class:`QuantumClassifier`; the output layer is
            ``Linear(n_outputs, n_outputs)``, initialised as the identity.

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
        m = self.n_outputs
        self.post = torch.nn.Linear(m, m).double()
        with torch.no_grad():
            self.pre.weight.copy_(torch.eye(n_qubits, n_features))
            self.pre.bias.zero_()
            self.post.weight.copy_(torch.eye(m))
            self.post.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angles = math.pi * torch.sigmoid(self.pre(x.double()))
        f = self._readouts(angles)
        out = self.post(f)
        return out.reshape(-1) if self.n_outputs == 1 else out


def make_neuron_qnode(*, device: str | qml.devices.Device = "default.qubit",
                      shots: int | None = 1000, seed: int | None = None,
                      recorder: ShotRecorder | None = None) -> qml.QNode:
    r"""One output of :class:`QuantumNeuronClassifier`: ``circuit(inputs, weights) -> ⟨Z⟩``.

    On one qubit: :math:`R_Y(a)` with the input angle :math:`a`, then
    :math:`\mathrm{Rot}(\phi, \theta, \omega)`; the output is :math:`\langle Z\rangle =
    \cos\theta\cos a - \sin\theta\cos\phi\sin a` (derived here: :math:`R_Z(\phi)` turns
    the Bloch vector :math:`(\sin a, 0, \cos a)` about :math:`z`, :math:`R_Y(\theta)` tilts it,
    :math:`R_Z(\omega)` leaves :math:`\langle Z\rangle` unchanged).

    Args:
        device: a PennyLane device name, or a one-wire device to share between outputs (then
            ``seed`` must be ``None``: the device has its own).
        shots, seed, recorder: as in :func:`make_qnode`.

    Returns:
        pennylane.QNode: ``inputs`` of shape ``(1,)`` or ``(B, 1)``, ``weights`` of shape
        ``(3,)``; with ``diff_method=pennylane_qshiftdp.param_shift``.

    Raises:
        ValueError: for invalid ``shots``, or a ``seed`` given with a device object.

    Example:
        >>> qn = make_neuron_qnode(shots=None)
        >>> w = torch.tensor([0.2, 0.7, 0.0])
        >>> expected = math.cos(0.7) * math.cos(0.3) - math.sin(0.7) * math.cos(0.2) * math.sin(0.3)
        >>> abs(float(qn(torch.tensor([0.3]), w)) - expected) < 1e-6
        True
    """
    validate_shots(shots)
    if isinstance(device, str):
        dev = make_device(device, 1, seed=seed)
    elif seed is not None:
        raise ValueError(f"`seed` is for a device made here; a device object has its own. "
                         f"Found seed={seed!r} with device={device!r}.")
    else:
        dev = device
    gradient_kwargs = {"recorder": recorder} if recorder is not None else {}

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=[0], rotation="Y")
        qml.Rot(weights[0], weights[1], weights[2], wires=0)
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                      gradient_kwargs=gradient_kwargs)
    return qml.set_shots(qnode, shots=shots)


class QuantumNeuronClassifier(_Predictions, torch.nn.Module):
    r"""A linear layer on all features feeding one qubit per output: ``Linear → RY → Rot → ⟨Z⟩``.

    The input angles :math:`x \in [0, \pi]^d` are centred at a fixed public point :math:`c`,
    :math:`a = W(x - c) + b` with :math:`W \in \mathbb{R}^{M \times d}` (``input_center``:
    :math:`c = \pi/2` by default, the middle of the declared range), and output :math:`q` is
    :math:`f_q = \langle Z\rangle` of :math:`\mathrm{Rot}(\phi_q, \theta_q, \omega_q)
    R_Y(a_q)|0\rangle` (:func:`make_neuron_qnode`), in :math:`[-1, 1]`. :math:`M = 1` for two
    classes (prediction :math:`\mathrm{sign}\,f`, labels :math:`\pm 1`), :math:`M = K`
    otherwise (prediction :math:`\arg\max_q f_q`). The start is neutral: :math:`W = 0`,
    :math:`b = 0` and :math:`\theta_q = \pi/2` (plus ``init_scale`` noise), so
    :math:`f_q \approx -\sin a_q = 0` for every input.

    As a function of the input this is a generalised linear model with a bounded periodic
    link, :math:`f = \cos\theta\cos a - \sin\theta\cos\phi\sin a`: the quantum part is one
    rotation per output. No gate couples the outputs' qubits, so each output is its own
    one-qubit TorchLayer (``qlayers``), all on one shared one-wire device (one shot generator,
    reseeded as one); the law of every shot estimate is that of the :math:`M`-qubit product
    circuit. It is what trains well under DP-SGD on small tabular data
    (``benchmarks/RESULTS.md``, "Utility against linear DP-SGD"); deeper circuits did not.

    Args:
        n_features: number of input features :math:`d \ge 1`.
        n_classes: number of classes :math:`K \ge 2`.
        device: a PennyLane device name.
        shots, seed, recorder, device_options: as in :func:`make_qnode`.
        init_scale: standard deviation of the noise on the rotation angles (≥ 0).
        init_seed: seed of that noise.
        input_center: the centre :math:`c` subtracted from every input angle (radians, in
            :math:`[-\pi, 2\pi]`; public: it must not be computed from the data). It does not change
            what the model can represent (:math:`b` absorbs :math:`Wc`), only where training
            starts and how the per-example gradients :math:`\partial a/\partial W = x - c`
            are conditioned, which matters under clipping (``qshiftdp train`` uses 1.0 for
            breast cancer, see :mod:`pennylane_qshiftdp.app.defaults`).

    Raises:
        ValueError: for ``n_classes`` below 2, a non-positive ``n_features``, a negative
            ``init_scale`` or an ``input_center`` outside :math:`[-\pi, 2\pi]`.
        TypeError: for an ``input_center`` that is not a real number.

    Example:
        >>> model = QuantumNeuronClassifier(5, 2, shots=None, init_scale=0.0)
        >>> model(torch.rand(3, 5, dtype=torch.float64)).abs().max().item() < 1e-6
        True
        >>> QuantumNeuronClassifier(5, 3, shots=None)(torch.zeros(4, 5)).shape
        torch.Size([4, 3])
    """

    def __init__(self, n_features: int, n_classes: int = 2, *, device: str = "default.qubit",
                 shots: int | None = 1000, seed: int | None = None,
                 recorder: ShotRecorder | None = None, init_scale: float = 0.01,
                 init_seed: int = 0, device_options: dict | None = None,
                 input_center: float = math.pi / 2):
        super().__init__()
        d = check_positive_int(n_features, "n_features")
        self.input_center = check_input_center(input_center, "input_center")
        k = check_positive_int(n_classes, "n_classes")
        if k < 2:
            raise ValueError(f"`n_classes` must be at least 2. Found {n_classes!r}.")
        check_nonnegative_float(init_scale, "init_scale")
        self.n_features, self.n_classes, self.shots = d, k, shots
        self.n_outputs = 1 if k == 2 else k
        self.n_qubits, self.depolarizing = self.n_outputs, 0.0
        self.pre = torch.nn.Linear(d, self.n_outputs).double()
        with torch.no_grad():
            self.pre.weight.zero_()
            self.pre.bias.zero_()
        #: the one-wire device every output runs on (its shot generator is the model's)
        self.device = make_device(device, 1, seed=seed, options=device_options)
        gen = torch.Generator().manual_seed(init_seed)

        def init(tensor):
            with torch.no_grad():
                tensor.copy_(torch.randn(tensor.shape, generator=gen) * init_scale)
                tensor[1] += math.pi / 2
            return tensor

        self.qnodes = [make_neuron_qnode(device=self.device, shots=shots, recorder=recorder)
                       for _ in range(self.n_outputs)]
        self.qlayers = torch.nn.ModuleList(
            TorchLayer(qnode, {"weights": (3,)}, init_method=init) for qnode in self.qnodes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        angles = self.pre(x.double() - self.input_center)
        if x.ndim == 1:
            out = torch.stack([layer(angles[q:q + 1]).reshape(())
                               for q, layer in enumerate(self.qlayers)])
            return out.reshape(()) if self.n_outputs == 1 else out
        out = torch.stack([layer(angles[:, q:q + 1]).reshape(-1)
                           for q, layer in enumerate(self.qlayers)], dim=1)
        return out.reshape(-1) if self.n_outputs == 1 else out

    def variance_floor(self) -> float:
        """0: the model has no device noise, so no single-shot variance floor is proven."""
        return 0.0
