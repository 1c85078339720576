"""The only place that touches private PennyLane helpers (pinned to PennyLane 0.45.x).

Each import below is re-checked by ``tests/pennylane_qshiftdp/test_compat.py`` so that a
PennyLane upgrade that moves them fails loudly in one place.
"""

from pennylane.gradients.gradient_transform import contract_qjac_with_cjac
from pennylane.gradients.parameter_shift import _expand_transform_param_shift

__all__ = ["contract_qjac_with_cjac", "expand_transform_param_shift"]

#: PennyLane's own expand step for ``param_shift`` (decompose gates without a shift rule,
#: split trainable Hamiltonian coefficients into single terms).
expand_transform_param_shift = _expand_transform_param_shift
