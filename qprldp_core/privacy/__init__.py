r"""QLDP and QPrLDP of a channel: values for a state pair, worst-case search, pure QLDP.

Definitions (docs/qprldp.md; nats, :math:`\gamma = e^\varepsilon`): a channel :math:`\mathcal A` is

* (ε, δ)-QLDP if :math:`\sup_{\rho,\sigma} E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))
  \le \delta` (Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 3.1);
* (ε, δ)-QPrLDP if :math:`\sup_{\rho,\sigma} \mathrm{Tr}[\mathcal A(\rho)\,\Pi\{\mathcal A(\rho) -
  e^\varepsilon \mathcal A(\sigma) > 0\}] \le \delta` (Shi, arXiv:2607.06307).

Modules: :mod:`~qprldp_core.privacy.values` (the two quantities of one input pair),
:mod:`~qprldp_core.privacy.search` (lower bounds on their suprema, with witnesses) and
:mod:`~qprldp_core.privacy.pure_epsilon` (the smallest ε of (ε, 0)-QLDP). Deciding whether a
channel *is* (ε, δ)-private needs certificates: :func:`~qprldp_core.certify.is_qldp` and
:func:`~qprldp_core.certify.is_qprldp`.
"""

from .pure_epsilon import pure_qldp_epsilon
from .search import SearchResult, worst_case_search
from .values import qldp_value, qprldp_value

__all__ = [
    "SearchResult",
    "qldp_value",
    "qprldp_value",
    "worst_case_search",
    "pure_qldp_epsilon",
]
