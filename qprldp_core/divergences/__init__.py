r"""Quantum divergences used by QLDP and QPrLDP (all in nats).

Every function validates its states with :func:`~qprldp_core._validation.check_density_matrix`
(square, Hermitian, PSD, unit trace within ``atol``), never returns NaN, and returns
``math.inf`` where a divergence is infinite (support mismatch).

References:
    Hirche, Rouzé, França, *Quantum differential privacy: an information theory perspective*,
    arXiv:2202.10717 (v2), Sec. 2-3: hockey-stick divergence :math:`E_\gamma` and its use for QDP.
    Müller-Lennert, Dupuis, Szehr, Fehr, Tomamichel, arXiv:1306.3142, Def. 3: sandwiched Rényi
    divergence; Datta, arXiv:0803.2770, Def. 1: max-relative entropy.
    Shi, *Quantum probabilistic local differential privacy*, arXiv:2607.06307: the spectral
    violation event of QPrLDP.

Modules: :mod:`~qprldp_core.divergences.hockey_stick` (the hockey-stick divergence, the violation
probability, trace distance and fidelity) and :mod:`~qprldp_core.divergences.relative_entropies`
(Umegaki, max- and sandwiched Rényi relative entropies).
"""

from .hockey_stick import fidelity, hockey_stick_divergence, trace_distance, violation_probability
from .relative_entropies import (
    max_relative_entropy,
    sandwiched_renyi_divergence,
    umegaki_relative_entropy,
)

__all__ = [
    "hockey_stick_divergence",
    "violation_probability",
    "trace_distance",
    "fidelity",
    "sandwiched_renyi_divergence",
    "max_relative_entropy",
    "umegaki_relative_entropy",
]
