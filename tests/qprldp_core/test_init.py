"""The public names of ``qprldp_core`` (its ``__all__``) are exactly those of the released layout.

Restructuring the package into one concept per module moves definitions between modules but
must not add, drop or rename a public name.
"""

import qprldp_core

PUBLIC_NAMES = [
    "Certificate",
    "Channel",
    "CompositionWitness",
    "ContractionEstimate",
    "ConverseWitness",
    "CopyBounds",
    "DEFAULT_ATOL",
    "DeviceCertificate",
    "HeisenbergMap",
    "ImplicationWitness",
    "NonConvexityWitness",
    "NonEquivalenceWitness",
    "PARAM_ATOL",
    "PostProcessingWitness",
    "SearchResult",
    "SummaryBoundCounterexample",
    "UnitaryInvarianceWitness",
    "asymmetric_copy_bounds",
    "bit_flip",
    "certify_device",
    "depolarizing",
    "depolarizing_hockey_stick_contraction",
    "depolarizing_p_from_pennylane",
    "depolarizing_p_from_toqito",
    "depolarizing_p_max",
    "depolarizing_p_to_pennylane",
    "depolarizing_p_to_toqito",
    "depolarizing_part",
    "depolarizing_trace_distance_contraction",
    "estimate_contraction",
    "fidelity",
    "helstrom_error",
    "hockey_stick_contraction_bound",
    "hockey_stick_divergence",
    "is_qldp",
    "is_qprldp",
    "local_depolarizing",
    "local_depolarizing_bounds",
    "mary_copy_bounds",
    "max_relative_entropy",
    "measure_prepare_channel",
    "minimal_copies_asymmetric",
    "minimal_copies_qspri",
    "minimal_copies_symmetric",
    "non_convexity_witness",
    "non_equivalence_witness",
    "optimal_type_ii_error",
    "post_processing_counterexample",
    "pretty_good_measurement_error",
    "private_asymmetric_lower_bound",
    "private_mary_lower_bound",
    "private_symmetric_copy_bounds",
    "private_symmetric_lower_bound",
    "pure_qldp_epsilon",
    "qldp_certificate",
    "qldp_epsilon",
    "qldp_implies_qprldp",
    "qldp_to_qprldp_delta",
    "qldp_value",
    "qprldp_certificate",
    "qprldp_epsilon",
    "qprldp_implies_qldp",
    "qprldp_value",
    "qspri_copy_bounds",
    "random_channel",
    "random_density_matrix",
    "random_unitary",
    "sandwiched_renyi_divergence",
    "summary_bound_counterexample",
    "symmetric_copy_bounds",
    "tensor_composition",
    "tensor_qldp_delta",
    "tensor_qprldp_delta",
    "trace_distance",
    "trace_distance_contraction_bound",
    "umegaki_relative_entropy",
    "unitary",
    "unitary_invariance",
    "violation_probability",
    "worst_case_search",
]


def test_public_names_are_unchanged():
    assert sorted(qprldp_core.__all__) == PUBLIC_NAMES


def test_public_names_are_unique_and_exist():
    assert len(set(qprldp_core.__all__)) == len(qprldp_core.__all__)
    for name in qprldp_core.__all__:
        assert hasattr(qprldp_core, name), name
