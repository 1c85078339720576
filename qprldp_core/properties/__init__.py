r"""Structural properties of QLDP and QPrLDP, each returned with the witness a test can check.

For a channel :math:`\mathcal A` and states :math:`\rho, \sigma`, write
:math:`\rho' = \mathcal A(\rho)`, :math:`\sigma' = \mathcal A(\sigma)` and
:math:`\gamma = e^\varepsilon`.

* QLDP quantity of the pair:
  :math:`E_\gamma(\rho'\|\sigma') = \mathrm{Tr}(\rho' - \gamma\sigma')_+`.
* QPrLDP quantity of the pair: the violation probability
  :math:`V_\varepsilon(\rho'\|\sigma') = \mathrm{Tr}[\rho'\,\Pi\{\rho' - \gamma\sigma' > 0\}]`.

Results (all derived here, see ``docs/qprldp.md`` §4; the QPrLDP statements are those announced
in Shi, arXiv:2607.06307, whose proofs are not public):

* :func:`qprldp_implies_qldp` — :math:`E_\gamma \le V_\varepsilon` for every pair, so
  :math:`(\varepsilon,\delta)`-QPrLDP implies :math:`(\varepsilon,\delta)`-QLDP.
* :func:`qldp_implies_qprldp` / :func:`qldp_to_qprldp_delta` — for
  :math:`\varepsilon' > \varepsilon`, :math:`V_{\varepsilon'} \le
  E_{e^\varepsilon}\,e^{\varepsilon'}/(e^{\varepsilon'} - e^{\varepsilon})`.
* :func:`non_equivalence_witness` — a depolarizing channel whose QLDP :math:`\delta` is strictly
  below its QPrLDP :math:`\delta` at the same :math:`\varepsilon`.
* :func:`unitary_invariance` — unitary post-processing leaves both quantities unchanged.
* :func:`tensor_composition` / :func:`tensor_qldp_delta` / :func:`tensor_qprldp_delta` — product
  inputs, :math:`\varepsilon` adds; a proven :math:`\delta`.
* :func:`non_convexity_witness` — two :math:`(1, 0.1)`-QPrLDP channels whose equal mixture is not.
* :func:`post_processing_counterexample` — a bit flip after a :math:`(1, 0.1)`-QPrLDP channel raises
  the violation probability above 0.1.
"""

from .composition import (
    CompositionWitness,
    tensor_composition,
    tensor_qldp_delta,
    tensor_qprldp_delta,
)
from .counterexamples import (
    NonConvexityWitness,
    PostProcessingWitness,
    non_convexity_witness,
    post_processing_counterexample,
)
from .implications import (
    ConverseWitness,
    ImplicationWitness,
    qldp_implies_qprldp,
    qldp_to_qprldp_delta,
    qprldp_implies_qldp,
)
from .non_equivalence import NonEquivalenceWitness, non_equivalence_witness
from .unitary_invariance import UnitaryInvarianceWitness, unitary_invariance

__all__ = [
    "ImplicationWitness",
    "ConverseWitness",
    "NonEquivalenceWitness",
    "UnitaryInvarianceWitness",
    "CompositionWitness",
    "NonConvexityWitness",
    "PostProcessingWitness",
    "qprldp_implies_qldp",
    "qldp_implies_qprldp",
    "qldp_to_qprldp_delta",
    "non_equivalence_witness",
    "unitary_invariance",
    "tensor_qldp_delta",
    "tensor_qprldp_delta",
    "tensor_composition",
    "non_convexity_witness",
    "post_processing_counterexample",
]
