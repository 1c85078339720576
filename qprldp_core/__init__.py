r"""Quantum local differential privacy (QLDP) and quantum probabilistic LDP (QPrLDP).

Pure numpy/scipy: divergences, channels, certificates for depolarizing noise, structural
properties with executable counterexamples, contraction coefficients and sample-complexity
bounds for private quantum hypothesis testing. Conventions (nats, ``D_p(ρ) = (1 − p) ρ + p I/d``)
are fixed in ``docs/qprldp.md``.
"""

from . import (
    certify,
    channels,
    contraction,
    divergences,
    privacy,
    properties,
    random,
    sample_complexity,
)
from ._validation import DEFAULT_ATOL
from .certify import *  # noqa: F403
from .channels import *  # noqa: F403
from .contraction import *  # noqa: F403
from .divergences import *  # noqa: F403
from .privacy import *  # noqa: F403
from .properties import *  # noqa: F403
from .random import *  # noqa: F403
from .sample_complexity import *  # noqa: F403

# The public names are each submodule's own ``__all__``: one list per module, kept beside its code.
__all__: list[str] = [
    "DEFAULT_ATOL",
    *random.__all__,
    *divergences.__all__,
    *channels.__all__,
    *privacy.__all__,
    *certify.__all__,
    *properties.__all__,
    *contraction.__all__,
    *sample_complexity.__all__,
]
