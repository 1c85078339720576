r"""Pure statistics of the audit: Clopper–Pearson, Gaussian-DP and one-run lower bounds on ε.

Three estimators turn what an auditor observed into a lower bound on ε that holds with a stated
confidence. Each has a *ceiling*: the largest ε it can certify from the configured number of
trials even against a mechanism that leaks everything (a perfect distinguisher). An audit whose
ceiling is below the claimed ε cannot refute the claim whatever the mechanism does; every
report prints it.

* **Split-half Clopper–Pearson** (:func:`split_half_bound`): a threshold chosen on held-out
  trials, one-sided Clopper–Pearson bounds on its true- and false-positive rates, and the
  (ε, δ)-DP hypothesis-testing inequality (:func:`epsilon_from_rates`). No assumption on the
  mechanism. Ceiling :func:`max_certifiable_epsilon` (≈ 3.5 with 100 evaluation trials per
  world at 95 %, 5.8 with 1 000, 8.1 with 10 000).
* **Gaussian-DP** (:func:`gdp_bound`): the same threshold test read through the Gaussian
  trade-off curve :math:`G_\mu`: a μ-GDP mechanism has
  :math:`\mathrm{TPR} \le \Phi(\Phi^{-1}(\mathrm{FPR}) + \mu)` for every test, so
  :math:`\mu^- = \Phi^{-1}(\mathrm{TPR}^-) - \Phi^{-1}(\mathrm{FPR}^+)` is a lower bound on the
  smallest μ for which the mechanism is μ-GDP (no assumption). It is converted to
  :math:`\varepsilon^- = \varepsilon_{\mu^-}(\delta)` (:func:`gdp_epsilon`), which is a lower bound
  on ε *if the mechanism's trade-off curve is Gaussian* (true for the Gaussian mechanism that the
  product claims to be). Much tighter: it does not need the rare tail events that the
  Clopper–Pearson bound needs. Ceiling :func:`max_certifiable_gdp_epsilon`.
* **One run** (:func:`one_run_bound`): m canaries, each included independently with probability
  1/2, one training run; the auditor guesses the membership of the canaries with the highest and
  lowest scores and abstains on the rest. An (ε, δ)-DP mechanism makes more than v correct
  guesses out of r with probability at most :func:`one_run_p_value`. No assumption besides the
  independent coin flips; ceiling :func:`max_certifiable_one_run_epsilon`.

References:
    Clopper & Pearson, Biometrika 26 (1934) 404–413.
    Jagielski, Ullman, Oprea, arXiv:2006.07709 (v1), §4.
    Nasr, Song, Thakurta, Papernot, Carlini, arXiv:2101.04535 (v1), §3.
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis, "Tight Auditing of
    Differentially Private Machine Learning", arXiv:2302.07956 (v1), §4 (Gaussian-DP fit).
    Dong, Roth, Su, "Gaussian Differential Privacy", arXiv:1905.02383 (v3), Def. 2.3 (G_μ)
    and Cor. 2.13 (μ-GDP ⇔ (ε, δ(ε))-DP for all ε).
    Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training Run", arXiv:2305.08846
    (v1), Thm. 3.1 and Appendix D (p-value with δ).
"""

from .clopper_pearson import (
    ScoreBound,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_rates,
    max_certifiable_epsilon,
    split_half_bound,
)
from .gdp import GDPBound, gdp_bound, gdp_delta, gdp_epsilon, max_certifiable_gdp_epsilon
from .one_run import (
    ONE_RUN_GUESS_FRACTIONS,
    OneRunBound,
    max_certifiable_one_run_epsilon,
    one_run_bound,
    one_run_epsilon,
    one_run_p_value,
)

__all__ = [
    "ONE_RUN_GUESS_FRACTIONS",
    "GDPBound",
    "OneRunBound",
    "ScoreBound",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_rates",
    "gdp_bound",
    "gdp_delta",
    "gdp_epsilon",
    "max_certifiable_epsilon",
    "max_certifiable_gdp_epsilon",
    "max_certifiable_one_run_epsilon",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_p_value",
    "split_half_bound",
]
