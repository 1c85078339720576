r"""Noise calibration on the privacy accountants (Opacus's registry: RDP, PRV, and PLD).

The noise multiplier σ of the Poisson-subsampled Gaussian mechanism is the ratio of the
standard deviation of the Gaussian noise added to the summed gradient to the per-example
sensitivity Δ. For a budget (ε, δ), a sampling rate q and a number of steps T, σ is found by
Opacus's bisection on an accountant of Opacus's registry: dp-accounting's PLD by default
(registered as ``"pld"`` by :mod:`.pld`), Opacus's RDP or PRV on request; no privacy analysis is
written here. The result is conservative: ε(σ) is recomputed with a fresh accountant and σ is raised
until ε(σ) ≤ target.

All ε are in nats.

References:
    Abadi et al., "Deep Learning with Differential Privacy", arXiv:1607.00133.
    Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
    arXiv:1908.10530.
    Gopi, Lee, Wutschitz, "Numerical Composition of Differential Privacy", arXiv:2106.02848 (PRV).
    Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, "Connect the Dots", arXiv:2207.04380 (PLD).
    Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch",
    arXiv:2109.12298.
"""

from __future__ import annotations

import math

from opacus.accountants.utils import get_noise_multiplier

from .._validation import (
    check_delta,
    check_epsilon,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_sample_rate,
)
from .composition import (
    ACCOUNTANTS,
    DEFAULT_ACCOUNTANT,
    check_accountant,
    epsilon_from_history,
    quiet_opacus,
)
from .registry import resolve_accountant

__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_ACCOUNTANT",
    "calibrate_noise_multiplier",
    "compute_epsilon",
    "epochs_to_steps",
    "plan_shots",
]

#: Opacus's bisection gives up above this σ (``opacus.accountants.utils.MAX_SIGMA``).
_MAX_SIGMA = 1e6

#: Relative step by which σ is raised when the re-check finds ε(σ) > target.
_SIGMA_BUMP = 1e-3

def compute_epsilon(
    *,
    noise_multiplier: float,
    sample_rate: float,
    steps: int,
    delta: float,
    accountant: str = DEFAULT_ACCOUNTANT,
) -> float:
    r"""ε spent by ``steps`` Poisson-subsampled Gaussian steps, from a privacy accountant.

    The mechanism releases :math:`\sum_{j \in B} g_j + \mathcal{N}(0, \sigma^2 \Delta^2 I)`
    with every example in the batch :math:`B` independently with probability :math:`q`, and
    :math:`\|g_j\| \le \Delta`. The result is the accountant's upper bound on ε at ``delta``
    after ``steps`` compositions (add/remove adjacency; replace-one adjacency is covered by
    doubling Δ, which does not change σ).

    Args:
        noise_multiplier: σ > 0, noise standard deviation in units of the sensitivity Δ.
        sample_rate: Poisson sampling rate q ∈ (0, 1] (expected batch size / dataset size).
        steps: number of steps T ≥ 1.
        delta: δ ∈ (0, 1).
        accountant: ``"pld"`` (default: dp-accounting's privacy loss distributions,
            pessimistic), ``"rdp"`` (Opacus ``RDPAccountant``) or ``"prv"`` (Opacus
            ``PRVAccountant``), or another name of Opacus's accountant registry
            (:func:`~.registry.resolve_accountant`; ``"gdp"`` is refused).

    Returns:
        ε in nats (an upper bound; ``inf`` if the accountant cannot bound it).

    Raises:
        ValueError: if σ ≤ 0, q ∉ (0, 1], δ ∉ (0, 1), ``steps`` < 1 or the accountant is
            unknown or refused.
        TypeError: if ``steps`` is not an integer.

    References:
        Mironov, Talwar, Zhang, arXiv:1908.10530 (RDP of the sampled Gaussian mechanism);
        Doroshenko et al., arXiv:2207.04380 (PLD); Abadi et al., arXiv:1607.00133; Opacus
        ``opacus.accountants``; dp-accounting ``dp_accounting.pld``.

    Example:
        >>> eps = compute_epsilon(noise_multiplier=1.0, sample_rate=0.01, steps=1000, delta=1e-5)
        >>> print(f"{eps:.2f}")  # PLD; RDP gives 2.10
        1.83
    """
    sigma = check_positive_float(noise_multiplier, "noise_multiplier")
    q = check_sample_rate(sample_rate, "sample_rate")
    steps = check_positive_int(steps, "steps")
    delta = check_delta(delta, "delta")
    accountant = check_accountant(accountant)
    return epsilon_from_history([(sigma, q, steps)], delta=delta, accountant=accountant)


def calibrate_noise_multiplier(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    steps: int,
    accountant: str = DEFAULT_ACCOUNTANT,
    epsilon_tolerance: float = 0.01,
) -> float:
    r"""Smallest noise multiplier σ (up to a tolerance) meeting an (ε, δ) budget.

    Finds σ such that ``steps`` compositions of the Poisson-subsampled Gaussian mechanism with
    sampling rate q satisfy (ε, δ)-DP according to the accountant, by Opacus's bisection
    (:func:`opacus.accountants.utils.get_noise_multiplier`), which returns the upper end of its
    bracket, with ε(σ) ∈ [target − tolerance, target]. The result is then re-checked with a
    fresh accountant (:func:`compute_epsilon`); if ε(σ) > target, σ is raised by 0.1 % at a time
    until it is not. Hence ``compute_epsilon(noise_multiplier=σ, ...) <= target_epsilon`` always.

    Args:
        target_epsilon: budget ε > 0, in nats.
        target_delta: budget δ ∈ (0, 1); choose δ well below 1 / dataset size.
        sample_rate: Poisson sampling rate q ∈ (0, 1] (expected batch size / dataset size).
        steps: number of steps T ≥ 1 (for E epochs, T = ⌈E / q⌉, see :func:`epochs_to_steps`).
        accountant: ``"pld"`` (default), ``"rdp"`` or ``"prv"`` (:func:`compute_epsilon`).
        epsilon_tolerance: absolute tolerance (nats, > 0) of the bisection on ε: the returned σ
            spends between ``target_epsilon - epsilon_tolerance`` and ``target_epsilon``
            (the accountant's entry may widen it: with ``"pld"`` at least 0.5 % of
            ``target_epsilon``, since its ε steps where its discretisation interval halves).

    Returns:
        σ > 0, noise standard deviation in units of the sensitivity Δ.

    Raises:
        ValueError: if an argument is out of range, the accountant is unknown, or the budget is
            so small that σ would exceed 10⁶.
        TypeError: if ``steps`` is not an integer.

    References:
        Abadi et al., arXiv:1607.00133 (DP-SGD and the moments accountant);
        Mironov, Talwar, Zhang, arXiv:1908.10530 (sampled Gaussian RDP);
        Opacus ``opacus.accountants.utils.get_noise_multiplier``.

    Example:
        >>> sigma = calibrate_noise_multiplier(
        ...     target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=1000
        ... )
        >>> print(f"{sigma:.3f}")  # PLD; RDP needs 1.523
        1.416
        >>> compute_epsilon(
        ...     noise_multiplier=sigma, sample_rate=0.01, steps=1000, delta=1e-5
        ... ) <= 1.0
        True
    """
    eps = check_epsilon(target_epsilon, "target_epsilon")
    delta = check_delta(target_delta, "target_delta")
    q = check_sample_rate(sample_rate, "sample_rate")
    steps = check_positive_int(steps, "steps")
    entry = resolve_accountant(accountant)
    accountant = entry.name
    # the accountant's own tolerance (PLD: at least 0.5 % of the target, see the registry)
    tol = entry.tolerance(eps, check_positive_float(epsilon_tolerance, "epsilon_tolerance"))

    try:
        with quiet_opacus():
            sigma = float(
                get_noise_multiplier(
                    target_epsilon=eps,
                    target_delta=delta,
                    sample_rate=q,
                    steps=steps,
                    accountant=accountant,
                    epsilon_tolerance=tol,
                )
            )
    except ValueError as err:
        if "privacy budget is too low" not in str(err):
            raise
        raise ValueError(
            f"The privacy budget is too small: `target_epsilon`={eps}, `target_delta`={delta} "
            f"with `sample_rate`={q} and `steps`={steps} would need a noise multiplier above "
            f"{_MAX_SIGMA:g}. Increase ε or δ, or reduce the sampling rate or number of steps."
        ) from err

    # Conservative re-check with a fresh accountant: never return a σ whose ε exceeds the target.
    while (
        compute_epsilon(
            noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta, accountant=accountant
        )
        > eps
    ):
        sigma *= 1.0 + _SIGMA_BUMP
        if sigma > _MAX_SIGMA:  # pragma: no cover - Opacus would have refused first
            raise ValueError(
                f"Could not find a noise multiplier below {_MAX_SIGMA:g} meeting "
                f"`target_epsilon`={eps}."
            )
    return sigma


def epochs_to_steps(*, epochs: float, sample_rate: float) -> int:
    r"""Number of steps T = ⌈E / q⌉ covering ``epochs`` passes at Poisson rate q.

    Rounds up (more steps spend more budget, so calibrating for them is conservative); a
    quotient within 10⁻⁹ (relative) of an integer is taken as that integer, so float
    round-off such as ``3 / 0.1 = 30.000000000000004`` gives 30, not 31.

    Args:
        epochs: number of epochs E > 0 (may be fractional).
        sample_rate: Poisson sampling rate q ∈ (0, 1].

    Returns:
        T ≥ 1.

    Raises:
        ValueError: if E ≤ 0 or q ∉ (0, 1].

    Example:
        >>> epochs_to_steps(epochs=3, sample_rate=0.1)
        30
        >>> epochs_to_steps(epochs=10, sample_rate=64 / 360)
        57
    """
    e = check_positive_float(epochs, "epochs")
    q = check_sample_rate(sample_rate, "sample_rate")
    x = e / q
    n = round(x)
    if abs(x - n) <= 1e-9 * max(1.0, x):
        return max(1, int(n))
    return max(1, math.ceil(x))


def plan_shots(*, per_example_shot_variance: float, noise_multiplier: float, clip_norm: float,
               expected_batch_size: float, fraction: float = 0.01) -> int:
    r"""Smallest shot count whose shot noise adds at most ``fraction`` of the DP noise variance.

    Per coordinate of the released sum, the shot noise of the batch has variance at most
    :math:`qN\,v_1/N_s`, with :math:`v_1` a bound on one example's single-shot contribution
    (for a parameter-shift gradient :math:`(\|\nabla_f\ell\|_1 B_k)^2`, :math:`B_k` the
    certified per-weight bound, since
    :math:`\sum_t a_{tk}^2 (\lambda_+-\lambda_-)^2/4 \le (\tfrac{\lambda_+-\lambda_-}{2}
    \sum_t |a_{tk}|)^2 \le B_k^2`). The DP noise has variance :math:`\sigma^2 C^2`, so

    .. math::

        N_s = \left\lceil \frac{qN\,v_1}{f\,\sigma^2 C^2} \right\rceil, \quad N_s \ge 2 .

    This is a utility choice (shot noise only adds noise); it does not enter the guarantee.

    Args:
        per_example_shot_variance: :math:`v_1 \ge 0` (single-shot units).
        noise_multiplier: σ > 0. clip_norm: C > 0.
        expected_batch_size: qN > 0.
        fraction: f ∈ (0, 1].

    Returns:
        int: :math:`N_s \ge 2` (two shots are the least a sample variance needs).

    Raises:
        ValueError: for out-of-range arguments.

    References:
        Derived here (this docstring).

    Example:
        >>> plan_shots(per_example_shot_variance=1.0, noise_multiplier=6.0156, clip_norm=4.2426,
        ...            expected_batch_size=54)
        9
    """
    v1 = check_nonnegative_float(per_example_shot_variance, "per_example_shot_variance")
    sigma = check_positive_float(noise_multiplier, "noise_multiplier")
    clip = check_positive_float(clip_norm, "clip_norm")
    batch = check_positive_float(expected_batch_size, "expected_batch_size")
    f = check_positive_float(fraction, "fraction")
    if f > 1:
        raise ValueError(f"`fraction` must be in (0, 1]. Found {fraction!r}.")
    return max(2, math.ceil(batch * v1 / (f * sigma**2 * clip**2)))
