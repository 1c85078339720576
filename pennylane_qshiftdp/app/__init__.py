r"""The application: the ``qshiftdp`` command and its training job.

Nothing in the library imports this package (a contract checked in CI).

* :mod:`.cli`: the ``qshiftdp`` command (``train``, ``noise``, ``epsilon``, ``audit``);
* :mod:`.config`: :class:`TrainConfig`, importable without torch (fast ``--help``);
* :mod:`.job`: :func:`train`, the private training job, and its outputs;
* :mod:`.data`: data sets with honest preprocessing;
* :mod:`.models`: the quantum and hybrid classifiers;
* :mod:`.audit_run`: ``qshiftdp audit --run``, the audit of a finished run.
"""

__all__: list[str] = []
