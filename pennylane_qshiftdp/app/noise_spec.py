r"""``--noise-model``: the one parser and loader of ``qshiftdp train`` and ``qshiftdp certify``.

Accepted forms (the same for both commands):

* ``FakeManilaV2``: a backend of ``qiskit_ibm_runtime.fake_provider`` (an offline snapshot of an
  IBM device), whose noise is ``qiskit_aer.noise.NoiseModel.from_backend(backend)``;
* ``MODULE:NAME`` or ``path/to/file.py:NAME``: a ``pennylane.NoiseModel``, a Qiskit Aer
  ``NoiseModel``, or a callable of no arguments returning either.

:func:`parse_noise_model` checks the form when the command line is parsed (no import of
PennyLane or Qiskit); :func:`load_noise_model` loads the model. Every error names
``--noise-model`` and the value.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re

__all__ = ["NOISE_MODEL_HELP", "NOISE_MODEL_METAVAR", "is_fake_backend_name", "load_noise_model",
           "parse_noise_model"]

#: ``--noise-model``'s metavar, shared by ``qshiftdp train`` and ``qshiftdp certify``.
NOISE_MODEL_METAVAR = "FAKE_BACKEND|MODULE:NAME"

#: ``--noise-model``'s help, shared by ``qshiftdp train`` and ``qshiftdp certify``.
NOISE_MODEL_HELP = (
    "device noise: a backend of qiskit_ibm_runtime.fake_provider (offline snapshots of IBM "
    "devices), e.g. FakeManilaV2 (its qiskit_aer NoiseModel.from_backend), or MODULE:NAME / "
    "path/to/file.py:NAME naming a Qiskit Aer NoiseModel, a PennyLane NoiseModel, or a "
    "function of no arguments returning one; `qshiftdp train` simulates it on --device "
    "qiskit.aer (Qiskit Aer models only), `qshiftdp certify` certifies its depolarizing part "
    "and reports what it does not cover")

_FAKE = re.compile(r"Fake[A-Za-z0-9_]+")


def is_fake_backend_name(text: str) -> bool:
    """Whether ``text`` has the form of a fake backend's name (``Fake...``, no ``:``).

    Example:
        >>> is_fake_backend_name("FakeManilaV2"), is_fake_backend_name("mod:model")
        (True, False)
    """
    return _FAKE.fullmatch(text) is not None


def _split(text: str) -> tuple[str, str] | None:
    module, sep, attr = text.rpartition(":")
    if not sep or not module.strip() or not attr.isidentifier():
        return None
    return module, attr


def _error(value: str, why: str, *, hint: bool = True) -> str:
    return (f"--noise-model {value!r}: {why}." + (
        " Give a fake backend name such as FakeManilaV2 (qiskit_ibm_runtime.fake_provider), "
        "MODULE:NAME or path/to/file.py:NAME." if hint else ""))


def parse_noise_model(text: str) -> str:
    """argparse type of ``--noise-model``: the form only (the model is loaded later).

    Args:
        text: the flag's value.

    Returns:
        ``text``, stripped.

    Raises:
        argparse.ArgumentTypeError: naming ``--noise-model`` and the value.

    Example:
        >>> parse_noise_model("FakeManilaV2"), parse_noise_model("noise.py:model")
        ('FakeManilaV2', 'noise.py:model')
    """
    value = text.strip()
    if is_fake_backend_name(value) or _split(value) is not None:
        return value
    raise argparse.ArgumentTypeError(_error(text, "not a fake backend name nor MODULE:NAME"))


def _fake_backend(name: str):
    try:
        from qiskit_ibm_runtime import fake_provider
    except ImportError as err:
        raise ValueError(f"--noise-model {name!r} needs qiskit-ibm-runtime (with qiskit-aer "
                         f"and pennylane-qiskit): pip install "
                         f"'pennylane-qshiftdp[qiskit]'.") from err
    cls = getattr(fake_provider, name, None)
    if not isinstance(cls, type):
        known = sorted(n for n in dir(fake_provider) if n.startswith("Fake") and n.endswith("V2"))
        raise ValueError(_error(name, f"no such backend in qiskit_ibm_runtime.fake_provider "
                                      f"(e.g. {', '.join(known[:4])})"))
    return cls()


def load_noise_model(spec: str, *, qubits: int | None = None):
    """The noise model ``--noise-model spec`` names, as given (not converted).

    Args:
        spec: a fake backend name or ``MODULE:NAME`` / ``path/to/file.py:NAME``.
        qubits: refuse a fake backend with fewer qubits.

    Returns:
        A ``qiskit_aer.noise.NoiseModel`` (a fake backend's, or the one named) or a
        ``pennylane.NoiseModel``.

    Raises:
        ValueError: naming ``--noise-model`` and the value, for a form not accepted, a module,
            file or attribute that cannot be loaded, or an object that is not a noise model.
    """
    if is_fake_backend_name(spec):
        backend = _fake_backend(spec)
        if qubits is not None and backend.num_qubits < qubits:
            raise ValueError(_error(spec, f"describes {backend.num_qubits} qubits, the model "
                                          f"needs {qubits}; choose a larger fake backend",
                                    hint=False))
        try:
            from qiskit_aer.noise import NoiseModel
        except ImportError as err:
            raise ValueError(f"--noise-model {spec!r} needs qiskit-aer: pip install "
                             f"'pennylane-qshiftdp[qiskit]'.") from err
        return NoiseModel.from_backend(backend)
    parts = _split(spec)
    if parts is None:
        raise ValueError(_error(spec, "not a fake backend name nor MODULE:NAME"))
    module_name, attr = parts
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            loader = importlib.util.spec_from_file_location("_qshiftdp_noise_model", module_name)
            if loader is None or loader.loader is None or not os.path.isfile(module_name):
                raise ImportError(f"no such file: {module_name}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
        obj = getattr(module, attr)
    except (ImportError, AttributeError, OSError) as err:
        raise ValueError(_error(spec, f"cannot be loaded ({type(err).__name__}: "
                                      f"{err})")) from err
    if callable(obj) and not _is_noise_model(obj):
        try:
            obj = obj()
        except TypeError as err:  # a callable that needs arguments: not a model factory
            raise ValueError(_error(spec, f"names a callable that cannot be called without "
                                          f"arguments ({err})")) from err
    if not _is_noise_model(obj):
        raise ValueError(_error(spec, f"names a {type(obj).__name__}, not a PennyLane or Qiskit "
                                      f"Aer NoiseModel"))
    return obj


def is_qiskit_noise_model(obj) -> bool:
    """Whether ``obj`` is a Qiskit Aer noise model (checked without importing Qiskit)."""
    return type(obj).__module__.startswith("qiskit_aer") and type(obj).__name__ == "NoiseModel"


def _is_noise_model(obj) -> bool:
    if is_qiskit_noise_model(obj):
        return True
    return type(obj).__name__ == "NoiseModel" and type(obj).__module__.startswith("pennylane")
