r"""``make_private``: the Q-ShiftDP front end of Opacus for quantum and hybrid models.

It returns Opacus's triple ``(module, optimizer, data_loader)``: the module wrapped in
:class:`opacus.GradSampleModule` (per-example gradients; the TorchLayer grad sampler of
:mod:`~pennylane_qshiftdp.qnn.evaluation` computes those of the quantum weights from the private
parameter-shift transform), a :class:`~pennylane_qshiftdp.QShiftDPOptimizer` (an
Opacus ``DPOptimizer``: per-example clipping in ``step()``, Gaussian noise, the ledger) and a
Poisson-sampling loader (Opacus's ``UniformWithReplacementSampler``, empty batches supported, as
:class:`opacus.data_loader.DPDataLoader`). σ is calibrated by an accountant of Opacus's
registry (dp-accounting's PLD by default) for (ε, δ, epochs) and charged to the
:class:`~.PrivacyLedger`.

The guarantee holds for any training loop that calls ``optimizer.step()`` once per backward
pass over one batch of the returned loader, and any loss that is a sum or mean of per-example
terms: clipping at ``C`` is enforced in the optimizer. ``max_grad_norm="certified"`` (the
default for a model with a classical clip or a credit mode) sets ``C`` to the a-priori
bound Δ of the parameter-shift gradient (Q-ShiftDP: for a certified model and the
declared loss no clip binds); every other model gets ``max_grad_norm="calibrated"`` by
default: C is the median
per-example gradient norm at the initial weights on public synthetic examples (never above
Δ), which adds σC of noise where σΔ was loose (docs/utility.md).

Nothing the release divides by or samples with depends on the private data: the noisy sum is
divided by a public constant b (the loader's ``batch_size`` or a declared
``expected_batch_size``), never by q·N as Opacus 1.0–1.6 do (opacus#819), and q comes from
``sample_rate``, a declared ``dataset_size``, or ``len(dataset)`` treated as public (said so in
the privacy statement).

This module is library code: it imports no data set, model or application code.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Callable

import torch
from numpy.typing import ArrayLike
from opacus import GradSampleModule

from . import _compat, qnn
from ._validation import check_positive_float
from .accountants.calibration import (
    DEFAULT_ACCOUNTANT,
    calibrate_noise_multiplier,
    epochs_to_steps,
)
from .accountants.config import LedgerConfig
from .accountants.ledger import PrivacyLedger
from .data_loader import poisson_loader, private_dataset
from .exceptions import PrivacyWarning, SensitivityError
from .gradients.sensitivity_bound import Sensitivity
from .gradients.shot_statistics import ShotRecorder
from .losses import BoundedLoss, LinearLoss
from .model_checks import (
    certified_coverage,
    check_per_example_loss,
    check_supported,
    check_training_buffers,
    feeds_data,
    gradient_routes,
    layer_sensitivity,
    output_shape,
    preserved_shot_rngs,
    simulator_twins,
    torch_layers,
    twinned_devices,
)
from .optimizers.optimizer import QShiftDPOptimizer
from .optimizers.public_clip import (
    CALIBRATION_EXAMPLES,
    CALIBRATION_QUANTILE,
    calibrated_clip_norm,
    domain_gradient_bound,
    synthetic_batch,
    synthetic_gradient_norms,
)
from .optimizers.selection import build_optimizer
from .specs import (
    CLIP_MODES,
    DEFAULT_PROVEN_EPSILON_FACTOR,
    AccountingSpec,
    ClipSpec,
    CreditSpec,
    RandomnessSpec,
    SamplingSpec,
)

__all__ = [
    "make_private", "check_per_example_loss", "default_clip_mode", "CLIP_MODES",
    "AUTOMATIC_CLIPPING_GAMMA", "DEFAULT_PROVEN_EPSILON_FACTOR",
]

#: Stability constant γ of automatic clipping, in units of C (Bu et al., arXiv:2206.07136,
#: who use 0.01 throughout): a per-example gradient g is scaled by 1/(‖g‖ + γ).
AUTOMATIC_CLIPPING_GAMMA = 0.01

# Synthetic examples behind the diagnosis's clip check in the modes that do not calibrate.
_DIAGNOSIS_EXAMPLES = 16

# Above this target ε (nats) make_private warns that the guarantee protects little.
_WEAK_EPSILON = 10.0


@dataclasses.dataclass
class _Model:
    """The converted module, its TorchLayers and its trainable parameters by kind."""

    module: torch.nn.Module
    layers: list
    trainable: list
    quantum: set  # ids of the TorchLayers' trainable parameters
    classical: list


#: How q was obtained (the ledger's ``sample_rate_source``): given, from a declared data set
#: size, or from ``len(dataset)`` (Opacus's convention; N is then treated as public).
SAMPLE_RATE_SOURCES = ("sample_rate", "dataset_size", "dataset_length")


@dataclasses.dataclass
class _Sampling:
    """Poisson sampling: the examples, the rate q, the public divisor b and the steps T.

    ``public_n`` is the data set size the privacy statement may show: the declared one, or
    ``len(dataset)`` when q is computed from it (then treated as public), else ``None``.
    """

    dataset: torch.utils.data.Dataset
    note: str | None
    public_n: int | None
    sample_rate: float
    sample_rate_source: str
    expected_batch_size: float
    expected_batch_size_source: str
    steps: int


@dataclasses.dataclass
class _Clipping:
    """The clip norm C (or per-group norms) and what the statement says about it."""

    clip: float
    groups: list | None
    info: dict
    public_fn: Callable[[int], float] | None = None
    adaptive: dict | None = None
    synthetic: _Synthetic | None = None  # the public synthetic norms (calibration, diagnosis)


def _check_arguments(module, optimizer) -> None:
    """The checks of the optimizer and the module that need no conversion or data (after the
    specs' own checks, before any warning)."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"`optimizer` must be a torch.optim.Optimizer. Found "
                        f"{type(optimizer).__name__}.")
    if isinstance(module, GradSampleModule) or hasattr(module, "autograd_grad_sample_hooks"):
        raise ValueError(
            "`module` is already private (it carries Opacus's per-example hooks from an earlier "
            "make_private). Pass a fresh module, or call remove_hooks() on the returned "
            "GradSampleModule first."
        )


def _prepare_model(module, optimizer) -> _Model:
    """Convert PennyLane's TorchLayers (Opacus's fixer, in place: the optimizer's Parameter
    objects are kept), refuse what Opacus cannot train, split the parameters by kind."""
    module = qnn.convert_torch_layers(module)
    layers = torch_layers(module)
    check_supported(module, layers)
    trainable = [p for p in module.parameters() if p.requires_grad]
    opt_params = {id(p) for g in optimizer.param_groups for p in g["params"]}
    if not opt_params or not opt_params <= {id(p) for p in trainable}:
        raise ValueError("`optimizer` must optimise (some of) the module's trainable "
                         "parameters, and only those.")
    quantum = {id(p) for layer in layers for p in layer.parameters() if p.requires_grad}
    classical = [p for p in trainable if id(p) not in quantum]
    return _Model(module, layers, trainable, quantum, classical)


def _prepare_sampling(data_loader, spec: SamplingSpec) -> _Sampling:
    """The examples Poisson sampling runs over, the rate q, the divisor b and the steps.

    Nothing the release divides by depends on the private data: b is the loader's
    ``batch_size`` or the declared ``expected_batch_size`` (never q·N, which differs between
    neighbouring data sets under add/remove adjacency: opacus#819). q is ``sample_rate``, or
    b / ``dataset_size`` for a declared size, or Opacus's ``1/len(data_loader)``, computed from
    ``len(dataset)`` (the statement then says N is treated as public).
    """
    dataset, note = private_dataset(data_loader)
    batch_size = data_loader.batch_size
    if batch_size is None or batch_size < 1:
        raise ValueError(f"`data_loader` must have a positive batch_size. Found {batch_size}.")
    if spec.expected_batch_size is None:
        b, b_source = float(batch_size), "the loader's batch_size"
    else:
        b, b_source = spec.expected_batch_size, "declared (expected_batch_size)"
    public_n: int | None
    if spec.sample_rate is not None:
        q, source, public_n = spec.sample_rate, "sample_rate", None
    elif spec.dataset_size is not None:
        public_n = spec.dataset_size
        if b >= public_n:
            warnings.warn(
                f"The expected batch size ({b:g}) is not below the declared dataset_size "
                f"({public_n}): the sampling rate is q = 1, so there is no privacy "
                f"amplification by sampling.", PrivacyWarning, stacklevel=3)
        q, source = min(1.0, b / public_n), "dataset_size"
    else:
        public_n = len(dataset)
        if batch_size >= public_n:
            warnings.warn(
                f"The loader's batch_size ({batch_size}) is not below the data set size "
                f"({public_n}): the sampling rate is q = 1, so there is no privacy "
                f"amplification by sampling.", PrivacyWarning, stacklevel=3)
        q, source = 1.0 / len(data_loader), "dataset_length"
        if note is not None:  # N is treated as public on this path: the statement may show it
            note += f" (N = {public_n} of {len(data_loader.dataset)})"
    steps = epochs_to_steps(epochs=spec.epochs, sample_rate=q)
    return _Sampling(dataset, note, public_n, q, source, b, b_source, steps)


def _prepare_sensitivity(model: _Model, example, clip: ClipSpec,
                         credit_spec: CreditSpec) -> Sensitivity | None:
    """The certified bound Δ where the clip mode needs it (or, for adaptive clipping, as a
    natural first clip norm when it can be computed)."""
    layers, max_grad_norm, credit = model.layers, clip.max_grad_norm, credit_spec.credit
    loss, adaptive_clipping, jacobian_bound = clip.loss, clip.adaptive_clipping, clip.jacobian_bound
    if max_grad_norm == "adaptive" and credit == "none":
        if len(layers) == 1 and not model.classical and (adaptive_clipping or {}).get(
                "initial_clipbound") is None:
            try:  # the certified bound is a natural first clip norm; any value is private
                return layer_sensitivity(model.module, layers[0], example,
                                         loss=loss or LinearLoss(), adjacency="add_remove",
                                         jacobian_bound=jacobian_bound)
            except (SensitivityError, ValueError, NotImplementedError):
                return None
        return None
    if max_grad_norm == "calibrated":
        if len(layers) == 1 and not model.classical:
            try:  # Δ stays the certificate: the calibrated clip is never above it
                return layer_sensitivity(model.module, layers[0], example,
                                         loss=LinearLoss() if loss is None else loss,
                                         adjacency="add_remove", jacobian_bound=jacobian_bound)
            except (SensitivityError, ValueError, NotImplementedError):
                return None
        return None
    if max_grad_norm in ("certified", "public") or credit != "none":
        if len(layers) != 1:
            what = (f"max_grad_norm={max_grad_norm!r}" if max_grad_norm in ("certified", "public")
                    else f"credit={credit!r}")
            raise ValueError(f"{what} needs exactly one TorchLayer (its bound is that of one "
                             f"circuit). Found {len(layers)}; pass a float clip norm (DP-SGD) "
                             f"or 'adaptive' instead.")
        return layer_sensitivity(model.module, layers[0], example,
                                 loss=LinearLoss() if loss is None else loss,
                                 adjacency="add_remove", jacobian_bound=jacobian_bound)
    return None


def default_clip_mode(module: torch.nn.Module, *,
                      classical_max_grad_norm: float | None = None,
                      credit: str = "none") -> str:
    """The clip mode :func:`make_private` uses when ``max_grad_norm`` is not given.

    ``"calibrated"`` (C = the median per-example gradient norm of the model at its initial
    weights on public synthetic examples, never above the certified Δ where Δ applies;
    docs/utility.md) for every model without a shot-noise credit or a classical clip;
    ``"certified"`` (Q-ShiftDP: C = the a-priori bound Δ) for a hybrid model whose classical
    parameters get their own clip (``classical_max_grad_norm``) and for every shot-noise
    credit mode (a credit counts the shot noise of unclipped gradients). The choice reads the
    arguments only, never the data, so it costs no privacy (derived here; docs/engine.md §3a).

    Args:
        module: the model, with PennyLane or product TorchLayers (any structure).
        classical_max_grad_norm: as in :func:`make_private`.
        credit: as in :func:`make_private`.

    Returns:
        str: ``"calibrated"`` or ``"certified"``.

    Example:
        >>> default_clip_mode(torch.nn.Linear(3, 2))
        'calibrated'
    """
    del module  # every structure gets the calibrated clip; kept for the signature
    if credit != "none" or classical_max_grad_norm is not None:
        return "certified"
    return "calibrated"


@dataclasses.dataclass
class _Synthetic:
    """Per-example gradient norms on public synthetic examples at the initial weights."""

    norms: torch.Tensor
    inputs: str  # where the inputs were drawn from
    loss: str  # which loss the gradients are of


def _synthetic_norms(model: _Model, sampling: _Sampling, clip: ClipSpec,
                     n: int = CALIBRATION_EXAMPLES) -> _Synthetic:
    """Gradient norms of the model at its current (initial) weights on ``n`` public synthetic
    examples: only the shape and dtype of the data's first row and label are read."""
    input_range, loss, criterion = clip.input_range, clip.loss, clip.criterion
    example, label = sampling.dataset[0][0], sampling.dataset[0][1]
    shape = output_shape(model.module, example)
    n_out = int(shape[-1]) if len(shape) >= 1 else 1
    x, y = synthetic_batch(torch.as_tensor(example), torch.as_tensor(label), n_outputs=n_out,
                           n=n, input_range=input_range, seed=0)
    if criterion is not None:
        loss_fn, loss_text = criterion, "the declared criterion"
    elif loss is not None:
        loss_fn, loss_text = loss, f"the declared loss ({getattr(loss, 'name', 'loss')})"
    else:
        loss_fn = None
        loss_text = ("cross-entropy" if not torch.as_tensor(label).is_floating_point()
                     and n_out >= 2 else "a linear loss with |∂ℓ/∂f| = 1 per output")
    with simulator_twins(model.module):
        norms = synthetic_gradient_norms(model.module, model.trainable, x, y, loss_fn)
    where = (f"uniform on the declared input_range {list(input_range)}" if input_range
             is not None else "standard normal per input feature")
    return _Synthetic(norms, where, loss_text)


def _check_loss(model: _Model, sampling: _Sampling, clip: ClipSpec, example) -> str | None:
    """Warn about a declared loss the clip mode does not read, probe ``criterion`` for
    coupled examples, and return what the certified bound covers (``"certified"`` only)."""
    mode, loss = clip.max_grad_norm, clip.loss
    if loss is not None and mode not in ("certified", "public", "calibrated"):
        warnings.warn("`loss` is used only with max_grad_norm='calibrated', 'certified' or "
                      "'public'; the clip norm bounds the gradients here.", PrivacyWarning,
                      stacklevel=3)
    coverage = None
    if mode == "certified":
        coverage = certified_coverage(model.module, model.layers[0], example, loss, clip.strict)
    if clip.criterion is not None:
        check_per_example_loss(clip.criterion, output_shape(model.module, example),
                               sampling.dataset[0][1])
    return coverage


def _synthetic_for(model: _Model, sampling: _Sampling, clip: ClipSpec) -> _Synthetic | None:
    """The public synthetic norms the calibration reads (``"calibrated"``), or a few for the
    diagnosis's clip check (``None`` where that fails, and in the modes without a clip)."""
    if clip.max_grad_norm == "calibrated":
        return _synthetic_norms(model, sampling, clip)
    if clip.max_grad_norm in ("automatic", "adaptive"):
        return None
    try:  # for the diagnosis only (a clip far above the gradients): a few examples
        return _synthetic_norms(model, sampling, clip, n=_DIAGNOSIS_EXAMPLES)
    except Exception:  # noqa: BLE001 - the diagnosis then skips its clip check
        return None


@dataclasses.dataclass(frozen=True)
class _ClipInputs:
    """What a clip-mode resolver reads (:data:`_CLIP_RESOLVERS`)."""

    model: _Model
    sampling: _Sampling
    sens: Sensitivity | None
    spec: ClipSpec
    seed: int | None
    synthetic: _Synthetic | None
    example: torch.Tensor  # the data's first row (only its shape is read)


def _calibrated_clipping(inputs: _ClipInputs) -> _Clipping:
    """C = the median per-example gradient norm at the initial weights on public synthetic
    examples (shape and dtype of the data's first row only; inputs on ``input_range`` or
    standard normal; synthetic labels), capped at Δ where Δ applies."""
    sens, synthetic = inputs.sens, inputs.synthetic
    classical_max_grad_norm = inputs.spec.classical_max_grad_norm
    assert synthetic is not None  # computed by _prepare_clipping for this mode
    if classical_max_grad_norm is not None:
        raise ValueError(
            "max_grad_norm='calibrated' calibrates one clip for all trainable parameters; "
            f"`classical_max_grad_norm` ({classical_max_grad_norm!r}) has no meaning there. "
            "Drop it, or use max_grad_norm='certified' for per-layer clipping.")
    norms, where, loss_text = synthetic.norms, synthetic.inputs, synthetic.loss
    clip = calibrated_clip_norm(norms)
    capped = sens is not None and sens.delta < clip
    if sens is not None and capped:
        clip = sens.delta
    info: dict = {"mode": "calibrated", "clip_norm": clip, "quantile": CALIBRATION_QUANTILE,
            "synthetic_examples": CALIBRATION_EXAMPLES, "synthetic_inputs": where,
            "calibration_loss": loss_text,
            "synthetic_gradient_norm_quantiles": {
                str(p): float(torch.quantile(norms, p)) for p in (0.1, 0.5, 0.9)},
            "description": f"C = {clip:.4g}, the median per-example gradient norm of the model "
            f"at its initial weights (chosen before the data) on {CALIBRATION_EXAMPLES} public "
            f"synthetic examples (inputs {where}, labels drawn at random, {loss_text}; only the "
            "shape and dtype of the data's rows are read, never their values)"
            + ("; capped at the certified bound Δ" if capped else
               f"; the certified bound Δ = {sens.delta:.4g} stays the certificate, not the clip"
               if sens is not None else "")
            + "; every per-example gradient is clipped at C (a clip may bind: bias, not "
            "privacy)"}
    if sens is not None:
        info["delta"] = sens.delta
    if inputs.spec.chosen_by_default:
        info["description"] += (" (the default: chosen from the model, its initial weights and "
                                "public synthetic inputs only, never from the data)")
    return _Clipping(clip, None, info)


def _certified_clipping(inputs: _ClipInputs) -> _Clipping:
    """C = the certified bound Δ (with a classical clip: per-layer clipping, C = √(Δ² + C_cl²))."""
    model, sens = inputs.model, inputs.sens
    classical_max_grad_norm, classical = inputs.spec.classical_max_grad_norm, model.classical
    assert sens is not None  # _prepare_sensitivity computes Δ in this mode (or raises)
    quantum_params = [p for p in model.trainable if id(p) in model.quantum]
    groups, clip = None, sens.delta
    if classical:
        if classical_max_grad_norm is None:
            raise ValueError(
                f"max_grad_norm='certified' bounds the quantum weights only; the "
                f"{len(classical)} trainable classical parameter tensors need "
                f"`classical_max_grad_norm` (per-layer clipping), or pass one float "
                f"`max_grad_norm` to clip everything."
            )
        check_positive_float(classical_max_grad_norm, "classical_max_grad_norm")
        groups = [(quantum_params, sens.delta), (classical, classical_max_grad_norm)]
        clip = math.hypot(sens.delta, classical_max_grad_norm)
    info = {"mode": "certified", "delta": sens.delta,
            "classical_max_grad_norm": classical_max_grad_norm,
            "description": "C = the certified a-priori bound Δ of the parameter-shift "
            "gradient" + (f" combined with C_classical = {classical_max_grad_norm:g}"
                          if classical else "")
            + "; every per-example gradient is clipped at C"}
    return _Clipping(clip, groups, info)


def _public_clipping(inputs: _ClipInputs) -> _Clipping:
    """C_t = the largest analytic per-example gradient norm at sampled points of the declared
    input domain at the current weights (recomputed every epoch), never above Δ."""
    model, sens, spec, seed = inputs.model, inputs.sens, inputs.spec, inputs.seed
    layers, input_range, loss = model.layers, spec.input_range, spec.loss
    example = inputs.example
    if model.classical or len(layers) != 1 or model.module is not layers[0] and not feeds_data(
            model.module, layers[0], example):
        raise ValueError("max_grad_norm='public' needs a model whose only trainable layer "
                         "is one TorchLayer fed by the data (its input domain is "
                         "`input_range`).")
    if input_range is None:
        raise ValueError("max_grad_norm='public' needs `input_range=(low, high)`, a bound "
                         "on every input feature known without the data.")
    assert sens is not None  # _prepare_sensitivity computes Δ in this mode (or raises)
    layer = layers[0]
    n_in = int(torch.as_tensor(example).numel())
    bounds = sens.loss_grad_bounds

    def clip_norm_fn(step):
        # A softmax cross-entropy bounds by its largest actual gradient over the labels
        # (domain_gradient_bound's `loss`); any other loss by the norm-based bound.
        return domain_gradient_bound(layer, input_range=input_range, n_inputs=n_in,
                                     loss_grad_bounds=bounds, seed=(seed or 0, step),
                                     loss=loss)

    clip = min(sens.delta, clip_norm_fn(0))
    info = {"mode": "public", "delta": sens.delta, "initial_clip_norm": clip,
            "input_range": list(input_range),
            "description": "C_t = the largest analytic per-example gradient norm "
            f"found at sampled points of the input domain {list(input_range)} at the "
            "current weights (public information, recomputed every epoch; never above "
            "Δ; an estimate of the supremum, so a clip may bind, which costs bias, "
            "not privacy)"}
    return _Clipping(clip, None, info,
                     public_fn=lambda step: min(sens.delta, clip_norm_fn(step)))


def _automatic_clipping(inputs: _ClipInputs) -> _Clipping:
    """Automatic clipping (Bu et al.): every per-example gradient normalised, C = 1."""
    classical_max_grad_norm = inputs.spec.classical_max_grad_norm
    if classical_max_grad_norm is not None:
        raise ValueError(
            "max_grad_norm='automatic' normalises every per-example gradient as a whole; "
            f"`classical_max_grad_norm` ({classical_max_grad_norm!r}) has no meaning there. "
            "Drop it, or use max_grad_norm='certified' for per-layer clipping.")
    info: dict = {"mode": "automatic", "clip_norm": 1.0, "gamma": AUTOMATIC_CLIPPING_GAMMA,
            "description": "automatic clipping (Bu et al., arXiv:2206.07136): every "
            "per-example gradient g is scaled to g/(‖g‖ + "
            f"{AUTOMATIC_CLIPPING_GAMMA:g}), of norm below C = 1"}
    if inputs.spec.chosen_by_default:
        info["description"] += (
            " (the default for this model: it trains parameters outside a single "
            "TorchLayer, which the certified bound Δ does not cover; chosen from the "
            "model's structure only, never from the data)")
    return _Clipping(1.0, None, info)


def _adaptive_clipping(inputs: _ClipInputs) -> _Clipping:
    """Adaptive quantile clipping (Andrew et al.): a first clip norm and the settings."""
    sens = inputs.sens
    adaptive = dict(inputs.spec.adaptive_clipping or {})
    clip = float(adaptive.pop("initial_clipbound", sens.delta if sens else 1.0))
    info = {"mode": "adaptive", "initial_clip_norm": clip,
            "description": "adaptive quantile clipping (Andrew et al., "
            "arXiv:1905.03871); the clip norm changes every step"}
    return _Clipping(clip, None, info, adaptive=adaptive)


def _fixed_clipping(inputs: _ClipInputs) -> _Clipping:
    """A positive float ``max_grad_norm``: DP-SGD clipping of all parameters at C."""
    clip = float(inputs.spec.max_grad_norm)  # type: ignore[arg-type]  # a float here
    info = {"mode": "fixed", "clip_norm": clip,
            "description": f"fixed clip norm C = {clip:g} (DP-SGD)"}
    if inputs.sens is not None:
        info["delta"] = inputs.sens.delta
    return _Clipping(clip, None, info)


#: The resolver of each string clip mode (a float ``max_grad_norm`` is :func:`_fixed_clipping`):
#: a new mode is one resolver here and its name in :data:`~pennylane_qshiftdp.specs.CLIP_MODES`.
_CLIP_RESOLVERS: dict[str, Callable[[_ClipInputs], _Clipping]] = {
    "calibrated": _calibrated_clipping,
    "certified": _certified_clipping,
    "public": _public_clipping,
    "automatic": _automatic_clipping,
    "adaptive": _adaptive_clipping,
}
assert set(_CLIP_RESOLVERS) == set(CLIP_MODES), "every clip mode needs its resolver"


def _prepare_clipping(model: _Model, sampling: _Sampling, sens, clip: ClipSpec,
                      randomness: RandomnessSpec) -> _Clipping:
    """The clip norm of the mode and its description for the privacy statement (the mode's
    resolver), with the public synthetic norms it and the diagnosis read."""
    synthetic = _synthetic_for(model, sampling, clip)
    example = sampling.dataset[0][0]
    mode = clip.max_grad_norm
    resolver = _CLIP_RESOLVERS[mode] if isinstance(mode, str) else _fixed_clipping
    clipping = resolver(_ClipInputs(model, sampling, sens, clip, randomness.seed, synthetic,
                                    example))
    clipping.synthetic = synthetic
    return clipping


def _check_credit(model: _Model, sens, credit_spec: CreditSpec, max_grad_norm) -> None:
    """A shot-noise credit needs certified clipping of one TorchLayer with finite shots."""
    credit, variance_floor = credit_spec.credit, credit_spec.variance_floor
    if credit != "none" and max_grad_norm != "certified":
        raise NotImplementedError(
            f"credit={credit!r} needs max_grad_norm='certified': the credit counts the shot "
            f"noise of unclipped gradients."
        )
    if credit != "none" and (model.classical or len(model.layers) != 1):
        raise NotImplementedError(f"credit={credit!r} supports one TorchLayer and no trainable "
                                  f"classical parameters.")
    if credit in ("adaptive", "isotropic") and not model.layers[0].qnode.shots:
        raise ValueError(f"credit={credit!r} needs finite shots; the QNode has shots=None.")
    unseeded = _unseeded_devices(model.layers)
    if credit != "none" and unseeded:
        raise NotImplementedError(
            f"credit={credit!r} counts shot noise as privacy noise, which needs a shot sampler "
            f"whose randomness is known (a simulator's numpy generator, seeded from the OS or "
            f"reseeded by you); device {unseeded[0]!r} samples with a generator of its own that "
            f"pennylane_qshiftdp cannot seed. Use credit='none' on it.")
    if sens is not None:
        max_variance = max(((hi - lo) / 2.0) ** 2 for lo, hi in sens.observable_ranges)
        if not (0.0 <= variance_floor <= max_variance):
            raise ValueError(
                f"`variance_floor` must be in [0, {max_variance:g}] (no single-shot variance of "
                f"the measured observables can exceed (λmax − λmin)²/4). Found "
                f"{variance_floor!r}."
            )


def _prepare_noise(sampling: _Sampling, accounting: AccountingSpec,
                   credit_spec: CreditSpec) -> tuple[float, float | None]:
    """σ from the accountant and, with a credit mode, the data-independent noise floor (κ was
    checked by the :class:`~.CreditSpec`)."""
    target_epsilon, target_delta = accounting.target_epsilon, accounting.target_delta
    accountant, credit = accounting.accountant, credit_spec.credit
    proven_epsilon_factor = credit_spec.proven_epsilon_factor
    sigma = calibrate_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                       sample_rate=sampling.sample_rate, steps=sampling.steps,
                                       accountant=accountant)
    if target_epsilon > _WEAK_EPSILON:
        warnings.warn(
            f"target_epsilon = {target_epsilon:g} nats (σ = {sigma:.3g}): a likelihood ratio up "
            f"to e^ε = {math.exp(min(target_epsilon, 700)):.3g} between neighbouring data sets "
            f"protects little. Typical private training uses ε between 0.1 and {_WEAK_EPSILON:g}.",
            PrivacyWarning, stacklevel=3)
    if credit == "none":
        return sigma, None
    warnings.warn(
        f"credit={credit!r}: the added Gaussian noise is a fixed floor (the level whose ε "
        f"alone is {proven_epsilon_factor:g} × target), so the PROVEN ε ends near "
        f"{proven_epsilon_factor:g} × {target_epsilon:g}; the credited ε reaches the target "
        f"only if the shot noise makes up the rest, which measured shot noise rarely does "
        f"(docs/noise.md). Use credit='none' for a proven ε at the target.",
        PrivacyWarning, stacklevel=3)
    floor = calibrate_noise_multiplier(
        target_epsilon=proven_epsilon_factor * target_epsilon, target_delta=target_delta,
        sample_rate=sampling.sample_rate, steps=sampling.steps, accountant=accountant)
    return sigma, floor


@dataclasses.dataclass(frozen=True)
class _Prepared:
    """What make_private has prepared when the ledger is made (its provenance reads it)."""

    model: _Model
    sampling: _Sampling
    sens: Sensitivity | None
    clipping: _Clipping
    sigma: float
    floor: float | None
    coverage: str | None  # what the certified bound covers ("certified" only)
    allocation: tuple[dict, dict] | None  # the shot budget's summary and provenance


def _ledger_extra(prepared: _Prepared, credit_spec: CreditSpec, randomness: RandomnessSpec,
                  routes: dict) -> dict:
    """Everything the privacy statement needs beside the accounting (the ledger's ``extra``)."""
    sampling, sens, devices = prepared.sampling, prepared.sens, prepared.model.layers
    extra = {
        "gradient_routes": routes,
        "circuit_execution": _circuit_execution(routes, devices),
        "versions": _versions(),
        "clipping": prepared.clipping.info,
        "variance_floor": credit_spec.variance_floor,
        "variance_floor_source": credit_spec.variance_floor_source,
        "randomness": (_randomness(randomness.secure_mode, randomness.seed)
                       + _device_randomness(devices)),
        "planned_steps": sampling.steps,
        "expected_batch_size_source": sampling.expected_batch_size_source,
    }
    if prepared.allocation is not None:
        extra["shot_budget"], extra["provenance"] = prepared.allocation
    if sampling.note is not None:
        extra["sampling_subset"] = sampling.note
    if prepared.coverage is not None:
        extra["certified_coverage"] = prepared.coverage
    if sens is not None:
        extra["sensitivity"] = sens.as_dict()
    if prepared.floor is not None:
        extra["noise_floor_multiplier"] = prepared.floor
        extra["proven_epsilon_factor"] = credit_spec.proven_epsilon_factor
    return extra


def _prepare_ledger(accounting: AccountingSpec, credit_spec: CreditSpec,
                    randomness: RandomnessSpec, prepared: _Prepared, example) -> PrivacyLedger:
    """The ledger, with everything the privacy statement needs in its provenance."""
    routes = gradient_routes(prepared.model.module, prepared.model.layers, example)
    extra = _ledger_extra(prepared, credit_spec, randomness, routes)
    sampling, adjacency = prepared.sampling, accounting.adjacency
    factor = 2.0 if adjacency == "replace_one" else 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("always", PrivacyWarning)
        return PrivacyLedger(LedgerConfig(
            target_epsilon=accounting.target_epsilon, target_delta=accounting.target_delta,
            noise_multiplier=prepared.sigma, sample_rate=sampling.sample_rate,
            sensitivity=factor * prepared.clipping.clip, adjacency=adjacency,
            credit_mode=credit_spec.credit, beta=credit_spec.beta,
            accountant=accounting.accountant, dataset_size=sampling.public_n,
            preprocessing_note=accounting.preprocessing_note, extra=extra,
            expected_batch_size=sampling.expected_batch_size,
            sample_rate_source=sampling.sample_rate_source,
        ))


def _prepare_loader(model: _Model, data_loader, sampling: _Sampling,
                    randomness: RandomnessSpec, distributed: bool):
    """The noise generator (``None`` in secure mode) and the Poisson loader."""
    secure_mode, seed = randomness.secure_mode, randomness.seed
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
        for p in model.module.parameters():
            torch.distributed.broadcast(p.data, src=0)
    loader_gen = torch.Generator().manual_seed(loader_seed)
    return gen, poisson_loader(data_loader, sampling.dataset, sampling.sample_rate, loader_gen,
                               distributed)


def _versions() -> dict:
    """Versions of the packages the guarantee depends on (for the ledger's provenance)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("pennylane-qshiftdp", "pennylane", "pennylane-lightning", "opacus",
                 "dp-accounting", "torch", "numpy", "scipy"):
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


def _circuit_execution(routes: dict, layers) -> dict:
    """Per layer (by the names of ``routes``, in the same order as ``layers``), who runs its
    circuits: the device, or the product's state-vector kernels (the same law)."""
    from .qnn.circuit_count import execution_text
    from .sampling.modes import shot_sampling

    out = {}
    for (name, route), layer in zip(routes.items(), layers, strict=False):
        qnode = layer.qnode
        sampling = shot_sampling(qnode) if qnode.shots else "analytic"
        out[name] = execution_text(route, sampling, qnode.device)
    return out


def _unseeded_devices(layers) -> list[str]:
    """Names of the layers' devices whose shot sampling has no numpy generator (hardware,
    qiskit.aer, braket.local.qubit...): pennylane_qshiftdp can neither seed nor reseed it."""
    return sorted({str(layer.qnode.device.name) for layer in layers
                   if _compat.device_rng(layer.qnode.device) is None})


def _device_randomness(layers) -> str:
    unseeded = _unseeded_devices(layers)
    if not unseeded:
        return ""
    return (f" Shots sampled by {', '.join(unseeded)} with a generator of the device's own, "
            f"which pennylane_qshiftdp cannot seed or reseed: that shot noise is not repeatable "
            f"and no credit mode counts it.")


def _prepare_shot_budget(model: _Model, sampling: _Sampling, example,
                         shot_budget) -> tuple[dict, dict] | None:
    """Set a per-step shot budget on every TorchLayer; what the ledger records of it: a
    summary and, per layer, every shifted circuit's coefficient and shots (its provenance)."""
    if shot_budget is None:
        return None
    from .cost import plan_layers
    from .sampling.allocation import set_step_shot_budget

    # the expected number of examples per step: q·N where N is public (declared, or the data
    # set's length treated as public), else the declared public batch size b
    expected = (sampling.sample_rate * sampling.public_n if sampling.public_n is not None
                else sampling.expected_batch_size)
    per_example = set_step_shot_budget(model.module, shot_budget, expected_batch_size=expected)
    layers = []
    for plan in plan_layers(model.module, example):
        shots = plan.cost.shots_per_circuit or ()  # finite shots: set_step_shot_budget checked
        layers.append({
            "layer": plan.name, "forward_shots": shots[0] if shots else None,
            "shifted_shots_per_example": int(sum(shots[1:])),
            "circuits": [{"circuit": t + 1, "parameter": i, "coefficient": c, "shots": n}
                         for t, ((i, c), n) in enumerate(zip(
                             plan.cost.shift_coefficients or (), shots[1:], strict=True))]})
    summary = {"shots_per_step": int(shot_budget), "shots_per_example": per_example,
               "expected_batch_size": expected,
               "split": "per example over the expected batch, per circuit in proportion to its "
                        "largest |shift coefficient| (rounded down)"}
    return summary, {"shot_allocation": layers}


def make_private(module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 data_loader: torch.utils.data.DataLoader, *, target_epsilon: float,
                 target_delta: float, epochs: float, max_grad_norm: float | str | None = None,
                 loss: BoundedLoss | None = None, classical_max_grad_norm: float | None = None,
                 credit: str = "none", beta: float = 0.0, adjacency: str = "add_remove",
                 accountant: str = DEFAULT_ACCOUNTANT, variance_floor: float = 0.0,
                 variance_floor_source: str = "declared", recorder: ShotRecorder | None = None,
                 proven_epsilon_factor: float = DEFAULT_PROVEN_EPSILON_FACTOR,
                 strict: bool = False, adaptive_clipping: dict | None = None,
                 seed: int | None = None, secure_mode: bool = False,
                 jacobian_bound: ArrayLike | None = None,
                 loss_reduction: str = "mean", sample_rate: float | None = None,
                 expected_batch_size: float | None = None, dataset_size: int | None = None,
                 distributed: bool = False, input_range: tuple[float, float] | None = None,
                 preprocessing_note: str | None = None,
                 criterion: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                 shot_budget: int | None = None,
                 ) -> tuple[GradSampleModule, QShiftDPOptimizer, torch.utils.data.DataLoader]:
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
        data_loader: a loader over a map-style dataset of ``(x, y)``. Its ``batch_size`` B is
            the public constant b the noisy sum is divided by (unless ``expected_batch_size``
            is given) and, without ``sample_rate`` or ``dataset_size``, ``1/len(data_loader)``
            is the Poisson sampling rate q (Opacus's convention). Its sampler may be
            sequential, shuffling or a ``SubsetRandomSampler`` (Poisson sampling then runs
            over its indices); other samplers are refused.
        target_epsilon: ε > 0 (nats). target_delta: δ ∈ (0, 1), well below 1/N.
        epochs: training epochs (T = ⌈epochs / q⌉ steps).
        max_grad_norm: ``None`` (default: :func:`default_clip_mode`: ``"calibrated"``, or
            ``"certified"`` with ``classical_max_grad_norm`` or a credit mode),
            ``"calibrated"`` (C = the median per-example gradient norm of the model at its
            initial weights on 64 public synthetic examples: inputs uniform on
            ``input_range`` if declared, else standard normal; labels drawn at random, of the
            data's label dtype; the gradient of ``criterion``, else of the declared ``loss``,
            else of cross-entropy for integer labels and two or more outputs, else of a
            linear loss; only the shape and dtype of the data's first row are read, never its
            values; capped at Δ for a model whose only trainable layer is one TorchLayer, Δ
            then stays in the statement as the certificate; any model; docs/utility.md),
            ``"certified"`` (C = the a-priori bound Δ of the declared ``loss``; needs exactly
            one TorchLayer),
            ``"automatic"`` (automatic clipping, Bu et al., arXiv:2206.07136: every
            per-example gradient g is scaled to g/(‖g‖ + 0.01), norm below C = 1; no clip
            norm to choose, the learning rate sets the step; any model), ``"public"``
            (C_t = the largest per-example gradient norm found at sampled points of the
            declared ``input_range`` at the current weights (an estimate of the supremum: a
            clip may bind), :func:`~pennylane_qshiftdp.domain_gradient_bound`, recomputed every
            epoch; with a :class:`~pennylane_qshiftdp.losses.SoftmaxCrossEntropyLoss` the
            largest actual gradient over the labels; needs a model that is one TorchLayer fed
            by the data), a positive float
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
        accountant: ``"pld"`` (default: dp-accounting's privacy loss distributions with the
            pessimistic estimate, registered with Opacus), ``"rdp"`` or ``"prv"`` (Opacus's).
            σ is calibrated with it and the ledger composes with it; the statement reports
            RDP and PLD beside it.
        variance_floor: lower bound :math:`v_{\min}` on every circuit's single-shot variance.
        variance_floor_source: ``"proven"`` (from :func:`qprldp_core.certify_device`) or
            ``"declared"``.
        recorder: the :class:`~.ShotRecorder` attached to the QNode (required for a credit).
        proven_epsilon_factor: κ > 1; with a credit mode the quantum coordinates get exactly
            the noise level whose ε alone is κ × ``target_epsilon`` (a data-independent floor),
            so the proven ε is κ·ε at the planned end; the credited ε reaches ``target_epsilon``
            only if the credited shot noise makes up the rest (docs/noise.md).
        strict: makes ``"certified"`` the default clip; with ``"certified"``, refuse
            (:class:`SensitivityError`) a model the certified bound does not cover, decided
            from public information only: no ``loss`` declared, modules with parameters
            after the TorchLayer, or a structure the probe cannot check. Without ``strict`` these
            give a :class:`PrivacyWarning`. Whether a clip
            binds during training is never raised (it depends on the private batch).
        adaptive_clipping: settings of ``"adaptive"`` (``target_unclipped_quantile``,
            ``clipbound_learning_rate``, ``min_clipbound``, ``max_clipbound``,
            ``initial_clipbound``, ``unclipped_num_std``).
        seed: seeds Poisson sampling and DP noise (the device carries its own seed).
        secure_mode: DP noise from the OS's CSPRNG (refuses ``seed``).
        jacobian_bound: passed to :func:`~pennylane_qshiftdp.sensitivity`.
        loss_reduction: ``"mean"`` (the loop back-propagates a batch mean) or ``"sum"``.
        sample_rate: Poisson sampling rate q ∈ (0, 1] (public). Default: b / ``dataset_size``
            if a size is declared, else ``1/len(data_loader)`` = 1/⌈N/B⌉ (Opacus's
            convention), computed from the number N of training examples, which the privacy
            statement then says is treated as public. The returned loader has ``⌈1/q⌉``
            batches per epoch.
        expected_batch_size: the public constant b > 0 that the noisy sum (and the adaptive
            clip's centred count) is divided by; default the loader's ``batch_size``. Never
            q·N: N differs between neighbouring data sets under add/remove adjacency, and a
            divisor that follows it moves the release by (1 + q)× the sensitivity the noise
            is calibrated for (opacus#819; docs/engine.md, "Public normaliser").
        dataset_size: a declared, public data set size N (a positive integer); then
            q = min(1, b/N) and the statement shows this N instead of ``len(dataset)``.
            Exclusive with ``sample_rate``.
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
        shot_budget: shots per step for the parameter-shift circuits of the quantum layers
            (finite shots), split per example over the *expected* batch and per circuit
            ∝ |shift coefficient| (:func:`~pennylane_qshiftdp.sampling.set_step_shot_budget`;
            the forward circuits keep the QNodes' shots). Each circuit's shots are recorded in
            the ledger's provenance (``shot_allocation``). Δ does not change (it holds for every
            shot outcome); a credit mode uses each circuit's own shots. ``None``: every circuit
            has its QNode's shots.

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
        NotImplementedError: for a credit mode without certified clipping, or on a device
            whose shot sampling has no numpy generator (its shot noise is not credited).

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> _ = torch.manual_seed(0)  # TorchLayer draws its initial weights from torch's RNG
        >>> layer = qml.qnn.TorchLayer(circuit,
        ...                            {"weights": (1, 2, 3)})
        >>> data = torch.utils.data.TensorDataset(torch.zeros(20, 2), torch.ones(20))
        >>> loader = torch.utils.data.DataLoader(data, batch_size=5)
        >>> from pennylane_qshiftdp.losses import LinearLoss
        >>> model, opt, loader = make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1),
        ...     loader, target_epsilon=1.0, target_delta=1e-5, epochs=1, seed=0,
        ...     loss=LinearLoss())
        >>> round(opt.max_grad_norm, 6)  # calibrated: far below Δ = √6 (⟨Z0⟩, 6 weights)
        0.867057
    """
    # The settings, grouped and checked once (each spec's own checks, then the module's).
    accounting = AccountingSpec(target_epsilon=target_epsilon, target_delta=target_delta,
                                accountant=accountant, adjacency=adjacency,
                                preprocessing_note=preprocessing_note)
    credit_spec = CreditSpec(credit=credit, beta=beta, variance_floor=variance_floor,
                             variance_floor_source=variance_floor_source,
                             proven_epsilon_factor=proven_epsilon_factor, recorder=recorder,
                             shot_budget=shot_budget)
    randomness = RandomnessSpec(seed=seed, secure_mode=secure_mode)
    clip = ClipSpec(max_grad_norm=max_grad_norm, classical_max_grad_norm=classical_max_grad_norm,
                    loss=loss, strict=strict, adaptive_clipping=adaptive_clipping,
                    input_range=input_range, jacobian_bound=jacobian_bound, criterion=criterion)
    _check_arguments(module, optimizer)
    sampling_spec = SamplingSpec(epochs=epochs, sample_rate=sample_rate,
                                 expected_batch_size=expected_batch_size,
                                 dataset_size=dataset_size)
    adjacency = accounting.adjacency
    model = _prepare_model(module, optimizer)
    if max_grad_norm is None:
        # strict asks for the certified bound to be enforced: its default is the certified clip
        max_grad_norm = "certified" if strict else default_clip_mode(
            model.module, classical_max_grad_norm=classical_max_grad_norm, credit=credit)
        clip = dataclasses.replace(clip, max_grad_norm=max_grad_norm, chosen_by_default=True)
    # The checks below run forward passes on synthetic inputs; they draw no seeded shot.
    with preserved_shot_rngs(model.module):
        sampling = _prepare_sampling(data_loader, sampling_spec)
        example = sampling.dataset[0][0]
        check_training_buffers(model.module, example)
        sens = _prepare_sensitivity(model, example, clip, credit_spec)
        coverage = _check_loss(model, sampling, clip, example)
        clipping = _prepare_clipping(model, sampling, sens, clip, randomness)
        synthetic = clipping.synthetic
        _check_credit(model, sens, credit_spec, max_grad_norm)
        allocation = _prepare_shot_budget(model, sampling, example, credit_spec.shot_budget)
        sigma, floor = _prepare_noise(sampling, accounting, credit_spec)
        ledger = _prepare_ledger(accounting, credit_spec, randomness, _Prepared(
            model, sampling, sens, clipping, sigma, floor, coverage, allocation), example)
    twinned = twinned_devices(model.module)
    if twinned:
        ledger.extra_update({"model_checks_device": (
            f"the forward passes of make_private's model checks (synthetic inputs, structure "
            f"only) ran on an analytic default.qubit twin of {twinned}, not on the device: no "
            f"circuit of theirs was run or billed there")})
    gen, dp_loader = _prepare_loader(model, data_loader, sampling, randomness, distributed)
    gs_module = GradSampleModule(model.module, batch_first=True, loss_reduction=loss_reduction)
    # Poisson sampling: a second backward pass before step() raises (as Opacus's PrivacyEngine).
    gs_module.forbid_grad_accumulation()
    private_opt = build_optimizer(  # the mode's class, with the ledger attached
        optimizer, noise_multiplier=sigma, max_grad_norm=clipping.clip,
        expected_batch_size=sampling.expected_batch_size, clip_groups=clipping.groups,
        certified=max_grad_norm == "certified", adjacency=adjacency, credit=credit,
        credit_layer=model.layers[0] if credit != "none" else None, recorder=recorder,
        beta=beta, steps=sampling.steps, variance_floor=variance_floor,
        noise_floor_multiplier=floor, adaptive_clipping=clipping.adaptive, generator=gen,
        secure_mode=secure_mode, ledger=ledger,
        outcome_range=sens.observable_ranges[0] if sens is not None else None,
        loss_reduction=loss_reduction, distributed=distributed,
        clip_norm_fn=clipping.public_fn,
        clip_refresh_steps=max(1, round(1.0 / sampling.sample_rate)),
        automatic_gamma=AUTOMATIC_CLIPPING_GAMMA if max_grad_norm == "automatic" else None,
    )
    private_opt.sensitivity = sens
    if synthetic is not None:
        private_opt.public_gradient_norm = calibrated_clip_norm(synthetic.norms)
    private_opt.attach_loader(dp_loader)
    return gs_module, private_opt, dp_loader
