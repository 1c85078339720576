"""The only place that touches private PennyLane helpers (pinned to PennyLane 0.45.x) and
Opacus attributes without a public accessor (Opacus 1.6).

Each item below is re-checked by ``tests/pennylane_qshiftdp/test_compat.py`` so that an
upgrade that moves them fails loudly in one place. Nothing here replaces anything of
PennyLane's or Opacus's.
"""

from pennylane.gradients.gradient_transform import contract_qjac_with_cjac
from pennylane.gradients.parameter_shift import _expand_transform_param_shift

__all__ = [
    "OPACUS_FUNCTORCH_ATTRIBUTE",
    "contract_qjac_with_cjac",
    "device_rng",
    "expand_transform_param_shift",
    "prepared_for_functorch",
    "reseed_device",
    "unpromoted_grad_sample",
]

#: PennyLane's own expand step for ``param_shift`` (decompose gates without a shift rule,
#: split trainable Hamiltonian coefficients into single terms).
expand_transform_param_shift = _expand_transform_param_shift


def device_rng(device):
    """The numpy ``Generator`` with which a PennyLane simulator samples shots, or ``None``.

    default.qubit, lightning.qubit and default.mixed keep it in ``device._rng`` (no public
    accessor in PennyLane 0.45); lightning's state vector holds the same object.
    """
    import numpy as np

    rng = getattr(device, "_rng", None)
    return rng if isinstance(rng, np.random.Generator) else None


def reseed_device(device, seed_sequence) -> None:
    """Reset the shot-sampling RNG of a PennyLane device in place.

    default.qubit and lightning.qubit keep a numpy ``Generator`` in ``device._rng`` (lightning's
    state vector holds the same object), so its state is overwritten in place. Raises
    ``NotImplementedError`` for a device without one (its shots cannot be made repeatable).
    """
    import numpy as np

    rng = device_rng(device)
    if rng is None:
        raise NotImplementedError(
            f"Cannot reseed the shot sampling of device {getattr(device, 'name', device)!r}: "
            f"seeded resume needs default.qubit or lightning.qubit."
        )
    rng.bit_generator.state = np.random.default_rng(seed_sequence).bit_generator.state


def unpromoted_grad_sample(parameter):
    """Per-example gradients Opacus 1.6 computed for ``parameter`` but has not promoted to
    ``grad_sample`` (``parameter._current_grad_sample``; no public accessor), or ``None``.

    Opacus promotes them when the last captured activation of a module has been consumed by a
    backward pass; a forward pass with gradients enabled and no backward of its own leaves one
    behind, and the backward of the next batch then stays unpromoted.
    """
    return getattr(parameter, "_current_grad_sample", None)


#: The attribute Opacus 1.6's ``opacus.grad_sample.functorch.prepare_layer`` sets on a layer
#: whose per-example gradients it will compute with torch.func (``grad_sample_mode=
#: "functorch"``, or a layer without a registered grad sampler); there is no public way to
#: ask a GradSampleModule which mode a layer is in.
OPACUS_FUNCTORCH_ATTRIBUTE = "ft_compute_sample_grad"


def prepared_for_functorch(module) -> bool:
    """Whether Opacus prepared ``module`` for torch.func per-example gradients."""
    return OPACUS_FUNCTORCH_ATTRIBUTE in module.__dict__
