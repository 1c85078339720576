r"""The private parameter-shift gradient, its shot statistics and its a-priori bound.

* :mod:`.parameter_shift`: :func:`param_shift`, the drop-in replacement for
  :func:`pennylane.gradients.param_shift` that records per-circuit shot statistics.
* :mod:`.shift_rules`: PennyLane's shifted tapes and the coefficients of their rules.
* :mod:`.observables`: how each measurement is estimated; the range of a shot estimate.
* :mod:`.shot_statistics`: :class:`ShotStatistics` and :class:`ShotRecorder`.
* :mod:`.sensitivity_bound`: :func:`sensitivity`, the a-priori L2 bound Δ of one example's
  gradient (no clipping).
"""

from .observables import observable_range
from .parameter_shift import param_shift, validate_shots
from .sensitivity_bound import Sensitivity, sensitivity
from .shift_rules import shift_rule_coefficients
from .shot_statistics import ShotRecorder, ShotStatistics

__all__ = [
    "Sensitivity",
    "ShotRecorder",
    "ShotStatistics",
    "observable_range",
    "param_shift",
    "sensitivity",
    "shift_rule_coefficients",
    "validate_shots",
]
