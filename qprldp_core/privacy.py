r"""QLDP and QPrLDP of a channel: values for a state pair, decisions, and worst-case search.

Definitions (docs/qprldp.md; nats, :math:`\gamma = e^\varepsilon`): a channel :math:`\mathcal A` is

* (ε, δ)-QLDP if :math:`\sup_{\rho,\sigma} E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))
  \le \delta` (Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 3.1);
* (ε, δ)-QPrLDP if :math:`\sup_{\rho,\sigma} \mathrm{Tr}[\mathcal A(\rho)\,\Pi\{\mathcal A(\rho) -
  e^\varepsilon \mathcal A(\sigma) > 0\}] \le \delta` (Shi, arXiv:2607.06307).

What is proven about the search: :math:`E_\gamma(\mathcal A(\rho)\|\mathcal A(\sigma))` is convex
in each argument (it is a supremum of functions linear in ρ and in σ), so its supremum is
attained at pure states, and by the dual form

.. math::

    \sup_{\rho,\sigma} E_\gamma(\mathcal A(\rho)\|\mathcal A(\sigma)) =
    \sup_{0 \le M \le I} \big[\lambda_{\max}(\mathcal A^\dagger M) - \gamma\,
    \lambda_{\min}(\mathcal A^\dagger M)\big]

(derived here: swap the two suprema in :math:`\max_M \mathrm{Tr} M(\mathcal A\rho - \gamma
\mathcal A\sigma)`). The alternating maximisation over (M; ρ, σ) increases the value
monotonically but can stop at a local maximum: it is a *lower bound*. For QPrLDP no such
reduction is known: the violation probability is not convex in ρ (for global depolarizing the
worst ρ is a *mixed* state, see :mod:`qprldp_core.certify`), so the search also tries uniform
mixtures over eigenvectors of :math:`\mathcal A^\dagger(\Pi)` for ρ. It is a heuristic whose value
is always evaluated exactly on the returned witness pair, hence always a valid lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validation import (
    DEFAULT_ATOL,
    check_density_matrix,
    check_epsilon,
    check_probability,
    support_tol,
)
from .channels import Channel
from .channels._apply import local_depolarizing_apply
from .divergences import hockey_stick_divergence, violation_probability

__all__ = [
    "SearchResult",
    "qldp_value",
    "qprldp_value",
    "is_qldp",
    "is_qprldp",
    "worst_case_search",
    "pure_qldp_epsilon",
]

_NOTIONS = ("qldp", "qprldp", "pure_qldp")


@dataclass(frozen=True, eq=False)
class SearchResult:
    r"""Result of :func:`worst_case_search`: a lower bound on a channel's worst-case quantity.

    Attributes:
        value: the quantity evaluated exactly on the witness pair (for ``notion="qldp"``:
            :math:`E_{e^\varepsilon}`; ``"qprldp"``: violation probability; ``"pure_qldp"``:
            :math:`D_{\max}` in nats).
        rho, sigma: witness input states of shape (d, d).
        notion: "qldp", "qprldp" or "pure_qldp".
        epsilon: ε in nats used (None for "pure_qldp").
        is_lower_bound: True: the supremum over all states is at least ``value``; it is not a
            certificate that the channel is private.
    """

    value: float
    rho: np.ndarray
    sigma: np.ndarray
    notion: str
    epsilon: float | None
    is_lower_bound: bool = True


def _check_channel(channel) -> Channel:
    if not isinstance(channel, Channel):
        raise TypeError(f"`channel` must be a qprldp_core.Channel. Found {type(channel).__name__}.")
    return channel


def _fast_apply(channel: Channel, rho: np.ndarray) -> np.ndarray:
    """A(ρ) without input validation (ρ Hermitian)."""
    if channel.kind == "depolarizing":
        p, d = channel.params["p"], channel.params["d"]
        return (1 - p) * rho + p * np.trace(rho) * np.eye(d) / d
    if channel.kind == "local_depolarizing":  # self-adjoint, no Kraus operators
        return local_depolarizing_apply(rho, channel.params["p"], channel.params["n"])
    out = sum(k @ rho @ k.conj().T for k in channel.kraus)
    return (out + out.conj().T) / 2


def _fast_adjoint(channel: Channel, x: np.ndarray) -> np.ndarray:
    """A†(X) without validation (X Hermitian)."""
    if channel.kind == "depolarizing":
        p, d = channel.params["p"], channel.params["d"]
        return (1 - p) * x + p * np.trace(x) * np.eye(d) / d
    if channel.kind == "local_depolarizing":
        return local_depolarizing_apply(x, channel.params["p"], channel.params["n"])
    out = sum(k.conj().T @ x @ k for k in channel.kraus)
    return (out + out.conj().T) / 2


def _pure(v: np.ndarray) -> np.ndarray:
    v = v / np.linalg.norm(v)
    return np.outer(v, v.conj())


def _inputs(channel: Channel, rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    for name, a in (("rho", r), ("sigma", s)):
        if a.shape[0] != channel.input_dim:
            raise ValueError(
                f"`{name}` must have the channel's input dimension {channel.input_dim}. "
                f"Found shape {a.shape}."
            )
    return r, s


def qldp_value(channel, rho, sigma, *, epsilon: float, atol: float = DEFAULT_ATOL) -> float:
    r"""QLDP quantity of a pair: :math:`E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))`.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: ε ≥ 0 in nats.
        atol: tolerance of the density-matrix checks.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if a state is invalid or has the wrong dimension, or ε < 0.

    References:
        Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 3.1.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
        >>> round(qldp_value(depolarizing(0.5, 2), rho, sigma, epsilon=0.5), 6)
        0.33782
    """
    channel = _check_channel(channel)
    epsilon = check_epsilon(epsilon)
    r, s = _inputs(channel, rho, sigma, atol)
    return hockey_stick_divergence(
        channel(r), channel(s), gamma=math.exp(epsilon), atol=max(atol, 1e-7)
    )


def qprldp_value(channel, rho, sigma, *, epsilon: float, atol: float = DEFAULT_ATOL) -> float:
    r"""QPrLDP quantity of a pair (violation probability of the outputs).

    .. math::

        \mathrm{Tr}\big[\mathcal A(\rho)\,\Pi\{\mathcal A(\rho) - e^\varepsilon\mathcal A(\sigma)
        > 0\}\big].

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: ε ≥ 0 in nats.
        atol: tolerance of the density-matrix checks and of the eigenvalue sign (see
            :func:`~qprldp_core.divergences.violation_probability`).

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if a state is invalid or has the wrong dimension, or ε < 0.

    References:
        Shi, arXiv:2607.06307, definition of QPrLDP.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
        >>> qprldp_value(depolarizing(0.5, 2), rho, sigma, epsilon=0.5)
        0.75
    """
    channel = _check_channel(channel)
    epsilon = check_epsilon(epsilon)
    r, s = _inputs(channel, rho, sigma, atol)
    return violation_probability(channel(r), channel(s), epsilon=epsilon, atol=atol)


# -- fast, unvalidated evaluations used inside the search -------------------------------------
def _ehs(a: np.ndarray, b: np.ndarray, gamma: float) -> tuple[float, np.ndarray]:
    w, v = np.linalg.eigh(a - gamma * b)
    pos = v[:, w > 0]
    return float(np.sum(w[w > 0])), pos @ pos.conj().T


def _viol(a: np.ndarray, b: np.ndarray, gamma: float, atol: float) -> tuple[float, np.ndarray]:
    w, v = np.linalg.eigh(a - gamma * b)
    pos = v[:, w > atol]
    proj = pos @ pos.conj().T
    return float(np.real(np.trace(proj @ a))), proj


def _random_pure(rng: np.random.Generator, d: int) -> np.ndarray:
    return _pure(rng.normal(size=d) + 1j * rng.normal(size=d))


def _qldp_alternate(channel, rho, sigma, gamma, max_iter):
    a, b = _fast_apply(channel, rho), _fast_apply(channel, sigma)
    val, proj = _ehs(a, b, gamma)
    for _ in range(max_iter):
        w, v = np.linalg.eigh(_fast_adjoint(channel, proj))
        r_new, s_new = _pure(v[:, -1]), _pure(v[:, 0])
        a, b = _fast_apply(channel, r_new), _fast_apply(channel, s_new)
        new, proj_new = _ehs(a, b, gamma)
        if new <= val + 1e-13:
            if new >= val:
                rho, sigma, val = r_new, s_new, new
            break
        rho, sigma, val, proj = r_new, s_new, new, proj_new
    return val, rho, sigma


def _qprldp_refine(channel, rho, sigma, gamma, max_iter, atol):
    a, b = _fast_apply(channel, rho), _fast_apply(channel, sigma)
    val, proj = _viol(a, b, gamma, atol)
    d = channel.input_dim
    for _ in range(max_iter):
        w, v = np.linalg.eigh(_fast_adjoint(channel, proj))
        s_new = _pure(v[:, 0])
        b_new = _fast_apply(channel, s_new)
        best = (val, None, None, None)
        acc = np.zeros((d, d), dtype=np.complex128)
        for k in range(1, d):
            acc = acc + _pure(v[:, d - k])  # top-k eigenvectors, orthogonal to s_new
            r_k = acc / k
            cand, proj_k = _viol(_fast_apply(channel, r_k), b_new, gamma, atol)
            if cand > best[0] + 1e-13:
                best = (cand, r_k, s_new, proj_k)
        if best[1] is None:
            break
        val, rho, sigma, proj = best
    return val, rho, sigma


def _rng(seed):
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def worst_case_search(
    channel,
    *,
    epsilon: float,
    notion: str = "qldp",
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> SearchResult:
    r"""Lower bound on a channel's worst-case QLDP or QPrLDP quantity, with its witness pair.

    Alternating maximisation (derived here; see the module docstring): for QLDP, starting from a
    pair of pure states, alternately take the projector :math:`M` onto the positive part of
    :math:`\mathcal A(\rho) - \gamma\mathcal A(\sigma)` and the top/bottom eigenvectors of
    :math:`\mathcal A^\dagger(M)` as the new ρ/σ; the value never decreases. For QPrLDP the QLDP
    optimum seeds a refinement that takes σ as the bottom eigenvector of
    :math:`\mathcal A^\dagger(\Pi)` and ρ as the best uniform mixture of its top-k eigenvectors.
    The first restart starts from :math:`|0\rangle, |1\rangle`, the others from Haar-random pure
    states.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel` with d_in ≥ 2.
        epsilon: ε ≥ 0 in nats.
        notion: "qldp" or "qprldp".
        restarts: number of starting pairs, ≥ 1.
        seed: integer, None or ``np.random.Generator``; an integer seed repeats the search.
        max_iter: iterations per restart, ≥ 1.
        atol: tolerance of the eigenvalue sign in the violation probability.

    Returns:
        A frozen :class:`SearchResult` with ``is_lower_bound=True``; ``value`` is recomputed on
        the witness with the validated public functions.

    Raises:
        ValueError: for an unknown notion, ε < 0, or non-positive ``restarts``/``max_iter``.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> res = worst_case_search(depolarizing(0.5, 2), epsilon=0.5, notion="qprldp", restarts=2)
        >>> round(res.value, 6), res.is_lower_bound
        (0.75, True)
    """
    channel = _check_channel(channel)
    epsilon = check_epsilon(epsilon)
    if notion not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be 'qldp' or 'qprldp'. Found {notion!r}.")
    for name, val in (("restarts", restarts), ("max_iter", max_iter)):
        if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < 1:
            raise ValueError(f"`{name}` must be a positive integer. Found {val!r}.")
    d = channel.input_dim
    if d < 2:
        rho = np.ones((1, 1), dtype=np.complex128)
        return SearchResult(0.0, rho, rho.copy(), notion, epsilon)
    gamma = math.exp(epsilon)
    rng = _rng(seed)
    best = (-1.0, None, None)
    for r in range(restarts):
        if r == 0:
            rho0, sigma0 = np.zeros((d, d), complex), np.zeros((d, d), complex)
            rho0[0, 0] = sigma0[1, 1] = 1.0
        else:
            rho0, sigma0 = _random_pure(rng, d), _random_pure(rng, d)
        val, rho, sigma = _qldp_alternate(channel, rho0, sigma0, gamma, max_iter)
        if notion == "qprldp":
            val, rho, sigma = _qprldp_refine(channel, rho, sigma, gamma, max_iter, atol)
        if val > best[0]:
            best = (val, rho, sigma)
    _, rho, sigma = best
    rho, sigma = (rho + rho.conj().T) / 2, (sigma + sigma.conj().T) / 2
    if notion == "qldp":
        value = qldp_value(channel, rho, sigma, epsilon=epsilon, atol=max(atol, 1e-7))
    else:
        value = qprldp_value(channel, rho, sigma, epsilon=epsilon, atol=max(atol, 1e-7))
    return SearchResult(value, rho, sigma, notion, epsilon, True)


def _decide(channel, epsilon, delta, notion, restarts, seed, max_iter, atol) -> bool:
    from .certify import qldp_certificate, qprldp_certificate

    if delta >= 1.0:
        return True  # both quantities are probabilities / at most 1 for every pair
    fn = qldp_certificate if notion == "qldp" else qprldp_certificate
    cert = fn(channel, epsilon=epsilon, restarts=restarts, seed=seed, max_iter=max_iter, atol=atol)
    if cert.side == "exact":
        return cert.delta <= delta
    if cert.side == "upper_bound":
        if cert.delta <= delta:
            return True
        if cert.delta_lower is not None and cert.delta_lower > delta:
            return False
    elif cert.delta > delta:  # lower bound from the worst-case search
        return False
    name = "is_qldp" if notion == "qldp" else "is_qprldp"
    raise NotImplementedError(
        f"{name}: cannot decide for {channel.description} at epsilon={epsilon:.6g}, "
        f"delta={delta:.6g}: the best proven bounds are {cert} ."
    )


def is_qldp(
    channel,
    *,
    epsilon: float,
    delta: float,
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> bool:
    r"""Decide whether ``channel`` is (ε, δ)-QLDP, or raise if that cannot be decided honestly.

    Depolarizing, unitary and bit-flip channels use the exact closed forms of
    :mod:`qprldp_core.certify`; local depolarizing uses its proven upper and lower bounds. For a
    general channel only a *refutation* is possible: if the worst-case search finds a pair with
    :math:`E_{e^\varepsilon} > \delta` the answer is ``False`` (with a witness); otherwise the
    function raises :class:`NotImplementedError` rather than claim privacy it cannot prove.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        delta: δ in [0, 1].
        restarts, seed, max_iter: passed to :func:`worst_case_search` for general channels.
        atol: numerical tolerance.

    Returns:
        True if proven (ε, δ)-QLDP, False if proven not.

    Raises:
        ValueError: for invalid ε or δ.
        NotImplementedError: if neither can be proven (general channel, or δ between the local
            depolarizing bounds).

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> is_qldp(depolarizing(0.5, 2), epsilon=0.5, delta=0.34)
        True
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    return _decide(_check_channel(channel), epsilon, delta, "qldp", restarts, seed, max_iter, atol)


def is_qprldp(
    channel,
    *,
    epsilon: float,
    delta: float,
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> bool:
    r"""Decide whether ``channel`` is (ε, δ)-QPrLDP, or raise if that cannot be decided honestly.

    Same policy as :func:`is_qldp`, with the violation probability in place of
    :math:`E_{e^\varepsilon}`.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        delta: δ in [0, 1].
        restarts, seed, max_iter: passed to :func:`worst_case_search` for general channels.
        atol: numerical tolerance.

    Returns:
        True if proven (ε, δ)-QPrLDP, False if proven not.

    Raises:
        ValueError: for invalid ε or δ.
        NotImplementedError: if neither can be proven.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> is_qprldp(depolarizing(0.5, 2), epsilon=0.5, delta=0.7)
        False
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    return _decide(
        _check_channel(channel), epsilon, delta, "qprldp", restarts, seed, max_iter, atol
    )


def _dep_ratio(p: float, d: int) -> float:
    """max/min output eigenvalue ratio of D_p over pure inputs (inf if an eigenvalue is 0)."""
    a, b = (1 - p) + p / d, p / d
    hi, lo = max(a, b), min(a, b)
    return math.inf if lo <= 0 else hi / lo


def pure_qldp_epsilon(
    channel,
    *,
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
):
    r"""Smallest ε such that ``channel`` is (ε, 0)-QLDP (nats).

    .. math::

        \varepsilon_0(\mathcal A) =
        \sup_{\rho,\sigma} D_{\max}(\mathcal A(\rho)\|\mathcal A(\sigma)).

    Exact closed forms (derived here):

    * global :math:`\mathcal D_p` on dimension d: with :math:`a = 1 - p + p/d`, :math:`b = p/d`
      (the output eigenvalues of a pure input), :math:`\varepsilon_0 = \ln(\max(a,b)/\min(a,b))`,
      i.e. :math:`\ln(1 + d(1-p)/p)` for p ≤ 1. Upper bound: every output lies between
      :math:`\min(a,b) I` and :math:`\max(a,b) I`; attained by orthogonal pure inputs.
    * local :math:`\mathcal D_p^{\otimes n}`: n times the single-qubit value (see
      :mod:`qprldp_core.certify` for the proof that entangled inputs do not do better).
    * unitary and bit-flip channels: ∞ (orthogonal inputs stay orthogonal).

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        restarts, seed, max_iter: search settings for general channels.
        atol: numerical tolerance.

    Returns:
        A float (possibly ``math.inf``) for the channels above. For a general channel a
        :class:`SearchResult` with ``notion="pure_qldp"`` whose ``value`` is a *lower bound* on
        :math:`\varepsilon_0` found by alternating maximisation of the pencil ratio
        :math:`\langle u|\mathcal A(\rho)|u\rangle / \langle u|\mathcal A(\sigma)|u\rangle`: a
        lower bound is not a privacy guarantee, so it is not returned as a bare float.

    Raises:
        TypeError: if ``channel`` is not a Channel.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> round(pure_qldp_epsilon(depolarizing(0.3, 2)), 6)
        1.734601
    """
    channel = _check_channel(channel)
    kind, prm = channel.kind, channel.params
    if channel.input_dim == 1 or channel.output_dim == 1:
        return 0.0
    if kind == "depolarizing":
        return math.log(_dep_ratio(prm["p"], prm["d"]))
    if kind == "local_depolarizing":
        r = _dep_ratio(prm["p"], 2)
        return math.inf if math.isinf(r) else prm["n"] * math.log(r)
    if kind in ("unitary", "bit_flip"):
        return math.inf
    return _pure_search(channel, restarts, seed, max_iter, atol)


def _pure_search(channel, restarts, seed, max_iter, atol) -> SearchResult:
    from .divergences import max_relative_entropy

    d = channel.input_dim
    rng = _rng(seed)
    best = (-1.0, None, None)
    for r in range(restarts):
        if r == 0:
            rho, sigma = np.zeros((d, d), complex), np.zeros((d, d), complex)
            rho[0, 0] = sigma[1, 1] = 1.0
        else:
            rho, sigma = _random_pure(rng, d), _random_pure(rng, d)
        val = max_relative_entropy(
            _fast_apply(channel, rho), _fast_apply(channel, sigma), atol=1e-7
        )
        for _ in range(max_iter):
            if math.isinf(val):
                break
            # top generalised eigenvector u of the pencil (A(ρ), A(σ)) on supp A(σ)
            ws, vs = np.linalg.eigh(_fast_apply(channel, sigma))
            keep = ws > support_tol(ws.size)  # supp A(σ), as in max_relative_entropy
            s_inv = (vs[:, keep] / np.sqrt(ws[keep])) @ vs[:, keep].conj().T
            _, wv = np.linalg.eigh(s_inv @ _fast_apply(channel, rho) @ s_inv)
            u = s_inv @ wv[:, -1]
            _, v = np.linalg.eigh(_fast_adjoint(channel, np.outer(u, u.conj())))
            r_new, s_new = _pure(v[:, -1]), _pure(v[:, 0])
            new = max_relative_entropy(
                _fast_apply(channel, r_new), _fast_apply(channel, s_new), atol=1e-7
            )
            if not new > val + 1e-12:
                break
            rho, sigma, val = r_new, s_new, new
        if val > best[0]:
            best = (val, rho, sigma)
        if math.isinf(val):
            break
    return SearchResult(best[0], best[1], best[2], "pure_qldp", None, True)

