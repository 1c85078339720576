r"""The application: the ``qshiftdp`` command and its training job.

Nothing in the library imports this package (a contract checked in CI).

* :mod:`.cli`: the ``qshiftdp`` command (``train``, ``noise``, ``epsilon``, ``audit``);
* :mod:`.config`: :class:`TrainConfig`, importable without torch (fast ``--help``);
* :mod:`.job`: :func:`train`, the private training job, and :func:`dry_run`;
* :mod:`.run`: :class:`~.run.TrainingRun`, one run of the job as phases (build, plan,
  privatise, run epochs, finish);
* :mod:`.build`: the device, shots, loss and model factory a run is built from;
* :mod:`.resume`: the output directory, ``--resume`` from a checkpoint, the run's
  generators (reseeded per epoch, saved and restored mid-epoch);
* :mod:`.data`: data sets with honest preprocessing;
* :mod:`.models`: the quantum and hybrid classifiers;
* :mod:`.audit_run`: ``qshiftdp audit --run``, the audit of a finished run.
"""

__all__: list[str] = []
