r"""Empirical privacy audits: canaries, neighbouring data sets, lower bounds on ε.

Every privacy claim the product makes can be tested by the product itself. The package has
one concept per module:

* :mod:`~pennylane_qshiftdp.audit.statistics`: the estimators — split-half Clopper–Pearson,
  Gaussian DP (μ from a threshold test, converted to (ε, δ)), and the one-run audit — and their
  ceilings (the largest ε the trials can certify).
* :mod:`~pennylane_qshiftdp.audit.scores`: projection and shot-lattice scores.
* :mod:`~pennylane_qshiftdp.audit.result`: :class:`AuditResult` and the shared analysis.
* :mod:`~pennylane_qshiftdp.audit.one_step`: :func:`make_private` and one step on a model
  (:func:`audit_one_step`), with full-sensitivity canaries;
* :mod:`~pennylane_qshiftdp.audit.setting`: the one-qubit setting (:func:`audit_setting`) on
  a shot or zero background.
* :mod:`~pennylane_qshiftdp.audit.white_box`: the seam — :func:`audit_release` audits any
  ``release(dataset, seed)``; :func:`audit_optimizer` and :func:`audit_optimizer_one_run` audit
  any DP optimizer class (the product's, Opacus's, or a subclass) with crafted gradient canaries.
* :mod:`~pennylane_qshiftdp.audit.plot`: score histograms with the thresholds.
* :mod:`~pennylane_qshiftdp.audit.specs`: :class:`TrialSpec` (trials, seed, confidence,
  estimators) and how the audits take their specs' fields as keywords. The mechanism audited
  is one spec per entry point: :class:`SettingSpec`, :class:`WhiteBoxSpec`,
  :class:`OptimizerSpec`.

The audit of a finished ``qshiftdp train`` run (``qshiftdp audit --run DIR``) re-runs the
application's job, so it lives with it: :func:`pennylane_qshiftdp.app.audit_run.audit_run`.

See docs/audit.md for what each estimator assumes and what its ceiling means.
"""

from .one_step import SCORES, audit_one_step
from .plot import plot_audit, plot_one_run
from .result import ESTIMATORS, AuditResult, analyse_releases
from .scores import lattice_score, projection_score
from .setting import BACKGROUNDS, SETTING_MODES, SettingSpec, audit_setting
from .specs import TrialSpec
from .statistics import (
    ONE_RUN_GUESS_FRACTIONS,
    GDPBound,
    OneRunBound,
    ScoreBound,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_from_rates,
    gdp_bound,
    gdp_delta,
    gdp_epsilon,
    max_certifiable_epsilon,
    max_certifiable_gdp_epsilon,
    max_certifiable_one_run_epsilon,
    one_run_bound,
    one_run_epsilon,
    one_run_p_value,
    split_half_bound,
)
from .white_box import (
    OneRunResult,
    OptimizerSpec,
    WhiteBoxSpec,
    audit_optimizer,
    audit_optimizer_one_run,
    audit_release,
    optimizer_release,
    zero_background,
)

__all__ = [
    "BACKGROUNDS",
    "ESTIMATORS",
    "ONE_RUN_GUESS_FRACTIONS",
    "SCORES",
    "SETTING_MODES",
    "AuditResult",
    "GDPBound",
    "OneRunBound",
    "OneRunResult",
    "OptimizerSpec",
    "ScoreBound",
    "SettingSpec",
    "TrialSpec",
    "WhiteBoxSpec",
    "analyse_releases",
    "audit_one_step",
    "audit_optimizer",
    "audit_optimizer_one_run",
    "audit_release",
    "audit_setting",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_rates",
    "gdp_bound",
    "gdp_delta",
    "gdp_epsilon",
    "lattice_score",
    "max_certifiable_epsilon",
    "max_certifiable_gdp_epsilon",
    "max_certifiable_one_run_epsilon",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_p_value",
    "optimizer_release",
    "plot_audit",
    "plot_one_run",
    "projection_score",
    "split_half_bound",
    "zero_background",
]


_MOVED_TO_APP = ("RUN_FILES", "audit_run")


def __getattr__(name: str):
    if name in _MOVED_TO_APP:
        raise AttributeError(
            f"`pennylane_qshiftdp.audit.{name}` moved to `pennylane_qshiftdp.app.audit_run."
            f"{name}` in 0.1.0: it re-runs the application's training job, and the library "
            f"never imports the application."
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
