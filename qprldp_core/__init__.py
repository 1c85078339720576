r"""Quantum local differential privacy (QLDP) and quantum probabilistic LDP (QPrLDP).

Pure numpy/scipy: divergences, channels, certificates for depolarizing noise, structural
properties with executable counterexamples, contraction coefficients and sample-complexity
bounds for private quantum hypothesis testing. Conventions (nats, ``D_p(ρ) = (1 − p) ρ + p I/d``)
are fixed in ``docs/qprldp.md``.
"""

from ._validation import DEFAULT_ATOL
from .certify import (
    Certificate,
    DeviceCertificate,
    certify_device,
    local_depolarizing_bounds,
    qldp_certificate,
    qldp_epsilon,
    qprldp_certificate,
    qprldp_epsilon,
)
from .channels import (
    Channel,
    HeisenbergMap,
    bit_flip,
    depolarizing,
    depolarizing_p_from_pennylane,
    depolarizing_p_from_toqito,
    depolarizing_p_max,
    depolarizing_p_to_pennylane,
    depolarizing_p_to_toqito,
    local_depolarizing,
    unitary,
)
from .divergences import (
    fidelity,
    hockey_stick_divergence,
    max_relative_entropy,
    sandwiched_renyi_divergence,
    trace_distance,
    umegaki_relative_entropy,
    violation_probability,
)
from .privacy import (
    SearchResult,
    is_qldp,
    is_qprldp,
    pure_qldp_epsilon,
    qldp_value,
    qprldp_value,
    worst_case_search,
)

__all__: list[str] = [
    # _validation
    "DEFAULT_ATOL",
    # divergences
    "hockey_stick_divergence",
    "violation_probability",
    "trace_distance",
    "fidelity",
    "sandwiched_renyi_divergence",
    "max_relative_entropy",
    "umegaki_relative_entropy",
    # channels
    "Channel",
    "HeisenbergMap",
    "depolarizing",
    "local_depolarizing",
    "bit_flip",
    "unitary",
    "depolarizing_p_from_pennylane",
    "depolarizing_p_to_pennylane",
    "depolarizing_p_from_toqito",
    "depolarizing_p_to_toqito",
    "depolarizing_p_max",
    # privacy
    "SearchResult",
    "qldp_value",
    "qprldp_value",
    "is_qldp",
    "is_qprldp",
    "worst_case_search",
    "pure_qldp_epsilon",
    # certify
    "Certificate",
    "DeviceCertificate",
    "qldp_certificate",
    "qprldp_certificate",
    "qldp_epsilon",
    "qprldp_epsilon",
    "local_depolarizing_bounds",
    "certify_device",
    # properties
    # contraction
    # sample_complexity
]
