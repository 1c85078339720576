r"""The DP optimizer and its clip norms and noise: where per-example gradients are clipped and
Gaussian noise is added (the privacy boundary, with the ledger's charge).

* :mod:`.optimizer`: :class:`QShiftDPOptimizer`, an Opacus ``DPOptimizer`` (clip, noise, charge);
* :mod:`.adaptive_clipping`: quantile clipping (Andrew et al., arXiv:1905.03871);
* :mod:`.public_clip`: :func:`domain_gradient_bound`, a clip norm from public information;
* :mod:`.diagnosis`: :func:`stuck_run_cause`, why a run did not learn (from its releases);
* :mod:`.secure_noise`: :func:`secure_normal`, Gaussian draws from the OS's CSPRNG.
"""

from .adaptive_clipping import count_noise_multiplier
from .diagnosis import stuck_run_cause
from .optimizer import PUBLIC_RECORD_KEYS, QShiftDPOptimizer, StepRecord
from .public_clip import domain_gradient_bound
from .secure_noise import SECURE_NOISE_DRAWS, secure_normal

__all__ = [
    "PUBLIC_RECORD_KEYS",
    "QShiftDPOptimizer",
    "SECURE_NOISE_DRAWS",
    "StepRecord",
    "count_noise_multiplier",
    "domain_gradient_bound",
    "secure_normal",
    "stuck_run_cause",
]
