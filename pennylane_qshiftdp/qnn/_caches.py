r"""Caches a quantum layer keeps between batches: owned by the layer, keyed by exact content.

Each cache is a dict stored on the layer object itself (so it is dropped, copied and never
shared with it; nothing global is keyed by an object's identity or address), under keys that
hold everything the cached value depends on exactly (arrays by their bytes; see
docs/engine.md, "What is kept between calls"). The caches are not pickled with the layer.
"""

from __future__ import annotations

__all__ = ["CACHE_SLOT", "layer_cache"]

#: Attribute of a layer holding its caches (a dict of dicts, by cache name).
CACHE_SLOT = "_qshiftdp_caches"


def layer_cache(layer, name: str) -> dict:
    """The live cache ``name`` of ``layer`` (created empty on first use)."""
    caches = layer.__dict__.get(CACHE_SLOT)
    if caches is None:
        caches = {}
        layer.__dict__[CACHE_SLOT] = caches
    return caches.setdefault(name, {})
