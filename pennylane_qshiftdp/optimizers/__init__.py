r"""The DP optimizer and its clip norms and noise: where per-example gradients are clipped and
Gaussian noise is added (the privacy boundary, with the ledger's charge).

* :mod:`.optimizer`: :class:`QShiftDPOptimizer`, an Opacus ``DPOptimizer`` (clip, noise, charge)
  holding what every mode shares;
* one subclass per mode, overriding the hooks it changes: :mod:`.adaptive_optimizer`
  (:class:`AdaptiveClipDPOptimizer`), :mod:`.automatic_optimizer`
  (:class:`AutomaticClipDPOptimizer`), :mod:`.public_optimizer`
  (:class:`PublicClipDPOptimizer`), :mod:`.credit_optimizer`
  (:class:`ShotNoiseCreditDPOptimizer`, :class:`CreditSettings`) and
  :mod:`.distributed_optimizer` (:class:`DistributedQShiftDPOptimizer`);
* :mod:`.selection`: :func:`get_optimizer_class` (mode -> class) and :func:`build_optimizer`;
* :mod:`.ledger_hook`: :class:`LedgerHook`, the ledger as a step hook;
* :mod:`.adaptive_clipping`: quantile clipping (Andrew et al., arXiv:1905.03871);
* :mod:`.public_clip`: :func:`domain_gradient_bound`, a clip norm from public information;
* :mod:`.diagnosis`: :func:`stuck_run_cause`, why a run did not learn (from its releases);
* :mod:`.secure_noise`: :func:`secure_normal`, Gaussian draws from the OS's CSPRNG.
"""

from .adaptive_clipping import count_noise_multiplier
from .adaptive_optimizer import AdaptiveClipDPOptimizer
from .automatic_optimizer import AutomaticClipDPOptimizer
from .credit_optimizer import CreditSettings, ShotNoiseCreditDPOptimizer
from .diagnosis import stuck_run_cause
from .distributed_optimizer import DistributedQShiftDPOptimizer
from .ledger_hook import LedgerHook
from .optimizer import PUBLIC_RECORD_KEYS, QShiftDPOptimizer, StepRecord
from .public_clip import domain_gradient_bound
from .public_optimizer import PublicClipDPOptimizer
from .secure_noise import SECURE_NOISE_DRAWS, secure_normal
from .selection import build_optimizer, get_optimizer_class

__all__ = [
    "PUBLIC_RECORD_KEYS",
    "AdaptiveClipDPOptimizer",
    "AutomaticClipDPOptimizer",
    "CreditSettings",
    "DistributedQShiftDPOptimizer",
    "LedgerHook",
    "PublicClipDPOptimizer",
    "QShiftDPOptimizer",
    "SECURE_NOISE_DRAWS",
    "ShotNoiseCreditDPOptimizer",
    "StepRecord",
    "build_optimizer",
    "count_noise_multiplier",
    "domain_gradient_bound",
    "get_optimizer_class",
    "secure_normal",
    "stuck_run_cause",
]
