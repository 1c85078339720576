r"""Quantum local differential privacy (QLDP) and quantum probabilistic LDP (QPrLDP).

Pure numpy/scipy: divergences, channels, certificates for depolarizing noise, structural
properties with executable counterexamples, contraction coefficients and sample-complexity
bounds for private quantum hypothesis testing. Conventions (nats, ``D_p(ρ) = (1 − p) ρ + p I/d``)
are fixed in ``docs/qprldp.md``.
"""

__all__: list[str] = []
