r"""``PrivacyEngine``: Opacus's engine with a public divisor, for quantum and hybrid models.

:class:`opacus.PrivacyEngine` (1.0–1.6) builds a :class:`~opacus.optimizers.DPOptimizer` that
divides the noisy gradient sum by ``expected_batch_size = int(q·N)``, with N the size of the
private data set (opacus#819): between neighbouring data sets (N and N + 1 examples) the release
is divided by different constants, which moves it by about :math:`(1 + q)` times the
sensitivity the noise is calibrated for. For one 2-qubit layer, batch 10, N = 29 vs 30 (divisor
9 vs 10), σ = 2 and 30 steps, the exact ε of the noise scale alone is 18.4 where Opacus reports
5.09. The product's layers are therefore refused inside Opacus's own engine (the
``ModuleValidator`` rule, before anything is trained).

:class:`PrivacyEngine` is a subclass with the same constructor, ``make_private`` and
``make_private_with_epsilon``, and any accountant of Opacus's registry (``"prv"``, ``"rdp"``,
``"gdp"``, and dp-accounting's ``"pld"``, which this package registers). It differs from
Opacus's in what the release depends on:

* the optimizer is a :class:`~pennylane_qshiftdp.QShiftDPOptimizer` dividing by a public
  constant b: the loader's ``batch_size``, or a declared ``expected_batch_size`` (never q·N);
* Poisson sampling is Opacus's ``UniformWithReplacementSampler`` (rate q = 1/len(loader), as
  Opacus computes it: the data set size is then treated as public) behind the counting batch
  sampler of :func:`~pennylane_qshiftdp.data_loader.poisson_loader`, so a step over another set
  of examples than one Poisson batch is refused, and the rows of a logical batch that
  ``BatchMemoryManager`` left unfinished are never released with the next one;
* ``secure_mode=True`` draws the noise from the OS's CSPRNG (as
  :func:`~pennylane_qshiftdp.make_private`; no ``torchcsprng`` needed) and seeds Poisson
  sampling from it.

Clipping ``"flat"`` and ``"per_layer"`` (one clip norm per parameter, noise scaled by
:math:`\sqrt{\sum_k C_k^2}`) are supported; Opacus's ``"adaptive"`` clipping and the ``ghost``
grad-sample modes divide by q·N inside their own optimizers and are refused, as is
``distributed=True`` (use :func:`~pennylane_qshiftdp.make_private` for those).

References:
    Abadi et al., arXiv:1607.00133 (DP-SGD); opacus#819 (the data-dependent divisor).
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import opacus
import torch
from opacus.optimizers import DPOptimizer

from . import qnn
from ._validation import check_positive_float
from .accountants import pld as _pld  # noqa: F401  (registers "pld" with Opacus)
from .data_loader import poisson_loader, private_dataset
from .optimizers.selection import get_optimizer_class

__all__ = ["PrivacyEngine", "SUPPORTED_CLIPPING"]

#: Opacus clipping modes :class:`PrivacyEngine` supports (the others divide by q·N).
SUPPORTED_CLIPPING = ("flat", "per_layer")

_OPACUS_RNG_WARNING = "Secure RNG turned off"


class PrivacyEngine(opacus.PrivacyEngine):
    r"""Opacus's :class:`~opacus.PrivacyEngine` whose optimizer divides by a public constant.

    Args:
        accountant: the name of an accountant in Opacus's registry (``"prv"``, Opacus's
            default, ``"rdp"``, ``"gdp"``, or ``"pld"``).
        secure_mode: draw the noise from the OS's CSPRNG (each coordinate a sum of four
            Box–Muller draws, Holohan & Braghin, arXiv:2107.10138) and seed Poisson sampling
            from it.

    Raises:
        ValueError: for an accountant Opacus does not know (Opacus's own error).

    Example:
        >>> import pennylane as qml
        >>> import pennylane_qshiftdp as qs
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=qs.param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> model = qs.qnn.TorchLayer(circuit, {"weights": (1, 2, 3)}).double()
        >>> data = torch.utils.data.TensorDataset(torch.rand(30, 2, dtype=torch.float64))
        >>> loader = torch.utils.data.DataLoader(data, batch_size=10)
        >>> engine = PrivacyEngine(accountant="rdp", secure_mode=True)
        >>> module, opt, dl = engine.make_private(
        ...     module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        ...     data_loader=loader, noise_multiplier=2.0, max_grad_norm=1.0)
        >>> opt.expected_batch_size  # the loader's batch size, never int(q·N)
        10.0
    """

    #: Read by the ``ModuleValidator`` rule: this engine's optimizer divides by a public
    #: constant, so the product's layers are accepted.
    public_divisor = True

    def __init__(self, *, accountant: str = "prv", secure_mode: bool = False):
        with warnings.catch_warnings():
            if secure_mode:  # Opacus's warning is about its own (disabled) CSPRNG
                warnings.filterwarnings("ignore", message=_OPACUS_RNG_WARNING)
            super().__init__(accountant=accountant, secure_mode=False)
        self.secure_mode = bool(secure_mode)
        self._public_batch_size: float | None = None
        self._declared_batch_size: float | None = None

    # ------------------------------------------------------------------ the front end
    def make_private(self, *, module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                     data_loader: torch.utils.data.DataLoader,
                     expected_batch_size: float | None = None, clipping: str = "flat",
                     grad_sample_mode: str = "hooks", poisson_sampling: bool = True,
                     **kwargs: Any) -> tuple[Any, ...]:
        r"""Opacus's ``make_private``, with a public divisor.

        Args:
            module: the model; PennyLane TorchLayers whose QNode uses
                :func:`~pennylane_qshiftdp.param_shift` are converted in place first
                (:func:`~pennylane_qshiftdp.qnn.convert_torch_layers`, keeping the
                Parameter objects).
            optimizer: the torch optimizer over (some of) the module's parameters.
            data_loader: the loader; its ``batch_size`` is the public divisor b unless
                ``expected_batch_size`` is given.
            expected_batch_size: a declared public b > 0 (e.g. the intended expected
                batch size when the loader has none).
            clipping: ``"flat"`` or ``"per_layer"`` (:data:`SUPPORTED_CLIPPING`).
            grad_sample_mode: ``"hooks"`` (the product's layers need it; Opacus's
                ``functorch``/``ew`` fail on them with a message naming ``"hooks"``); the
                ``ghost`` modes are refused.
            poisson_sampling: as in Opacus (the accountant assumes Poisson sampling).
            **kwargs: every other argument of :meth:`opacus.PrivacyEngine.make_private`
                (``noise_multiplier``, ``max_grad_norm``, ``criterion``, ``batch_first``,
                ``loss_reduction``, ``noise_generator``, ``wrap_model``, ...).

        Returns:
            tuple: ``(module, optimizer, data_loader)`` as Opacus returns them; the optimizer
            is a :class:`~pennylane_qshiftdp.QShiftDPOptimizer`.

        Raises:
            ValueError: for an unsupported ``clipping``, ``grad_sample_mode`` or
                ``distributed=True``, a non-positive ``expected_batch_size``, a loader without
                a ``batch_size`` and no declared one, or ``noise_multiplier`` ≤ 0.
        """
        self._check_modes(clipping, grad_sample_mode, kwargs.get("distributed", False))
        declared = self._declared_batch_size if expected_batch_size is None else (
            check_positive_float(expected_batch_size, "expected_batch_size"))
        if declared is None and (data_loader.batch_size is None or data_loader.batch_size < 1):
            raise ValueError(
                f"`data_loader` has no positive batch_size ({data_loader.batch_size!r}) to "
                f"divide the noisy sum by; pass a public `expected_batch_size`.")
        module = qnn.convert_torch_layers(module)
        public = declared if declared is not None else data_loader.batch_size
        assert public is not None  # checked above
        self._public_batch_size = float(public)
        try:
            out = super().make_private(module=module, optimizer=optimizer,
                                       data_loader=data_loader, clipping=clipping,
                                       grad_sample_mode=grad_sample_mode,
                                       poisson_sampling=poisson_sampling, **kwargs)
        finally:
            self._public_batch_size = None
        private_optimizer, private_loader = out[1], out[-1]
        if poisson_sampling:
            private_optimizer.attach_loader(private_loader)
        return out

    def make_private_with_epsilon(self, *, expected_batch_size: float | None = None,
                                  **kwargs: Any) -> tuple[Any, ...]:
        """Opacus's ``make_private_with_epsilon`` (σ from this engine's accountant for
        ``target_epsilon``, ``target_delta``, ``epochs`` at q = 1/len(loader)), with the
        public divisor of :meth:`make_private`.

        Args:
            expected_batch_size: as in :meth:`make_private`.
            **kwargs: the arguments of :meth:`opacus.PrivacyEngine.make_private_with_epsilon`.

        Returns:
            tuple: as :meth:`make_private`.
        """
        if expected_batch_size is not None:
            expected_batch_size = check_positive_float(expected_batch_size,
                                                       "expected_batch_size")
        self._declared_batch_size = expected_batch_size
        try:
            return super().make_private_with_epsilon(**kwargs)
        finally:
            self._declared_batch_size = None

    @staticmethod
    def _check_modes(clipping, grad_sample_mode, distributed) -> None:
        if clipping not in SUPPORTED_CLIPPING:
            raise ValueError(
                f"`clipping` must be one of {SUPPORTED_CLIPPING}. Found {clipping!r}: Opacus's "
                f"other clipping optimizers divide by int(q·N) (opacus#819); use "
                f"pennylane_qshiftdp.make_private(max_grad_norm='adaptive' or 'automatic').")
        if str(grad_sample_mode).startswith("ghost"):
            raise ValueError(
                f"grad_sample_mode={grad_sample_mode!r} (fast gradient clipping) uses Opacus's "
                f"own optimizer, which divides by int(q·N) (opacus#819); use 'hooks'.")
        if distributed:
            raise ValueError("distributed=True: use pennylane_qshiftdp.make_private("
                             "..., distributed=True), whose Poisson sampler gives every process "
                             "one batch per step.")

    # ------------------------------------------------------------------ Opacus's hooks
    def _prepare_data_loader(self, data_loader, *, poisson_sampling: bool, distributed: bool,
                             batch_first: bool = True, rand_on_empty: bool = False):
        """Poisson sampling at q = 1/len(loader) with a counting batch sampler (else
        Opacus's)."""
        if not poisson_sampling:
            return super()._prepare_data_loader(
                data_loader, poisson_sampling=False, distributed=distributed,
                batch_first=batch_first, rand_on_empty=rand_on_empty)
        if getattr(self, "dataset", None) is None:  # as Opacus: the data set of this engine
            self.dataset = data_loader.dataset
        dataset, _ = private_dataset(data_loader)
        generator = None
        if self.secure_mode:
            generator = torch.Generator().manual_seed(
                int.from_bytes(os.urandom(8), "big") >> 1)
        return poisson_loader(data_loader, dataset, 1.0 / len(data_loader), generator,
                              distributed=False)

    def _prepare_optimizer(self, *, optimizer: torch.optim.Optimizer, noise_multiplier: float,
                           max_grad_norm, expected_batch_size, loss_reduction: str = "mean",
                           distributed: bool = False, clipping: str = "flat",
                           noise_generator=None, grad_sample_mode: str = "hooks",
                           **kwargs: Any) -> DPOptimizer:
        """A :class:`QShiftDPOptimizer` dividing by the public b (Opacus's
        ``expected_batch_size = int(q·N)`` is ignored)."""
        del expected_batch_size, grad_sample_mode
        if kwargs:
            raise TypeError(f"Unexpected optimizer arguments {sorted(kwargs)}.")
        self._check_modes(clipping, "hooks", distributed)
        if self._public_batch_size is None:
            raise RuntimeError("_prepare_optimizer is called by make_private only.")
        if isinstance(optimizer, DPOptimizer):
            optimizer = optimizer.original_optimizer
        groups = None
        if clipping == "per_layer":
            params = [p for g in optimizer.param_groups for p in g["params"] if p.requires_grad]
            norms = list(max_grad_norm) if isinstance(max_grad_norm, (list, tuple)) else []
            if len(norms) != len(params):
                raise ValueError(
                    f"clipping='per_layer' needs one `max_grad_norm` per trainable parameter "
                    f"({len(params)}). Found {max_grad_norm!r}.")
            groups = [([p], check_positive_float(c, f"max_grad_norm[{i}]"))
                      for i, (p, c) in enumerate(zip(params, norms, strict=True))]
            max_grad_norm = math.sqrt(sum(c * c for _, c in groups))
        return get_optimizer_class(clipping)(
            optimizer, noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
            expected_batch_size=self._public_batch_size, clip_groups=groups,
            loss_reduction=loss_reduction,
            generator=None if self.secure_mode else noise_generator,
            secure_mode=self.secure_mode)
