"""The library's public API is fully annotated: every parameter and every return.

The public API: every function in the ``__all__`` of :mod:`pennylane_qshiftdp` (its library
names; the application, :mod:`pennylane_qshiftdp.app`, is not covered), of each library
subpackage, and of ``privacy_engine``, ``losses`` and ``exceptions``; for every public class in
those lists, ``__init__`` and every public method (name not starting with ``_``), properties
included, that the package defines (what a class inherits from torch, PennyLane, Opacus or the
standard library is theirs). ``self``/``cls`` and ``*args``/``**kwargs`` need no annotation,
and ``__init__`` no return annotation. ``mypy`` (CI) checks that the annotations agree with the
code.
"""

import importlib
import inspect
import pkgutil

import pennylane_qshiftdp as qs

ROOT = "pennylane_qshiftdp"
APPLICATION = f"{ROOT}.app"
#: Modules (not packages) whose ``__all__`` is public API too.
MODULES = (f"{ROOT}.privacy_engine", f"{ROOT}.losses", f"{ROOT}.exceptions")


def _is_application(name: str) -> bool:
    return name == APPLICATION or name.startswith(APPLICATION + ".")


def _library_packages(package=qs):
    """The package and its subpackages, never importing the application."""
    yield package.__name__
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.ispkg and not _is_application(info.name):
            yield from _library_packages(importlib.import_module(info.name))


def _namespaces() -> list[str]:
    return [*_library_packages(), *MODULES]


def _public_objects():
    """``(namespace, name, object)`` for every library name in a public ``__all__``."""
    for namespace in _namespaces():
        mod = importlib.import_module(namespace)
        for name in mod.__all__:
            if namespace == ROOT and name in qs._APPLICATION:  # loaded lazily from the app
                continue
            obj = getattr(mod, name)  # resolves the top-level package's lazy names
            if not _is_application(getattr(obj, "__module__", None) or ""):
                yield namespace, name, obj


def _function_of(obj):
    """The Python function behind a public callable (a PennyLane transform wraps one)."""
    func = inspect.unwrap(obj) if callable(obj) else None
    return func if inspect.isfunction(func) else None


def _class_members(cls):
    """``(qualified name, function, is __init__, skip first parameter)`` of the public methods
    (and property accessors) that the package defines on ``cls`` or its bases."""
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        owner = next((c for c in cls.__mro__ if name in vars(c)), None)
        if owner is None or not (owner.__module__ == ROOT
                                 or owner.__module__.startswith(ROOT + ".")):
            continue
        raw = vars(owner)[name]
        qualname = f"{owner.__module__}.{owner.__qualname__}.{name}"
        if isinstance(raw, property):
            for accessor in (raw.fget, raw.fset, raw.fdel):
                if accessor is not None:
                    yield qualname, accessor, False, True
        elif isinstance(raw, staticmethod):
            yield qualname, raw.__func__, False, False
        elif isinstance(raw, classmethod):
            yield qualname, raw.__func__, False, True
        elif inspect.isfunction(raw):
            yield qualname, raw, name == "__init__", True


def _public_callables() -> dict:
    """Qualified name -> ``(function, is __init__, skip first parameter)``, each once."""
    found = {}
    for _, _, obj in _public_objects():
        if inspect.isclass(obj):
            for qualname, func, is_init, bound in _class_members(obj):
                found.setdefault(qualname, (func, is_init, bound))
        elif inspect.ismodule(obj):
            continue
        else:
            func = _function_of(obj)
            if func is not None:
                found.setdefault(f"{func.__module__}.{func.__qualname__}", (func, False, False))
    return found


def _missing(func, *, is_init: bool = False, bound: bool = False) -> list[str]:
    """What of ``func``'s signature is not annotated (empty when all is)."""
    sig = inspect.signature(func)
    params = list(sig.parameters.values())
    if bound and params and params[0].kind in (params[0].POSITIONAL_ONLY,
                                               params[0].POSITIONAL_OR_KEYWORD):
        params = params[1:]  # self / cls
    missing = [f"parameter {p.name!r}" for p in params
               if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               and p.name not in ("self", "cls") and p.annotation is p.empty]
    if not is_init and sig.return_annotation is sig.empty:
        missing.append("return")
    return missing


def test_every_public_function_and_method_is_annotated():
    missing = {name: what for name, (func, is_init, bound) in sorted(_public_callables().items())
               if (what := _missing(func, is_init=is_init, bound=bound))}
    assert not missing, (
        f"{len(missing)} public functions/methods lack type hints (annotate them; mypy checks "
        f"them in CI):\n" + "\n".join(f"  {name}: {', '.join(what)}"
                                      for name, what in missing.items()))


def test_the_public_api_walk_finds_the_api():
    """The walk sees functions, transforms, methods, class and static methods and properties,
    and no application name (so the test above cannot pass by finding nothing)."""
    found = _public_callables()
    for name in (f"{ROOT}.privacy_engine.make_private",
                 f"{ROOT}.gradients.parameter_shift._param_shift",  # behind param_shift
                 f"{ROOT}.optimizers.optimizer.QShiftDPOptimizer.__init__",
                 f"{ROOT}.optimizers.optimizer.QShiftDPOptimizer.step",
                 f"{ROOT}.gradients.shot_statistics.ShotStatistics.from_records",
                 f"{ROOT}.gradients.sensitivity_bound.Sensitivity.per_weight",
                 f"{ROOT}.losses.BoundedLoss.check",
                 f"{ROOT}.losses.MSELoss.grad_bounds",
                 f"{ROOT}.qnn.torch_layer.TorchLayer.forward",
                 f"{ROOT}.audit.white_box.OneRunResult.proven_refuted"):
        assert name in found, f"{name} is not in the walk of the public API"
    assert len(found) > 100
    assert not [name for name in found if _is_application(name)]
    assert not [n for n in _namespaces() if _is_application(n)]


def test_missing_annotations_are_reported():
    def untyped(a, b: int, *args, c=1, **kwargs):
        return a

    def typed(a: int, *args, **kwargs) -> int:
        return a

    class Layer:
        def __init__(self, x: int):
            self.x = x

        def method(self, y) -> int:
            return y

    assert _missing(untyped) == ["parameter 'a'", "parameter 'c'", "return"]
    assert _missing(typed) == []
    assert _missing(Layer.__init__, is_init=True, bound=True) == []
    assert _missing(Layer.method, bound=True) == ["parameter 'y'"]
