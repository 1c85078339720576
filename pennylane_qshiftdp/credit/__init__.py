r"""Shot-noise credit (Q-ShiftDP, arXiv:2602.02962): how much of the Gaussian noise's variance
the circuits' own shot noise may stand for, under the Gaussian approximation (reported apart
from the proven guarantee).

* :mod:`.shot_noise`: :func:`shot_noise_credit`, :func:`confidence_multiplier`;
* :mod:`.variance_bounds`: lower confidence bounds on shot variances.
"""

from .shot_noise import (
    CREDIT_MODES,
    CreditResult,
    artificial_variance,
    confidence_multiplier,
    shot_noise_credit,
)
from .variance_bounds import (
    bernstein_variance_lower_bound,
    clopper_pearson_variance_lower_bound,
    hoeffding_variance_lower_bound,
    max_sample_variance,
    variance_lower_bound,
)

__all__ = [
    "CREDIT_MODES",
    "CreditResult",
    "artificial_variance",
    "bernstein_variance_lower_bound",
    "clopper_pearson_variance_lower_bound",
    "confidence_multiplier",
    "hoeffding_variance_lower_bound",
    "max_sample_variance",
    "shot_noise_credit",
    "variance_lower_bound",
]
