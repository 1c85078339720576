r"""Certificates of QLDP and QPrLDP for depolarizing noise, and for a PennyLane device's noise.

A :class:`Certificate` states one of three things about a channel :math:`\mathcal A` at a given
ε (nats), with :math:`\delta^*(\varepsilon)` the channel's worst case over all input pairs:
exact, a proven upper bound, or a lower bound from a witness pair (never a privacy certificate).

Modules: :mod:`~qprldp_core.certify.statement` (:class:`Certificate`),
:mod:`~qprldp_core.certify.certificates` (:func:`qldp_certificate`, :func:`qprldp_certificate`:
closed forms for global depolarizing, proven bounds for local depolarizing, a search otherwise),
:mod:`~qprldp_core.certify.local_depolarizing` (the bounds for :math:`\mathcal D_p^{\otimes n}`),
:mod:`~qprldp_core.certify.epsilon` (the smallest certified ε for a δ),
:mod:`~qprldp_core.certify.decision` (:func:`is_qldp`, :func:`is_qprldp`) and
:mod:`~qprldp_core.certify.device` (:func:`certify_device` for PennyLane circuits; PennyLane is
imported only when it is called).
"""

from .certificates import qldp_certificate, qprldp_certificate
from .decision import is_qldp, is_qprldp
from .device import DeviceCertificate, certify_device
from .epsilon import qldp_epsilon, qprldp_epsilon
from .local_depolarizing import local_depolarizing_bounds
from .statement import Certificate

__all__ = [
    "Certificate",
    "DeviceCertificate",
    "qldp_certificate",
    "qprldp_certificate",
    "qldp_epsilon",
    "qprldp_epsilon",
    "local_depolarizing_bounds",
    "certify_device",
    "is_qldp",
    "is_qprldp",
]
