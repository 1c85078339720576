r"""A clip norm from public information only: the gradient's size over the input domain.

The certified bound Δ of the parameter-shift gradient holds for every input, every weight and
every shot outcome, so it is loose for the weights a model actually has. At the current weights
:math:`\theta_t` (public: a post-processing of the released noisy gradients) the per-example
gradient of a loss with :math:`\|\nabla_f\ell\|_1 \le L_1`, :math:`\|\nabla_f\ell\|_2 \le L_2` is
bounded by

.. math::

    G(\theta_t) = \sup_{x \in [a, b]^n} \min\Big(L_1 \max_m \|\nabla_\theta f_m(x;\theta_t)\|_2,\;
        L_2 \,\|J(x;\theta_t)\|_2\Big),

where :math:`J` is the :math:`M \times P` Jacobian with rows :math:`\nabla_\theta f_m` and
:math:`\|J\|_2` its spectral norm: the per-example gradient is :math:`J^\top a` with
:math:`a = \nabla_f\ell`, so :math:`\|J^\top a\|_2 \le \sum_m |a_m|\,\|\nabla_\theta f_m\|_2
\le L_1 \max_m \|\nabla_\theta f_m\|_2` and :math:`\|J^\top a\|_2 \le \|J\|_2 \|a\|_2 \le L_2
\|J\|_2`. Both hold for every admissible :math:`a` (every label and every output the loss's
certified bounds cover), so at the evaluated points the bound is never below the analytic
gradient any example can produce (shot-noise estimates may exceed it; they are then clipped);
for one output :math:`\|J\|_2 = \|\nabla_\theta f\|_2`. (For several outputs the
spectral norm replaces the Frobenius norm :math:`\sqrt{\sum_m \|\nabla_\theta f_m\|^2}` used
before: 4 to 17 % smaller for the 3- and 10-readout classifiers; the largest actual
cross-entropy gradient over the labels, which ``loss=`` computes instead, is a further 20 to
40 % below, measured at the same points.)

:math:`G(\theta_t)` depends on the circuit, the declared input domain and :math:`\theta_t`, never on
the training data. :func:`domain_gradient_bound` estimates it by evaluating the analytic
Jacobian at random points of the domain (and the box's corners and centre) and taking the
largest value. The estimate may fall short of the supremum; that costs a little bias (a clip
that binds), never privacy: the optimizer clips at whatever norm is used, and the noise is σ
times that norm (docs/engine.md §1). Using it costs no privacy budget because it never touches
the data.

References:
    Derived here. Clip norms from public information: Abadi et al., arXiv:1607.00133 §3.1
    (clipping); Andrew et al., arXiv:1905.03871 (a private, adaptive alternative).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pennylane as qml
import torch

from .._validation import check_positive_float, check_positive_int

if TYPE_CHECKING:
    from ..losses import BoundedLoss

__all__ = ["domain_gradient_bound", "synthetic_batch", "synthetic_gradient_norms",
           "calibrated_clip_norm", "CALIBRATION_QUANTILE", "CALIBRATION_EXAMPLES"]

#: Quantile of the synthetic per-example gradient norms that ``max_grad_norm="calibrated"``
#: clips at (the median: half the synthetic examples are clipped; docs/utility.md).
CALIBRATION_QUANTILE = 0.5
#: Synthetic examples the calibrated clip is computed from.
CALIBRATION_EXAMPLES = 64

# More corners than this are not enumerated (2**n grows fast); random points cover the rest.
_MAX_CORNERS = 64
# Points per direct Jacobian when the circuit does not broadcast its weights.
_CHUNK = 16


def _points(n_in: int, low: float, high: float, samples: int, seed) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    pts = [rng.uniform(low, high, size=(samples, n_in)), np.full((1, n_in), (low + high) / 2)]
    if 2**n_in <= _MAX_CORNERS:
        pts.append(np.array(list(itertools.product((low, high), repeat=n_in)), dtype=float))
    return torch.as_tensor(np.concatenate(pts), dtype=torch.float64)


def domain_gradient_bound(layer: qml.qnn.TorchLayer, *, input_range: tuple[float, float],
                          n_inputs: int, loss_grad_bounds: tuple[float, float],
                          samples: int = 256, seed: int | Sequence[int] | None = 0,
                          loss: BoundedLoss | None = None) -> float:
    r"""Largest per-example gradient norm over sampled points of the input domain (see module).

    Args:
        layer: the TorchLayer (its current weights are used; the QNode's function is evaluated
            analytically with backpropagation on ``default.qubit``).
        input_range: ``(a, b)``: every input feature lies in :math:`[a, b]` (public knowledge of
            the preprocessing, e.g. angles in :math:`[0, \pi]`).
        n_inputs: number of input features n ≥ 1.
        loss_grad_bounds: ``(L1, L2)`` bounds on :math:`\nabla_f\ell` (from the declared loss).
        samples: random points, ≥ 1 (plus the centre and, for n ≤ 6, the corners).
        seed: seed of the points (public randomness).
        loss: optional; a :class:`~pennylane_qshiftdp.losses.SoftmaxCrossEntropyLoss` with two
            or more outputs makes the bound at each point the largest actual per-example
            gradient over the labels, :math:`\max_c \|J(x)^\top \nabla_f\ell(f(x), c)\|_2` at
            the analytic outputs :math:`f(x)` (what an example at :math:`x` produces
            analytically; never above the norm-based bound, measured 20 to 40 % below it for
            3 and 10 readouts). Other losses, or ``None``: the norm-based bound of the module
            docstring.

    Returns:
        float: the estimate of :math:`G(\theta_t)`, ≥ 0.

    Raises:
        ValueError: for an empty or reversed range, or non-positive counts.

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> layer = qml.qnn.TorchLayer(circuit,
        ...                            {"weights": (1, 2, 3)})
        >>> with torch.no_grad():
        ...     _ = layer.weights.zero_()
        >>> bound = domain_gradient_bound(layer, input_range=(0, 3.1416), n_inputs=2,
        ...                               loss_grad_bounds=(1.0, 1.0))
        >>> 0.99 < bound <= 6 ** 0.5  # |∂⟨Z0⟩/∂θ| ≤ 1 at x = π/2; far below Δ = √6
        True
    """
    low, high = (float(v) for v in input_range)
    if not (np.isfinite(low) and np.isfinite(high) and high > low):
        raise ValueError(f"`input_range` must be (low, high) with low < high. Found "
                         f"{input_range!r}.")
    n_in = check_positive_int(n_inputs, "n_inputs")
    samples = check_positive_int(samples, "samples")
    l1, l2 = (check_positive_float(v, "loss_grad_bounds") for v in loss_grad_bounds)
    names = list(layer.qnode_weights)
    shapes = [tuple(layer.qnode_weights[k].shape) for k in names]
    sizes = [int(np.prod(s)) if s else 1 for s in shapes]
    flat = torch.cat([layer.qnode_weights[k].detach().double().reshape(-1) for k in names])
    name = "default.mixed" if layer.qnode.device.name == "default.mixed" else "default.qubit"
    device = qml.device(name, wires=layer.qnode.device.wires)  # channels need default.mixed
    analytic = qml.QNode(layer.qnode.func, device, interface="torch", diff_method="backprop")
    x = _points(n_in, low, high, samples, seed)
    jac = _domain_jacobian(analytic, layer.input_arg, x, names, shapes, sizes, flat)
    from ..losses import SoftmaxCrossEntropyLoss

    if isinstance(loss, SoftmaxCrossEntropyLoss) and jac.shape[1] >= 2:
        with torch.no_grad():
            kwargs = {k: p.reshape(s) for k, p, s in
                      zip(names, torch.split(flat, sizes), shapes, strict=True)}
            outs = _rows(analytic(**{layer.input_arg: x}, **kwargs), x.shape[0])
        best = torch.zeros(x.shape[0], dtype=jac.dtype)
        for c in range(jac.shape[1]):
            a = loss.output_gradients(outs, torch.full((x.shape[0],), c))  # (points, M)
            best = torch.maximum(best, torch.einsum("nm,nmp->np", a.to(jac.dtype), jac)
                                 .norm(dim=1))
        return float(best.max())
    per_output = jac.norm(dim=2)  # ‖∇θ f_m(x)‖ per point and output
    # ‖J(x)‖₂ per point; for one output exactly ‖∇θ f‖ (no SVD rounding)
    spectral = (per_output[:, 0] if jac.shape[1] == 1
                else torch.linalg.matrix_norm(jac, ord=2))
    bound = torch.minimum(l1 * per_output.max(dim=1).values, l2 * spectral)
    return float(bound.max())


def _domain_jacobian(analytic, input_arg, x, names, shapes, sizes, flat) -> torch.Tensor:
    r""":math:`\partial f_m(x_p)/\partial\theta`, shape ``(points, n_out, P)``.

    One copy of the weights per point (parameter broadcasting), so the Jacobian of every
    output over every point is one batched backward pass: cost linear in the points. (The
    direct Jacobian over all points costs quadratically: 8 qubits, 10 outputs, 64 points 25 s
    against 2.5 s; the binary 4-qubit classifier's 273 points 0.5-0.8 s against 0.04 s; one
    output on default.mixed, over density matrices, 99 s.) The result is checked against the
    direct Jacobian at two points; circuits that do not broadcast their weights fall back to
    the direct Jacobian in chunks of :data:`_CHUNK` points. Both are deterministic, so seeded
    runs repeat exactly.
    """
    def direct(xs):
        def outputs(w):
            parts = torch.split(w, sizes)
            kwargs = {k: p.reshape(s) for k, p, s in zip(names, parts, shapes, strict=True)}
            return _rows(analytic(**{input_arg: xs}, **kwargs), xs.shape[0])

        return torch.autograd.functional.jacobian(outputs, flat, vectorize=True)

    try:
        n = x.shape[0]
        big = flat.detach().repeat(n, 1).requires_grad_(True)
        parts = torch.split(big, sizes, dim=1)
        kwargs = {k: p.reshape(n, *s) for k, p, s in zip(names, parts, shapes, strict=True)}
        out = _rows(analytic(**{input_arg: x}, **kwargs), n)
        m = out.shape[1]
        cot = torch.eye(m, dtype=out.dtype)[:, None, :].expand(m, n, m)
        (grad,) = torch.autograd.grad(out, big, grad_outputs=cot, is_grads_batched=True)
        jac = grad.permute(1, 0, 2)  # (points, n_out, P)
        check = direct(x[:2])
        if check.shape == jac[:2].shape and torch.allclose(check, jac[:2], atol=1e-10):
            return jac.detach()
    except Exception:  # noqa: BLE001 - a circuit without weight broadcasting: direct path
        pass
    return torch.cat([direct(x[i:i + _CHUNK]) for i in range(0, x.shape[0], _CHUNK)])


def _rows(res, n: int) -> torch.Tensor:
    """QNode results (a tensor or a tuple of them) as rows ``(n, n_out)``."""
    res = [res] if isinstance(res, torch.Tensor) else list(res)
    return torch.cat([r.reshape(n, -1) for r in res], dim=1)


def synthetic_batch(example: torch.Tensor, label, *, n_outputs: int, n: int = CALIBRATION_EXAMPLES,
                    input_range: tuple[float, float] | None = None,
                    seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Public synthetic examples shaped like the data: inputs and labels drawn without it.

    Only the shape and dtype of ``example`` and ``label`` (the data's schema) are read, never
    their values. Inputs are uniform on ``input_range`` (declared public knowledge of the
    preprocessing) or, without one, standard normal (the scale of standardised features and
    of angles around 0). Labels: for an integer label and ``n_outputs`` ≥ 2, uniform classes
    in ``{0, …, n_outputs − 1}``; an integer label with one output, uniform in ``{0, 1}``; a
    float label, uniform signs ±1 of the label's shape.

    Args:
        example: one input (its shape and dtype only).
        label: one label (its shape and dtype only).
        n_outputs: columns of the model's output (≥ 1).
        n: number of synthetic examples (≥ 1).
        input_range: ``(low, high)`` with low < high, or ``None``.
        seed: seed of the draw (public randomness).

    Returns:
        tuple: inputs of shape ``(n, *example.shape)`` and labels of shape
        ``(n, *label.shape)``.

    Raises:
        ValueError: for a non-positive ``n`` or ``n_outputs``, or an empty or reversed range.

    Source: derived here (docs/utility.md, "Calibrated clip").

    Example:
        >>> x, y = synthetic_batch(torch.zeros(3), torch.tensor(2), n_outputs=3, n=5)
        >>> tuple(x.shape), tuple(y.shape), bool((y < 3).all())
        ((5, 3), (5,), True)
    """
    n = check_positive_int(n, "n")
    n_outputs = check_positive_int(n_outputs, "n_outputs")
    example = torch.as_tensor(example)
    label = torch.as_tensor(label)
    gen = torch.Generator().manual_seed(int(seed))
    dtype = example.dtype if example.is_floating_point() else torch.get_default_dtype()
    shape = (n, *example.shape)
    if input_range is None:
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
    else:
        low, high = (float(v) for v in input_range)
        if not (np.isfinite(low) and np.isfinite(high) and high > low):
            raise ValueError(f"`input_range` must be (low, high) with low < high. Found "
                             f"{input_range!r}.")
        x = low + (high - low) * torch.rand(shape, generator=gen, dtype=torch.float64)
    if label.is_floating_point():
        y = (2 * torch.randint(0, 2, (n, *label.shape), generator=gen) - 1).to(label.dtype)
    else:
        k = n_outputs if n_outputs >= 2 else 2
        y = torch.randint(0, k, (n, *label.shape), generator=gen).to(label.dtype)
    return x.to(dtype), y


def synthetic_gradient_norms(module: torch.nn.Module, params: Sequence[torch.Tensor],
                             inputs: torch.Tensor, labels: torch.Tensor,
                             loss_fn=None) -> torch.Tensor:
    r"""Per-example gradient norms :math:`\lVert\nabla_\theta \ell(f(x_i), y_i)\rVert_2` of
    ``params`` at their current values, one backward pass per example.

    Args:
        module: the model.
        params: the trainable parameters (the norm is over all of them together).
        inputs: ``(n, ...)`` examples; labels: ``(n, ...)``.
        loss_fn: ``(outputs, labels) -> loss`` (a scalar, or per-example values that are
            summed). ``None``: cross-entropy for integer labels and two or more outputs, else
            the linear proxy :math:`\ell = \sum_m s_m f_m` with signs :math:`s_m = \pm 1`
            drawn per example (:math:`|\partial\ell/\partial f_m| = 1`).

    Returns:
        torch.Tensor: float64 norms, shape ``(n,)``. A non-finite gradient gives norm 0.

    Raises:
        ValueError: for empty ``params`` or mismatched batch sizes.

    Source: derived here (docs/utility.md, "Calibrated clip").
    """
    params = list(params)
    if not params:
        raise ValueError("`params` must hold at least one trainable parameter. Found none.")
    if len(inputs) != len(labels):
        raise ValueError(f"`inputs` and `labels` must have the same batch size. Found "
                         f"{len(inputs)} and {len(labels)}.")
    gen = torch.Generator().manual_seed(1)
    norms = []
    with torch.enable_grad():
        for i in range(len(inputs)):
            out = module(inputs[i:i + 1])
            y = labels[i:i + 1]
            if loss_fn is not None:
                value = loss_fn(out, y)
            elif not y.is_floating_point() and out.ndim == 2 and out.shape[1] >= 2:
                value = torch.nn.functional.cross_entropy(out, y.reshape(-1).long())
            else:
                signs = 2.0 * torch.randint(0, 2, out.shape, generator=gen) - 1.0
                value = (signs.to(out.dtype) * out).sum()
            value = value.sum() if value.ndim else value
            grads = torch.autograd.grad(value, params, allow_unused=True)
            sq = sum(float(g.detach().double().pow(2).sum()) for g in grads if g is not None)
            norms.append(sq ** 0.5 if np.isfinite(sq) else 0.0)
    return torch.tensor(norms, dtype=torch.float64)


def calibrated_clip_norm(norms: torch.Tensor, quantile: float = CALIBRATION_QUANTILE) -> float:
    r"""The clip norm at the ``quantile`` of synthetic per-example gradient norms.

    Args:
        norms: per-example gradient norms on public synthetic examples, shape ``(n,)``, n ≥ 1.
        quantile: in (0, 1].

    Returns:
        float: the quantile (linear interpolation), floored at 1e-6 (a clip must be positive).

    Raises:
        ValueError: for an empty ``norms`` or a quantile outside (0, 1].

    Source: derived here (docs/utility.md, "Calibrated clip").

    Example:
        >>> calibrated_clip_norm(torch.tensor([1.0, 2.0, 3.0]))
        2.0
    """
    norms = torch.as_tensor(norms, dtype=torch.float64).reshape(-1)
    if norms.numel() == 0:
        raise ValueError("`norms` must hold at least one norm. Found an empty tensor.")
    if not (isinstance(quantile, (int, float)) and 0.0 < quantile <= 1.0):
        raise ValueError(f"`quantile` must be in (0, 1]. Found {quantile!r}.")
    return max(float(torch.quantile(norms, float(quantile))), 1e-6)
