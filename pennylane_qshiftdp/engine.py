r"""``make_private``: the Q-ShiftDP front end of Opacus for quantum and hybrid models.

It returns Opacus's triple ``(module, optimizer, data_loader)``: the module wrapped in
:class:`opacus.GradSampleModule` (per-example gradients; the TorchLayer grad sampler of
:mod:`~pennylane_qshiftdp.quantum_layer` computes those of the quantum weights from the private
parameter-shift transform), a :class:`~pennylane_qshiftdp.optimizer.QShiftDPOptimizer` (an
Opacus ``DPOptimizer``: per-example clipping in ``step()``, Gaussian noise, the ledger) and a
Poisson-sampling loader (Opacus's ``UniformWithReplacementSampler``, empty batches supported, as
:class:`opacus.data_loader.DPDataLoader`). σ is calibrated by an Opacus
accountant for (ε, δ, epochs) and charged to the :class:`~.PrivacyLedger`.

The guarantee holds for any training loop that calls ``optimizer.step()`` once per backward
pass over one batch of the returned loader, and any loss that is a sum or mean of per-example
terms: clipping at ``C`` is enforced in the optimizer. ``max_grad_norm="certified"`` (default)
sets ``C`` to the a-priori bound Δ of the parameter-shift gradient (Q-ShiftDP: for a certified
model and the declared loss no clip binds).

This module is library code: it imports no data set, model or application code.
"""

from __future__ import annotations

import math
import os
import warnings

import pennylane as qml
import torch
from opacus import GradSampleModule
from opacus.data_loader import dtype_safe, shape_safe, wrap_collate_with_empty
from opacus.grad_sample.grad_sample_module import GradSampleModule as _GSM
from opacus.utils.uniform_sampler import (
    DistributedUniformWithReplacementSampler,
    UniformWithReplacementSampler,
)
from opacus.validators import ModuleValidator
from torch.utils.data._utils.collate import default_collate

from . import qnn, quantum_layer
from ._validation import check_choice, check_epsilon, check_positive_float, check_sample_rate
from .accountant import ADJACENCIES, PrivacyLedger
from .calibration import calibrate_noise_multiplier, epochs_to_steps
from .exceptions import PrivacyWarning, SensitivityError
from .losses import BoundedLoss, LinearLoss
from .optimizer import QShiftDPOptimizer
from .public_clip import domain_gradient_bound
from .sensitivity import Sensitivity, sensitivity
from .shot_statistics import ShotRecorder

__all__ = [
    "make_private", "check_per_example_loss", "CLIP_MODES", "DEFAULT_PROVEN_EPSILON_FACTOR",
]

#: Accepted string values of ``max_grad_norm`` (a positive float is fixed DP-SGD clipping).
CLIP_MODES = ("certified", "public", "adaptive")

#: With shot-noise credit, the artificial noise never drops below the level that alone gives
#: ε = factor × target ε (docs/noise.md, "Noise floor").
DEFAULT_PROVEN_EPSILON_FACTOR = 1.5

# Above this target ε (nats) make_private warns that the guarantee protects little.
_WEAK_EPSILON = 10.0


def _torch_layers(module: torch.nn.Module) -> list[qml.qnn.TorchLayer]:
    return [m for m in module.modules() if isinstance(m, qml.qnn.TorchLayer)]


def _check_supported(module: torch.nn.Module, layers) -> None:
    """Refuse trainable parameters whose per-example gradients cannot be computed."""
    for layer in layers:
        quantum_layer.check_private_qnode(layer.qnode)
    for name, m in module.named_modules():
        own = [n for n, p in m.named_parameters(recurse=False) if p.requires_grad]
        if not own or isinstance(m, qml.qnn.TorchLayer) or type(m) in _GSM.GRAD_SAMPLERS:
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


def _private_dataset(data_loader):
    """The examples the loader's own sampler draws from: ``(dataset, note)``.

    Poisson sampling replaces the loader's sampler, so it must run over the same examples: the
    whole data set for a sequential or shuffling sampler, the subset for a
    ``SubsetRandomSampler``; any other sampler or batch sampler is refused.
    """
    from torch.utils.data import (
        BatchSampler,
        IterableDataset,
        RandomSampler,
        SequentialSampler,
        Subset,
        SubsetRandomSampler,
    )

    dataset = data_loader.dataset
    if isinstance(dataset, IterableDataset):
        raise ValueError("`data_loader` must be over a map-style dataset (Poisson sampling "
                         "picks examples by index); found an IterableDataset.")
    if data_loader.batch_size is None or type(data_loader.batch_sampler) is not BatchSampler:
        raise ValueError(
            f"`data_loader` has its own batch sampler ({type(data_loader.batch_sampler).__name__})"
            f": make_private replaces it by Poisson sampling, which would ignore it. Pass a "
            f"loader with a batch_size (and at most a SubsetRandomSampler) instead.")
    sampler = data_loader.sampler
    if type(sampler) is SequentialSampler:
        return dataset, None
    if type(sampler) is RandomSampler and not sampler.replacement and (
            sampler.num_samples == len(dataset)):
        return dataset, None
    if type(sampler) is SubsetRandomSampler:
        indices = [int(i) for i in sampler.indices]
        if len(set(indices)) != len(indices):
            raise ValueError("`data_loader`'s SubsetRandomSampler repeats indices; Poisson "
                             "sampling needs each example once.")
        if not indices:
            raise ValueError("`data_loader`'s SubsetRandomSampler has no indices.")
        return Subset(dataset, indices), (f"Poisson sampling over the {len(indices)} examples of "
                                          f"the loader's SubsetRandomSampler (N = "
                                          f"{len(indices)} of {len(dataset)})")
    raise ValueError(
        f"`data_loader` has its own sampler ({type(sampler).__name__}): make_private replaces "
        f"it by Poisson sampling over the data set, which would ignore it. Pass a loader over "
        f"the examples to train on (a torch.utils.data.Subset, or a SubsetRandomSampler) with "
        f"a batch_size.")


def _modules_after(module, layer, example) -> list[str] | None:
    """What runs after ``layer`` on a synthetic input: modules with parameters, by name.

    The input is zeros of the example's shape and dtype (public). If the model's output is not
    the layer's output (up to reshaping), ``"post-processing in forward()"`` is listed too
    (e.g. a scale factor). ``None`` if the probe fails.
    """
    order: list[tuple[str, torch.nn.Module]] = []
    captured = {}
    handles = [layer.register_forward_hook(
        lambda _m, _i, out: captured.__setitem__("layer", out))]
    for name, m in module.named_modules():
        if m is layer or not list(m.children()):
            handles.append(m.register_forward_pre_hook(
                lambda mod, _inp, name=name: order.append((name, mod))))
    try:
        with torch.no_grad():
            out = module(torch.zeros_like(torch.as_tensor(example)).unsqueeze(0))
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


def check_per_example_loss(criterion, output_shape, target_example, *, seed: int = 0) -> None:
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


def _layer_inputs(module, layer, example) -> torch.Tensor:
    """The TorchLayer's input for one training example (one analytic-free forward pass)."""
    captured = {}

    def hook(_m, inputs, _out):
        captured["x"] = inputs[0].detach()

    handle = layer.register_forward_hook(hook)
    try:
        with torch.no_grad():
            module(example.unsqueeze(0))
    finally:
        handle.remove()
    x = captured["x"]
    return x.reshape(-1, x.shape[-1])[0].double()


def _layer_sensitivity(module, layer, example, *, loss, adjacency, jacobian_bound):
    weights = {k: v.detach().clone().double().requires_grad_(True)
               for k, v in layer.qnode_weights.items()}
    x0 = _layer_inputs(module, layer, example)
    return sensitivity(layer.qnode, adjacency=adjacency, loss=loss, jacobian_bound=jacobian_bound,
                       **{layer.input_arg: x0}, **weights)


class _CountingBatchSampler:
    """A Poisson batch sampler that counts the batches it yields.

    The optimizer warns when a step used no batch drawn from it (a loop over another loader
    would void the ledger's Poisson-sampling assumption). Opacus's ``BatchMemoryManager``
    splits the batches of this sampler, so it keeps counting there too.
    """

    def __init__(self, inner):
        self.inner = inner
        self.batches_drawn = 0

    def __iter__(self):
        for batch in self.inner:
            self.batches_drawn += 1
            yield batch

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _DistributedPoissonSampler(DistributedUniformWithReplacementSampler):
    """Opacus's distributed Poisson sampler, yielding empty local batches too.

    Opacus 1.6 skips a step when a process's share of the batch is empty, so processes would
    take different numbers of steps and deadlock in the all-reduce. Here every process yields
    one (possibly empty) batch per step.
    """

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.shuffle_seed + self.epoch)
            indices = torch.randperm(self.total_size, generator=g)
        else:
            indices = torch.arange(self.total_size)
        indices = indices[self.rank:self.total_size:self.num_replicas]
        for _ in range(self.num_batches):
            mask = torch.rand(self.num_samples, generator=self.generator) < self.sample_rate
            yield indices[mask.nonzero(as_tuple=False).reshape(-1)]


def _poisson_loader(data_loader, dataset, sample_rate: float, generator, distributed: bool):
    """Opacus's Poisson sampling (as ``DPDataLoader``) over ``dataset``, counting batches."""
    if distributed:
        inner = _DistributedPoissonSampler(total_size=len(dataset), sample_rate=sample_rate,
                                           generator=generator)
    else:
        inner = UniformWithReplacementSampler(num_samples=len(dataset), sample_rate=sample_rate,
                                              generator=generator)
    collate = wrap_collate_with_empty(
        collate_fn=data_loader.collate_fn or default_collate,
        sample_empty_shapes=[(0, *shape_safe(x)) for x in dataset[0]],
        dtypes=[dtype_safe(x) for x in dataset[0]])
    loader = torch.utils.data.DataLoader(
        dataset, batch_sampler=_CountingBatchSampler(inner), collate_fn=collate,
        num_workers=data_loader.num_workers, pin_memory=data_loader.pin_memory)
    loader.sample_rate = sample_rate
    return loader


def _output_shape(module, example) -> tuple[int, ...]:
    """Shape of one example's model output, from a forward pass on zeros (public)."""
    with torch.no_grad():
        out = module(torch.zeros_like(torch.as_tensor(example)).unsqueeze(0))
    return tuple(out.shape[1:])


def _certified_coverage(module, layer, example, loss, strict: bool) -> str:
    """Whether the certified Δ covers the model, from public information; warn or refuse.

    Δ bounds the quantum weights' gradient when the TorchLayer's output goes into the declared
    loss. Modules with parameters after the layer multiply ∂ℓ/∂f by their weights, and an
    undeclared loss is taken as linear: then clips can bind and C = Δ is a DP-SGD clip.
    """
    after = _modules_after(module, layer, example)
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


def _feeds_data(module, layer, example) -> bool:
    """Whether ``layer`` receives the raw example (the module adds only fixed reshaping)."""
    try:
        x = _layer_inputs(module, layer, example)
    except Exception:  # noqa: BLE001 - probing only
        return False
    ref = torch.as_tensor(example, dtype=torch.float64).reshape(-1)
    return x.shape == ref.shape and bool(torch.allclose(x, ref))


def _versions() -> dict:
    """Versions of the packages the guarantee depends on (for the ledger's provenance)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("pennylane-qshiftdp", "pennylane", "pennylane-lightning", "opacus", "torch",
                 "numpy", "scipy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def _randomness(secure_mode: bool, seed) -> str:
    if secure_mode:
        return ("DP noise drawn from the OS's CSPRNG (os.urandom, float64) and the Poisson "
                "sampling seeded from it (secure mode).")
    if seed is None:
        return ("DP noise from torch's generator seeded from the OS (not a CSPRNG); use "
                "secure mode for a real release.")
    return (f"DP noise and Poisson sampling seeded (seed {seed}): repeatable for research, "
            f"but anyone who knows the seed can remove the noise; NOT for a real release.")


def make_private(module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 data_loader: torch.utils.data.DataLoader, *, target_epsilon: float,
                 target_delta: float, epochs: float, max_grad_norm="certified",
                 loss: BoundedLoss | None = None, classical_max_grad_norm: float | None = None,
                 credit: str = "none", beta: float = 0.0, adjacency: str = "add_remove",
                 accountant: str = "rdp", variance_floor: float = 0.0,
                 variance_floor_source: str = "declared", recorder: ShotRecorder | None = None,
                 proven_epsilon_factor: float = DEFAULT_PROVEN_EPSILON_FACTOR,
                 strict: bool = False, adaptive_clipping: dict | None = None,
                 seed: int | None = None, secure_mode: bool = False, jacobian_bound=None,
                 loss_reduction: str = "mean", sample_rate: float | None = None,
                 distributed: bool = False, input_range: tuple[float, float] | None = None,
                 preprocessing_note: str | None = None, criterion=None):
    r"""Make a quantum or hybrid model, its optimizer and data loader private (Opacus).

    What the guarantee needs from the training loop (each is either checked or refused):

    * **The loss is a sum or a mean of per-example terms**,
      :math:`L = \sum_i \ell(f(x_i), y_i)` or :math:`L/B`, and the model treats each example
      alone. Clipping bounds each row of the per-example gradient; a loss that couples
      examples (labels standardised per batch, a softmax or normalisation over the batch,
      contrastive terms) lets one example move every row, and no hook can see that. Pass
      ``criterion`` to have it probed on a synthetic batch (:func:`check_per_example_loss`);
      coupling done in the loop itself cannot be detected. Modules that mix examples
      (BatchNorm) are refused by Opacus's ``ModuleValidator``.
    * **One** ``optimizer.step()`` **per backward pass over one batch** of the returned loader.
      Several backward passes before a step (gradient accumulation, or a main and an auxiliary
      loss each ``.backward()``-ed) are refused, as in Opacus; back-propagate ``main + aux``
      once, so each example's contributions are summed before it is clipped. Opacus's
      ``BatchMemoryManager`` works.
    * Non-finite per-example gradients (an input or label NaN or inf) contribute zero; their
      number is a diagnostic of the step record, not protected.

    Args:
        module: a ``torch.nn.Module``; its TorchLayers' QNodes must use
            :func:`~pennylane_qshiftdp.param_shift`; other trainable layers must be supported
            by Opacus. PennyLane's :class:`pennylane.qnn.TorchLayer`\ s are first replaced, in
            place, by :class:`pennylane_qshiftdp.qnn.TorchLayer` holding the same Parameter
            objects (:func:`~pennylane_qshiftdp.qnn.convert_torch_layers`, the Opacus fixer), so
            ``optimizer`` stays valid; the returned module wraps the converted one.
        optimizer: a ``torch.optim.Optimizer`` over the module's trainable parameters.
        data_loader: a loader over a map-style dataset of ``(x, y)``; ``1/len(data_loader)``
            is the Poisson sampling rate q (Opacus's convention). Its sampler may be sequential,
            shuffling or a ``SubsetRandomSampler`` (Poisson sampling then runs over its
            indices, N = their count); other samplers are refused.
        target_epsilon: ε > 0 (nats). target_delta: δ ∈ (0, 1), well below 1/N.
        epochs: training epochs (T = ⌈epochs / q⌉ steps).
        max_grad_norm: ``"certified"`` (default: C = the a-priori bound Δ of the declared
            ``loss``; needs exactly one TorchLayer), ``"public"`` (C_t = the largest
            per-example gradient norm found at sampled points of the declared ``input_range``
            at the current weights (an estimate of the supremum: a clip may bind),
            :func:`~pennylane_qshiftdp.public_clip.domain_gradient_bound`, recomputed every
            epoch; needs a model that is one TorchLayer fed by the data), a positive float
            (DP-SGD clipping of all parameters at C) or ``"adaptive"`` (quantile clipping,
            Andrew et al.).
        loss: the :class:`~pennylane_qshiftdp.losses.BoundedLoss` whose gradient bound enters
            Δ (``"certified"`` only; default linear, with a warning). Any per-example loss may
            be back-propagated: a wrong declaration only makes clips bind (privacy holds, the
            clip is then a DP-SGD clip at C = Δ; counted as a diagnostic).
        classical_max_grad_norm: clip norm of the trainable classical parameters of a hybrid
            model under ``"certified"`` (per-layer clipping; the noise uses
            :math:`\sqrt{\Delta^2 + C_{cl}^2}`).
        credit: shot-noise credit mode (``"certified"`` only); beta: its failure probability.
        adjacency: ``"add_remove"`` or ``"replace_one"``: the clip stays C and the noise
            follows the doubled sensitivity 2C in every clip mode (and the adaptive count's).
        accountant: ``"rdp"`` (default) or ``"prv"``.
        variance_floor: lower bound :math:`v_{\min}` on every circuit's single-shot variance.
        variance_floor_source: ``"proven"`` (from :func:`qprldp_core.certify_device`) or
            ``"declared"``.
        recorder: the :class:`~.ShotRecorder` attached to the QNode (required for a credit).
        proven_epsilon_factor: κ > 1; with a credit mode the quantum coordinates get exactly
            the noise level whose ε alone is κ × ``target_epsilon`` (a data-independent floor),
            so the proven ε is κ·ε at the planned end; the credited ε reaches ``target_epsilon``
            only if the credited shot noise makes up the rest (docs/noise.md).
        strict: with ``"certified"``, refuse (:class:`SensitivityError`) a model the certified
            bound does not cover, decided from public information only: no ``loss`` declared,
            modules with parameters after the TorchLayer, or a structure the probe cannot
            check. Without ``strict`` these give a :class:`PrivacyWarning`. Whether a clip
            binds during training is never raised (it depends on the private batch).
        adaptive_clipping: settings of ``"adaptive"`` (``target_unclipped_quantile``,
            ``clipbound_learning_rate``, ``min_clipbound``, ``max_clipbound``,
            ``initial_clipbound``, ``unclipped_num_std``).
        seed: seeds Poisson sampling and DP noise (the device carries its own seed).
        secure_mode: DP noise from the OS's CSPRNG (refuses ``seed``).
        jacobian_bound: passed to :func:`~pennylane_qshiftdp.sensitivity`.
        loss_reduction: ``"mean"`` (the loop back-propagates a batch mean) or ``"sum"``.
        sample_rate: Poisson sampling rate q ∈ (0, 1]; default ``1/len(data_loader)``
            (Opacus's convention). The returned loader then has ``⌈1/q⌉`` batches per epoch.
        input_range: ``(a, b)`` bounding every input feature (``"public"`` only; public
            knowledge of the preprocessing, e.g. angles in [0, π]).
        distributed: data-parallel training on an initialised ``torch.distributed`` process
            group (``torchrun``): every process calls ``make_private`` with the same
            arguments; the parameters are broadcast from rank 0, each process Poisson-samples
            its share of the data set (rate q, a seed of its own), the clipped sums are
            all-reduced and the noise is added once. The ledger is the single-process one.
        preprocessing_note: which data-dependent preprocessing is not protected.
        criterion: optional ``(outputs, targets) -> loss``, the loss the loop back-propagates;
            probed on a synthetic batch and refused if one row's gradient depends on another
            (:func:`check_per_example_loss`).

    Returns:
        tuple: ``(GradSampleModule, QShiftDPOptimizer, DataLoader)`` — the loader
        Poisson-samples with rate q (``loader.sample_rate``); ``optimizer.ledger``
        holds the accounting and ``optimizer.sensitivity`` the certified bound (or ``None``).

    Raises:
        ValueError: for invalid privacy parameters or settings, a loader with its own sampler,
            or a ``criterion`` that couples examples.
        SensitivityError: for a QNode whose diff method is not the private transform, a
            trainable parameter without per-example gradients, a module Opacus's
            ``ModuleValidator`` refuses, an unboundable circuit under ``"certified"``, or
            (``strict``) a model the certified bound does not cover.
        NotImplementedError: for a credit mode without certified clipping.

    Example:
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> layer = qml.qnn.TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
        ...                            {"weights": (1, 2, 3)})
        >>> data = torch.utils.data.TensorDataset(torch.zeros(20, 2), torch.ones(20))
        >>> loader = torch.utils.data.DataLoader(data, batch_size=5)
        >>> from pennylane_qshiftdp.losses import LinearLoss
        >>> model, opt, loader = make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1),
        ...     loader, target_epsilon=1.0, target_delta=1e-5, epochs=1, seed=0,
        ...     loss=LinearLoss())
        >>> round(opt.max_grad_norm, 6)  # Δ of ⟨Z0⟩ with 6 weights, linear loss
        2.44949
    """
    check_epsilon(target_epsilon, "target_epsilon")
    adjacency = check_choice(adjacency, "adjacency", ADJACENCIES)
    factor = 2.0 if adjacency == "replace_one" else 1.0
    user_loss = loss
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"`optimizer` must be a torch.optim.Optimizer. Found "
                        f"{type(optimizer).__name__}.")
    if secure_mode and seed is not None:
        raise ValueError("secure_mode draws DP noise from the OS's CSPRNG and refuses `seed`.")
    if variance_floor_source not in ("proven", "declared"):
        raise ValueError(f"`variance_floor_source` must be 'proven' or 'declared'. Found "
                         f"{variance_floor_source!r}.")
    if isinstance(max_grad_norm, str):
        if max_grad_norm not in CLIP_MODES:
            raise ValueError(f"`max_grad_norm` must be one of {CLIP_MODES} or a positive float. "
                             f"Found {max_grad_norm!r}.")
    else:
        check_positive_float(max_grad_norm, "max_grad_norm")
    if isinstance(module, GradSampleModule) or hasattr(module, "autograd_grad_sample_hooks"):
        raise ValueError(
            "`module` is already private (it carries Opacus's per-example hooks from an earlier "
            "make_private). Pass a fresh module, or call remove_hooks() on the returned "
            "GradSampleModule first."
        )
    # PennyLane TorchLayers with a private QNode -> the product's layer (Opacus's fixer, in
    # place: the optimizer's Parameter objects are kept).
    module = qnn.convert_torch_layers(module)
    layers = _torch_layers(module)
    _check_supported(module, layers)
    trainable = [p for p in module.parameters() if p.requires_grad]
    opt_params = {id(p) for g in optimizer.param_groups for p in g["params"]}
    if not opt_params or not opt_params <= {id(p) for p in trainable}:
        raise ValueError("`optimizer` must optimise (some of) the module's trainable "
                         "parameters, and only those.")
    quantum = {id(p) for layer in layers for p in layer.parameters() if p.requires_grad}
    classical = [p for p in trainable if id(p) not in quantum]

    dataset, sampler_note = _private_dataset(data_loader)
    n = len(dataset)
    batch_size = data_loader.batch_size
    if batch_size is None or batch_size < 1:
        raise ValueError(f"`data_loader` must have a positive batch_size. Found {batch_size}.")
    if sample_rate is None and batch_size >= n:
        warnings.warn(
            f"The loader's batch_size ({batch_size}) is not below the data set size ({n}): the "
            f"sampling rate is q = 1, so there is no privacy amplification by sampling.",
            PrivacyWarning, stacklevel=2)
    if sample_rate is None:
        sample_rate = 1.0 / len(data_loader)
    else:
        sample_rate = check_sample_rate(sample_rate, "sample_rate")
    expected_batch_size = sample_rate * n
    steps = epochs_to_steps(epochs=epochs, sample_rate=sample_rate)

    sens: Sensitivity | None = None
    clip_groups = None
    clip_info: dict
    if max_grad_norm == "adaptive" and credit == "none":
        if len(layers) == 1 and not classical and (adaptive_clipping or {}).get(
                "initial_clipbound") is None:
            try:  # the certified bound is a natural first clip norm; any value is private
                sens = _layer_sensitivity(module, layers[0], dataset[0][0],
                                          loss=loss or LinearLoss(), adjacency="add_remove",
                                          jacobian_bound=jacobian_bound)
            except (SensitivityError, ValueError, NotImplementedError):
                sens = None
    elif max_grad_norm in ("certified", "public") or credit != "none":
        if len(layers) != 1:
            raise ValueError(f"max_grad_norm='certified' needs exactly one TorchLayer. Found "
                             f"{len(layers)}; pass a float clip norm instead.")
        loss = LinearLoss() if loss is None else loss
        sens = _layer_sensitivity(module, layers[0], dataset[0][0], loss=loss,
                                  adjacency="add_remove", jacobian_bound=jacobian_bound)
    if user_loss is not None and max_grad_norm not in ("certified", "public"):
        warnings.warn("`loss` is used only with max_grad_norm='certified' or 'public'; the clip "
                      "norm bounds the gradients here.", PrivacyWarning, stacklevel=2)
    coverage = None
    if max_grad_norm == "certified":
        coverage = _certified_coverage(module, layers[0], dataset[0][0], user_loss, strict)
    if criterion is not None:
        probe_out = _output_shape(module, dataset[0][0])
        check_per_example_loss(criterion, probe_out, dataset[0][1])
    adaptive = None
    public_clip = None
    if max_grad_norm == "certified":
        quantum_params = [p for p in trainable if id(p) in quantum]
        if classical:
            if classical_max_grad_norm is None:
                raise ValueError(
                    f"max_grad_norm='certified' bounds the quantum weights only; the "
                    f"{len(classical)} trainable classical parameter tensors need "
                    f"`classical_max_grad_norm` (per-layer clipping), or pass one float "
                    f"`max_grad_norm` to clip everything."
                )
            check_positive_float(classical_max_grad_norm, "classical_max_grad_norm")
            clip_groups = [(quantum_params, sens.delta), (classical, classical_max_grad_norm)]
        clip = (math.hypot(sens.delta, classical_max_grad_norm) if classical else sens.delta)
        clip_info = {"mode": "certified", "delta": sens.delta,
                     "classical_max_grad_norm": classical_max_grad_norm,
                     "description": "C = the certified a-priori bound Δ of the parameter-shift "
                     "gradient" + (f" combined with C_classical = {classical_max_grad_norm:g}"
                                   if classical else "")
                     + "; every per-example gradient is clipped at C"}
    elif max_grad_norm == "public":
        if classical or len(layers) != 1 or module is not layers[0] and not _feeds_data(
                module, layers[0], dataset[0][0]):
            raise ValueError("max_grad_norm='public' needs a model whose only trainable layer "
                             "is one TorchLayer fed by the data (its input domain is "
                             "`input_range`).")
        if input_range is None:
            raise ValueError("max_grad_norm='public' needs `input_range=(low, high)`, a bound "
                             "on every input feature known without the data.")
        layer = layers[0]
        n_in = int(torch.as_tensor(dataset[0][0]).numel())
        bounds = sens.loss_grad_bounds
        sample_seed = seed

        def clip_norm_fn(step):
            return domain_gradient_bound(layer, input_range=input_range, n_inputs=n_in,
                                         loss_grad_bounds=bounds, seed=(sample_seed or 0, step))

        public_clip = clip_norm_fn
        clip = min(sens.delta, clip_norm_fn(0))
        clip_info = {"mode": "public", "delta": sens.delta, "initial_clip_norm": clip,
                     "input_range": list(input_range),
                     "description": "C_t = the largest analytic per-example gradient norm "
                     f"found at sampled points of the input domain {list(input_range)} at the "
                     "current weights (public information, recomputed every epoch; never above "
                     "Δ; an estimate of the supremum, so a clip may bind, which costs bias, "
                     "not privacy)"}
    elif max_grad_norm == "adaptive":
        adaptive = dict(adaptive_clipping or {})
        clip = float(adaptive.pop("initial_clipbound", sens.delta if sens else 1.0))
        clip_info = {"mode": "adaptive", "initial_clip_norm": clip,
                     "description": "adaptive quantile clipping (Andrew et al., "
                     "arXiv:1905.03871); the clip norm changes every step"}
    else:
        clip = float(max_grad_norm)
        clip_info = {"mode": "fixed", "clip_norm": clip,
                     "description": f"fixed clip norm C = {clip:g} (DP-SGD)"}
        if sens is not None:
            clip_info["delta"] = sens.delta
    if credit != "none" and max_grad_norm != "certified":
        raise NotImplementedError(
            f"credit={credit!r} needs max_grad_norm='certified': the credit counts the shot "
            f"noise of unclipped gradients."
        )
    if credit != "none" and (classical or len(layers) != 1):
        raise NotImplementedError(f"credit={credit!r} supports one TorchLayer and no trainable "
                                  f"classical parameters.")
    if credit in ("adaptive", "isotropic") and not layers[0].qnode.shots:
        raise ValueError(f"credit={credit!r} needs finite shots; the QNode has shots=None.")
    if sens is not None:
        max_variance = max(((hi - lo) / 2.0) ** 2 for lo, hi in sens.observable_ranges)
        if not (0.0 <= variance_floor <= max_variance):
            raise ValueError(
                f"`variance_floor` must be in [0, {max_variance:g}] (no single-shot variance of "
                f"the measured observables can exceed (λmax − λmin)²/4). Found "
                f"{variance_floor!r}."
            )

    sigma = calibrate_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                       sample_rate=sample_rate, steps=steps,
                                       accountant=accountant)
    if target_epsilon > _WEAK_EPSILON:
        warnings.warn(
            f"target_epsilon = {target_epsilon:g} nats (σ = {sigma:.3g}): a likelihood ratio up "
            f"to e^ε = {math.exp(min(target_epsilon, 700)):.3g} between neighbouring data sets "
            f"protects little. Typical private training uses ε between 0.1 and {_WEAK_EPSILON:g}.",
            PrivacyWarning, stacklevel=2)
    floor = None
    if credit != "none":
        warnings.warn(
            f"credit={credit!r}: the added Gaussian noise is a fixed floor (the level whose ε "
            f"alone is {proven_epsilon_factor:g} × target), so the PROVEN ε ends near "
            f"{proven_epsilon_factor:g} × {target_epsilon:g}; the credited ε reaches the target "
            f"only if the shot noise makes up the rest, which measured shot noise rarely does "
            f"(docs/noise.md). Use credit='none' for a proven ε at the target.",
            PrivacyWarning, stacklevel=2)
        if not (math.isfinite(proven_epsilon_factor) and proven_epsilon_factor > 1.0):
            raise ValueError(
                f"`proven_epsilon_factor` must be a finite number above 1 (the proven ε may "
                f"exceed the target by at most this factor when shot noise is credited). Found "
                f"{proven_epsilon_factor!r}."
            )
        floor = calibrate_noise_multiplier(
            target_epsilon=proven_epsilon_factor * target_epsilon, target_delta=target_delta,
            sample_rate=sample_rate, steps=steps, accountant=accountant)
    extra = {
        "versions": _versions(),
        "clipping": clip_info,
        "variance_floor": variance_floor,
        "variance_floor_source": variance_floor_source,
        "randomness": _randomness(secure_mode, seed),
        "planned_steps": steps,
    }
    if sampler_note is not None:
        extra["sampling_subset"] = sampler_note
    if coverage is not None:
        extra["certified_coverage"] = coverage
    if sens is not None:
        extra["sensitivity"] = sens.as_dict()
    if floor is not None:
        extra["noise_floor_multiplier"] = floor
        extra["proven_epsilon_factor"] = proven_epsilon_factor
    with warnings.catch_warnings():
        warnings.simplefilter("always", PrivacyWarning)
        ledger = PrivacyLedger(
            target_epsilon=target_epsilon, target_delta=target_delta, noise_multiplier=sigma,
            sample_rate=sample_rate, sensitivity=factor * clip, adjacency=adjacency,
            credit_mode=credit,
            beta=beta, accountant=accountant, dataset_size=n,
            preprocessing_note=preprocessing_note, extra=extra,
        )
    gen = None
    if not secure_mode:
        gen = torch.Generator()
        gen.manual_seed(seed if seed is not None else int.from_bytes(os.urandom(8), "big") >> 1)
    # Secure mode (or no seed): the Poisson-sampling seed comes from the OS's CSPRNG.
    loader_seed = seed + 1 if seed is not None else int.from_bytes(os.urandom(8), "big") >> 1
    if distributed:
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            raise ValueError("distributed=True needs an initialised torch.distributed process "
                             "group (e.g. launched by torchrun).")
        rank = torch.distributed.get_rank()
        loader_seed += 1_000_003 * rank  # independent inclusion coins on every process
        for p in module.parameters():
            torch.distributed.broadcast(p.data, src=0)
    loader_gen = torch.Generator().manual_seed(loader_seed)
    dp_loader = _poisson_loader(data_loader, dataset, sample_rate, loader_gen, distributed)
    gs_module = GradSampleModule(module, batch_first=True, loss_reduction=loss_reduction)
    # Poisson sampling: a second backward pass before step() raises (as Opacus's PrivacyEngine).
    gs_module.forbid_grad_accumulation()
    private_opt = QShiftDPOptimizer(
        optimizer, noise_multiplier=sigma, max_grad_norm=clip,
        expected_batch_size=expected_batch_size, clip_groups=clip_groups,
        certified=max_grad_norm == "certified", adjacency=adjacency, credit=credit,
        credit_layer=layers[0] if credit != "none" else None, recorder=recorder, beta=beta,
        steps=steps, variance_floor=variance_floor, noise_floor_multiplier=floor,
        adaptive_clipping=adaptive, generator=gen, secure_mode=secure_mode, ledger=ledger,
        outcome_range=sens.observable_ranges[0] if sens is not None else None,
        loss_reduction=loss_reduction, distributed=distributed,
        clip_norm_fn=(None if public_clip is None else
                      (lambda step: min(sens.delta, public_clip(step)))),
        clip_refresh_steps=max(1, round(1.0 / sample_rate)),
    )
    private_opt.sensitivity = sens
    private_opt.attach_loader(dp_loader)
    return gs_module, private_opt, dp_loader
