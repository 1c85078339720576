r"""What :func:`~pennylane_qshiftdp.make_private` checks about a model, from public information.

Every check runs on the model, the declared loss and synthetic inputs (zeros or seeded random
values of an example's shape), never on the training data's values: a refusal or warning that
depended on a private example would itself reveal it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator, Sequence

import pennylane as qml
import torch
from numpy.typing import ArrayLike
from opacus import GradSampleModule
from opacus.validators import ModuleValidator

from . import _compat
from .exceptions import PrivacyWarning, SensitivityError
from .gradients.sensitivity_bound import sensitivity
from .qnn._caches import CACHE_SLOT as _CACHE_SLOT
from .qnn.evaluation import gradient_route
from .qnn.private_qnode import check_private_qnode

__all__ = ["LOCAL_SIMULATORS", "check_per_example_loss", "check_training_buffers",
           "preserved_shot_rngs", "simulator_twins", "twinned_devices"]

#: Devices on which the checks' forward passes run as they are (local state-vector or
#: density-matrix simulators, fast and free). On any other device (hardware, a cloud
#: simulator, Qiskit's Aer with a noise model) they run on an analytic twin (below).
LOCAL_SIMULATORS = frozenset({"default.qubit", "default.mixed", "lightning.qubit",
                              "lightning.kokkos", "lightning.gpu"})


def twinned_devices(module: torch.nn.Module) -> list[str]:
    """Names of the TorchLayers' devices the checks do not run circuits on (not in
    :data:`LOCAL_SIMULATORS`)."""
    return sorted({m.qnode.device.name for m in torch_layers(module)
                   if m.qnode.device.name not in LOCAL_SIMULATORS})


@contextlib.contextmanager
def simulator_twins(module: torch.nn.Module) -> Iterator[None]:
    """Run the block's forward passes on analytic simulator twins of billed devices.

    The checks' forward passes on synthetic inputs read only the model's structure (output
    shapes, which modules run, which buffers change, a layer's input), which the device does
    not change. On a TorchLayer whose device is not in :data:`LOCAL_SIMULATORS` they would be
    circuits run (and billed) on hardware, or slow noisy simulations: for the block, its QNode
    runs on ``default.qubit`` (``default.mixed`` for a mixed-state device) on the same wires,
    analytically. The device and the layer's caches are restored on exit, so training runs
    on the user's device exactly as before.
    """
    swapped = []
    for layer in torch_layers(module):
        dev = layer.qnode.device
        if dev.name in LOCAL_SIMULATORS:
            continue
        twin = qml.device("default.mixed" if "mixed" in dev.name else "default.qubit",
                          wires=dev.wires)
        swapped.append((layer, dev, layer.__dict__.get(_CACHE_SLOT)))
        layer.qnode.device = twin
        layer.__dict__.pop(_CACHE_SLOT, None)
    try:
        yield
    finally:
        for layer, dev, caches in swapped:
            layer.qnode.device = dev
            layer.__dict__.pop(_CACHE_SLOT, None)
            if caches is not None:
                layer.__dict__[_CACHE_SLOT] = caches


def torch_layers(module: torch.nn.Module) -> list[qml.qnn.TorchLayer]:
    return [m for m in module.modules() if isinstance(m, qml.qnn.TorchLayer)]


def check_supported(module: torch.nn.Module, layers) -> None:
    """Refuse trainable parameters whose per-example gradients cannot be computed."""
    for layer in layers:
        check_private_qnode(layer.qnode)
    for name, m in module.named_modules():
        own = [n for n, p in m.named_parameters(recurse=False) if p.requires_grad]
        if not own or isinstance(m, qml.qnn.TorchLayer) or (
                type(m) in GradSampleModule.GRAD_SAMPLERS):
            continue
        if any(isinstance(c, qml.qnn.TorchLayer) for c in m.modules()):
            raise SensitivityError(
                f"Module {name or type(m).__name__!r} has trainable parameters {own} and "
                f"contains a TorchLayer: Opacus cannot compute their per-example gradients "
                f"(functorch cannot trace through a quantum device). Move the parameters into "
                f"a separate torch.nn layer."
            )
    # Opacus's module rules (BatchNorm and other modules that mix examples or keep private
    # running statistics; rules registered for TorchLayer apply too).
    errors = ModuleValidator.validate(module, strict=False)
    if errors:
        raise SensitivityError(
            f"Opacus's ModuleValidator refuses this module: "
            f"{'; '.join(f'{type(e).__name__}: {e}' for e in errors)}. Replace the modules it "
            f"names: `module = opacus.validators.ModuleValidator.fix(module)` swaps them for "
            f"private-safe ones (e.g. BatchNorm -> GroupNorm); build the optimizer over the "
            f"fixed module's parameters.")
    errors = GradSampleModule.validate(module, strict=False)
    if errors:
        raise SensitivityError(f"Opacus cannot make this module private: {errors}")


def _statistics_message(name: str, m: torch.nn.Module, what: str) -> str:
    return (f"Module {name or type(m).__name__!r} ({type(m).__name__}) {what}: its buffers are "
            f"computed from the private batch and saved in the state dict without noise (ε = ∞ "
            f"for whatever they reveal), whether or not it has trainable parameters. Remove "
            f"it, use a per-example normalisation (GroupNorm, LayerNorm, InstanceNorm without "
            f"running statistics), or switch the module to eval mode with statistics fixed "
            f"from public data before calling make_private.")


def check_training_buffers(module: torch.nn.Module, example) -> None:
    """Refuse modules whose buffers a training forward pass updates (running statistics),
    and BatchNorm in train mode, whatever their trainable parameters.

    Opacus's ``ModuleValidator`` visits trainable modules only, so a ``BatchNorm1d(affine=
    False)`` passes it, although after one step its ``running_mean`` is 0.1 × the private
    batch mean, saved in the state dict. Two checks, on public information only: (1) every
    normalisation module of torch in train mode that keeps running statistics or normalises
    over the batch; (2) a forward pass in train mode (no gradients) on a synthetic batch of
    two — zeros and seeded uniform values of the example's shape, never data — after which
    any changed buffer is refused. Buffers are restored after the probe.

    Args:
        module: the model (train mode, as it will be trained).
        example: one example (only its shape and dtype are used).

    Raises:
        SensitivityError: naming the module and what to use instead.
    """
    for name, m in module.named_modules():
        if not m.training:
            continue
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            raise SensitivityError(_statistics_message(
                name, m, "normalises each example by statistics of the whole batch and "
                         "keeps running statistics"))
        if isinstance(m, torch.nn.modules.batchnorm._NormBase) and m.track_running_stats:
            raise SensitivityError(_statistics_message(name, m, "keeps running statistics"))
    buffers = [(name, b) for name, b in module.named_buffers() if b is not None]
    if not buffers:
        return
    saved = [b.detach().clone() for _, b in buffers]
    zero = torch.zeros_like(torch.as_tensor(example))
    gen = torch.Generator().manual_seed(0)
    batch = torch.stack([zero, torch.rand(zero.shape, generator=gen,
                                          dtype=torch.float64).to(zero.dtype)])
    try:
        with torch.no_grad(), preserved_shot_rngs(module), simulator_twins(module):
            module(batch)
    except Exception:  # noqa: BLE001 - a probe only: what it cannot run, it cannot judge
        pass
    finally:
        changed = [name for (name, b), old in zip(buffers, saved, strict=True)
                   if b.shape != old.shape or not torch.equal(b, old)]
        with torch.no_grad():
            for (_, b), old in zip(buffers, saved, strict=True):
                if b.shape == old.shape:
                    b.copy_(old)
    if changed:
        raise SensitivityError(
            f"A forward pass in train mode changes the buffer(s) {changed}: they are computed "
            f"from the private batch and saved in the state dict without noise (ε = ∞ for "
            f"whatever they reveal). Remove the modules that update them, or switch those "
            f"modules to eval mode with values fixed from public data before make_private.")


# Synthetic inputs of the coverage probe besides zeros: seeded, public, of the example's shape.
_COVERAGE_PROBES = 2


def modules_after(module, layer, example) -> list[str] | None:
    """What runs after ``layer`` on synthetic inputs: modules with parameters, by name.

    The inputs are zeros and :data:`_COVERAGE_PROBES` seeded random tensors of the example's
    shape and dtype (public; never the data). If the model's output is not the layer's output
    (up to reshaping) on any of them, ``"post-processing in forward()"`` is listed too (e.g. a
    scale factor, or one that depends on the input). ``None`` if a probe fails.
    """
    zero = torch.zeros_like(torch.as_tensor(example))
    gen = torch.Generator().manual_seed(0)
    probes = [zero] + [(torch.rand(zero.shape, generator=gen, dtype=torch.float64) * 2 - 1)
                       .to(zero.dtype) for _ in range(_COVERAGE_PROBES)]
    found: list[str] = []
    for x in probes:
        names = _modules_after_one(module, layer, x)
        if names is None:
            return None
        found += [n for n in names if n not in found]
    return found


@contextlib.contextmanager
def preserved_shot_rngs(module) -> Iterator[None]:
    """Restore the shot-sampling generators of ``module``'s simulators on exit: the checks'
    forward passes on synthetic inputs then change no seeded draw of the training run."""
    rngs = [_compat.device_rng(m.qnode.device) for m in module.modules()
            if isinstance(m, qml.qnn.TorchLayer)]
    saved = [(r, r.bit_generator.state) for r in rngs if r is not None]
    try:
        yield
    finally:
        for rng, state in saved:
            rng.bit_generator.state = state


def _modules_after_one(module, layer, x) -> list[str] | None:
    """:func:`modules_after` for one synthetic input ``x``."""
    order: list[tuple[str, torch.nn.Module]] = []
    captured: dict[str, object] = {}
    handles = [layer.register_forward_hook(
        lambda _m, _i, out: captured.__setitem__("layer", out))]
    for name, m in module.named_modules():
        if m is layer or not list(m.children()):
            handles.append(m.register_forward_pre_hook(
                lambda mod, _inp, name=name: order.append((name, mod))))
    try:
        with torch.no_grad(), simulator_twins(module):
            out = module(x.unsqueeze(0))
    except Exception:  # noqa: BLE001 - a probe only; the caller says it could not check
        return None
    finally:
        for h in handles:
            h.remove()
    after, names = False, []
    for name, m in order:
        if m is layer:
            after = True
        elif after and any(True for _ in m.parameters(recurse=False)) and name not in names:
            names.append(name or type(m).__name__)
    inner = captured.get("layer")
    if module is not layer and not names and not (
            isinstance(out, torch.Tensor) and isinstance(inner, torch.Tensor)
            and out.numel() == inner.numel()
            and torch.equal(out.reshape(-1).double(), inner.reshape(-1).double())):
        names.append("post-processing in forward()")
    return names


#: Rows of the synthetic batch the loss probe uses.
_PROBE_ROWS = 4


def check_per_example_loss(criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                           output_shape: Sequence[int], target_example: ArrayLike | torch.Tensor,
                           *, seed: int = 0) -> None:
    r"""Refuse a loss whose gradient for one row depends on the other rows.

    The guarantee needs the back-propagated loss to be a sum (or mean) of per-example terms
    :math:`L = \sum_i \ell(f_i, y_i)` (or :math:`L/B`): then row :math:`i` of
    :math:`\partial L/\partial f` depends on example :math:`i` alone and clipping each row
    bounds each example. The probe evaluates ``criterion`` on a synthetic batch (random
    outputs and targets of the given shapes; no training data), changes one row at a time,
    and refuses if the gradient of any *other* row changes. It cannot see coupling done outside
    ``criterion`` (e.g. labels standardised per batch in the loop).

    Args:
        criterion: callable ``(outputs, targets) -> scalar loss``.
        output_shape: shape of one example's model output (tuple of ints).
        target_example: one target (its shape and dtype are used; integer targets are drawn in
            ``[0, output_shape[-1])``).
        seed: seed of the synthetic batch.

    Raises:
        ValueError: if a row's gradient depends on another row, or the loss is not a scalar.

    References:
        Derived here (docs/engine.md, "Losses").

    Example:
        >>> check_per_example_loss(torch.nn.MSELoss(), (1,), torch.tensor([0.5]))
        >>> def batch_softmax(out, y):
        ...     return -(torch.log_softmax(out[:, 0], dim=0) * y[:, 0]).sum()
        >>> check_per_example_loss(batch_softmax, (1,), torch.tensor([0.5]))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: The loss couples examples: ...
    """
    g = torch.Generator().manual_seed(seed)
    target = torch.as_tensor(target_example)
    shape = (_PROBE_ROWS, *tuple(output_shape))

    def draw_targets(rows):
        if target.dtype.is_floating_point:
            return torch.randn((rows, *target.shape), generator=g, dtype=target.dtype)
        high = max(int(output_shape[-1]) if len(output_shape) else 2, 2)
        return torch.randint(0, high, (rows, *target.shape), generator=g, dtype=target.dtype)

    def row_grads(out, y):
        out = out.detach().clone().requires_grad_(True)
        loss = criterion(out, y)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise ValueError(f"`criterion` must return a scalar loss. Found "
                             f"{getattr(loss, 'shape', type(loss))}.")
        return torch.autograd.grad(loss, out)[0]

    out = torch.randn(shape, generator=g, dtype=torch.float64)
    y = draw_targets(_PROBE_ROWS)
    base = row_grads(out, y)
    for j in range(_PROBE_ROWS):
        out2, y2 = out.clone(), y.clone()
        out2[j] = torch.randn(shape[1:], generator=g, dtype=torch.float64)
        y2[j] = draw_targets(1)[0]
        moved = row_grads(out2, y2)
        others = [i for i in range(_PROBE_ROWS) if i != j]
        if not torch.allclose(moved[others], base[others], rtol=1e-9, atol=1e-12):
            raise ValueError(
                "The loss couples examples: changing row {j} of a synthetic batch changed the "
                "gradient of other rows. Clipping bounds each row, but one example would then "
                "move every row. Use a sum or mean of per-example terms (e.g. "
                "torch.nn.MSELoss(), CrossEntropyLoss() with reduction 'mean' or 'sum'); "
                "no batch-level normalisation, softmax over the batch or contrastive terms."
                .replace("{j}", str(j)))


def layer_inputs(module, layer, example) -> torch.Tensor:
    """The TorchLayer's input for one training example (one analytic-free forward pass)."""
    captured = {}

    def hook(_m, inputs, _out):
        captured["x"] = inputs[0].detach()

    handle = layer.register_forward_hook(hook)
    try:
        with torch.no_grad(), simulator_twins(module):
            module(example.unsqueeze(0))
    finally:
        handle.remove()
    x = captured["x"]
    return x.reshape(-1, x.shape[-1])[0].double()


def layer_sensitivity(module, layer, example, *, loss, adjacency, jacobian_bound):
    weights = {k: v.detach().clone().double().requires_grad_(True)
               for k, v in layer.qnode_weights.items()}
    x0 = layer_inputs(module, layer, example)
    return sensitivity(layer.qnode, adjacency=adjacency, loss=loss, jacobian_bound=jacobian_bound,
                       **{layer.input_arg: x0}, **weights)


def output_shape(module, example) -> tuple[int, ...]:
    """Shape of one example's model output, from a forward pass on zeros (public)."""
    with torch.no_grad(), simulator_twins(module):
        out = module(torch.zeros_like(torch.as_tensor(example)).unsqueeze(0))
    return tuple(out.shape[1:])


def certified_coverage(module, layer, example, loss, strict: bool) -> str:
    """Whether the certified Δ covers the model, from public information; warn or refuse.

    Δ bounds the quantum weights' gradient when the TorchLayer's output goes into the declared
    loss. Modules with parameters after the layer multiply ∂ℓ/∂f by their weights, and an
    undeclared loss is taken as linear: then clips can bind and C = Δ is a DP-SGD clip.
    """
    after = modules_after(module, layer, example)
    problems = []
    if after is None:
        problems.append("the model's structure could not be probed on a synthetic input")
    elif after:
        problems.append(f"modules with parameters run after the TorchLayer ({after}), so "
                        f"the loss gradient reaching it is not the declared one")
    if loss is None:
        problems.append("no `loss` was declared, so Δ assumes the linear loss (|∂ℓ/∂f| ≤ 1); "
                        "MSE or cross-entropy make clips bind (declare e.g. "
                        "pennylane_qshiftdp.losses.MSELoss or SoftmaxCrossEntropyLoss)")
    if not problems:
        return "covered: no module with parameters after the TorchLayer, loss declared"
    text = ("The certified bound Δ does not cover this model: " + "; ".join(problems)
            + ". Clips may bind: privacy holds, but C = Δ is then a DP-SGD clip, not "
            "'no clip binds'.")
    if strict:
        raise SensitivityError(text + " (strict=True refuses this; decided from the model and "
                               "the declared loss only, never from the data.)")
    warnings.warn(text, PrivacyWarning, stacklevel=3)
    return "not covered: " + "; ".join(problems)


def feeds_data(module, layer, example) -> bool:
    """Whether ``layer`` receives the raw example (the module adds only fixed reshaping)."""
    try:
        x = layer_inputs(module, layer, example)
    except Exception:  # noqa: BLE001 - probing only
        return False
    ref = torch.as_tensor(example, dtype=torch.float64).reshape(-1)
    return x.shape == ref.shape and bool(torch.allclose(x, ref))



def gradient_routes(module, layers, example) -> dict[str, str]:
    """Per TorchLayer (by module name), the route of its per-example gradients
    (:func:`~pennylane_qshiftdp.qnn.evaluation.gradient_route`), decided on a zero input of the
    example's shape (the route depends on the QNode, never on the data)."""
    names = {id(m): name for name, m in module.named_modules()}
    zero = torch.zeros_like(torch.as_tensor(example))
    out = {}
    for layer in layers:
        x = layer_inputs(module, layer, zero)
        out[names.get(id(layer)) or type(layer).__name__] = gradient_route(layer, x.unsqueeze(0))
    return out
