"""Which certificate a channel gets: closed form, proven bounds, or a lower bound from the search.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import numpy as np

from ..channels import depolarizing
from ..privacy.search import worst_case_search
from ._depolarizing import (
    basis_mixture,
    depolarizing_qldp_delta,
    depolarizing_qprldp_delta,
    depolarizing_witness,
    p_eff_qubit,
)
from ._local_depolarizing import local_bounds
from .statement import Certificate

__all__ = ["check_notion", "certificate_for"]


_MAX_SEARCH_DIM = 64  # largest dimension for which certificates fall back to the search


_MAX_WITNESS_QUBITS = 8  # local depolarizing witnesses (2^n x 2^n arrays) only up to here


_REF_GLOBAL = (
    "derived here (docs/qprldp.md, 'Global depolarizing'); QLDP via the hockey-stick divergence "
    "of Hirche, Rouzé, França arXiv:2202.10717 (v2) Def. 3.1; QPrLDP of Shi arXiv:2607.06307"
)


_REF_LOCAL = (
    "derived here (qprldp_core.certify.local_depolarizing_bounds, docs/qprldp.md 'Local "
    "depolarizing'); QPrLDP from QLDP by the conversion of Shi arXiv:2607.06307"
)


_REF_SEARCH = "lower bound from qprldp_core.privacy.worst_case_search (not a certificate)"


_REF_ORTH = "derived here: orthogonal inputs stay orthogonal, so delta* = 1 for every epsilon"


def check_notion(notion: str) -> str:
    key = str(notion).lower()
    if key not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be 'QLDP' or 'QPrLDP'. Found {notion!r}.")
    return "QLDP" if key == "qldp" else "QPrLDP"


def certificate_for(channel, eps, notion, restarts, seed, max_iter, atol) -> Certificate:
    kind, prm, desc = channel.kind, channel.params, channel.description
    if channel.input_dim == 1 or channel.output_dim == 1:
        return Certificate(eps, 0.0, notion, desc, True, "exact", None,
                           "derived here: a channel with one input or output state leaks nothing")
    if kind == "depolarizing" and (prm["p"] <= 1.0 or prm["d"] == 2):
        d = prm["d"]
        p = p_eff_qubit(prm["p"]) if d == 2 else prm["p"]
        fn = depolarizing_qldp_delta if notion == "QLDP" else depolarizing_qprldp_delta
        delta = fn(p, d, eps)
        return Certificate(eps, delta, notion, desc, True, "exact",
                           depolarizing_witness(notion, p, d, eps), _REF_GLOBAL)
    if kind == "local_depolarizing":
        n = prm["n"]
        if n == 1:
            return certificate_for(depolarizing(prm["p"], 2), eps, notion, restarts, seed, max_iter,
                                atol)
        lo, up, m = local_bounds(prm["p"], n, eps, notion)
        witness = None
        if n <= _MAX_WITNESS_QUBITS:
            dim = 2**n
            y = sum(2 ** (n - 1 - i) for i in range(m))  # |1^m 0^(n-m)>
            if p_eff_qubit(prm["p"]) == 0.0:
                y = dim - 1
            witness = (basis_mixture(dim, [0]), basis_mixture(dim, [y]))
        if lo == up:
            return Certificate(eps, up, notion, desc, True, "exact", witness, _REF_LOCAL)
        return Certificate(eps, up, notion, desc, False, "upper_bound", witness, _REF_LOCAL,
                           delta_lower=lo)
    if kind == "unitary":
        u = prm["U"]
        d = u.shape[0]
        return Certificate(eps, 1.0, notion, desc, True, "exact",
                           (basis_mixture(d, [0]), basis_mixture(d, [1])), _REF_ORTH)
    if kind == "bit_flip":
        plus = np.full((2, 2), 0.5, dtype=np.complex128)
        minus = np.array([[0.5, -0.5], [-0.5, 0.5]], dtype=np.complex128)
        return Certificate(eps, 1.0, notion, desc, True, "exact", (plus, minus),
                           _REF_ORTH + " (|+>, |-> are fixed by a bit flip)")
    if channel.input_dim > _MAX_SEARCH_DIM:
        raise NotImplementedError(
            f"{notion.lower()}_certificate: no closed form for {desc}, and the worst-case search "
            f"is limited to input dimension <= {_MAX_SEARCH_DIM}. Found {channel.input_dim}."
        )
    res = worst_case_search(channel, epsilon=eps, notion=notion.lower(), restarts=restarts,
                            seed=seed, max_iter=max_iter, atol=atol)
    return Certificate(eps, res.value, notion, desc, False, "lower_bound", (res.rho, res.sigma),
                       _REF_SEARCH)
