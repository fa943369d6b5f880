"""Settings tuned for a GPU model, kept in the user's cache directory.

``gpualign tune`` measures candidate values of the kernels' tile sizes, block sizes and lanes
on the present GPU and stores the fastest in ``$XDG_CACHE_HOME/gpualign/tuning/<model>.json``
(``~/.cache/gpualign/...`` when the variable is unset), one file per device model. Every call
that resolves to the CUDA backend applies the stored choices of its device's model
(:func:`apply`): a setting of :mod:`gpualign.config` that still holds its default takes the
stored value, one the user changed keeps the user's value (so does one set back to exactly its
default: the store cannot tell the two apart). ``GPUALIGN_TUNING=off`` leaves every setting
alone.

Examples
--------
>>> path = store_path("NVIDIA H100 80GB HBM3")
>>> path.name
'nvidia-h100-80gb-hbm3.json'
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import re
from pathlib import Path
from typing import Any

from . import __version__, config

__all__ = ["ENV_VAR", "apply", "cache_dir", "load", "reset", "save", "store_path",
           "stored_models"]

#: Environment variable that turns the stored choices off when set to ``off`` (or ``0``).
ENV_VAR = "GPUALIGN_TUNING"


def cache_dir() -> Path:
    """The folder of the stored choices: ``$XDG_CACHE_HOME/gpualign/tuning``, else
    ``~/.cache/gpualign/tuning``.

    Examples
    --------
    >>> cache_dir().name
    'tuning'
    """
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gpualign" / "tuning"


def store_path(model: str) -> Path:
    """The file of the choices for device model ``model`` (its name, as CUDA reports it)."""
    return _store_path(model, os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _store_path(model: str, _cache_home: str | None, _home: str | None) -> Path:
    """:func:`store_path` under the environment it was asked in (the variables key the
    cache)."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-") or "unknown"
    return cache_dir() / f"{slug}.json"


def _as_tuples(value: Any) -> Any:
    """JSON's lists back as the tuples that :mod:`gpualign.config` holds."""
    return tuple(_as_tuples(item) for item in value) if isinstance(value, list) else value


def _read(path: Path) -> dict[str, Any]:
    """The settings stored at ``path`` (empty when none): parsed again only when the file
    changed (another process may store them), since every CUDA call applies them
    (:func:`apply`)."""
    try:
        status = os.stat(path)
    except OSError:  # none yet: run with the defaults
        return {}
    return _parsed(str(path), status.st_ino, status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=16)
def _parsed(path: str, _inode: int, _mtime_ns: int, _size: int) -> dict[str, Any]:
    """:func:`_read` of one version of the file (its inode, time and size key the cache: a
    store is written aside and renamed into place)."""
    try:
        stored = json.loads(Path(path).read_text())
    except (OSError, ValueError):  # unreadable: run with the defaults
        return {}
    settings = stored.get("settings") if isinstance(stored, dict) else None
    return {name: _as_tuples(value) for name, value in (settings or {}).items()}


def load(model: str) -> dict[str, Any]:
    """The stored settings of device model ``model`` (empty when none are stored).

    Examples
    --------
    >>> load("a GPU never tuned")
    {}
    """
    return dict(_read(store_path(model)))


def save(model: str, settings: dict[str, Any], measurements: list[dict[str, Any]]) -> Path:
    """Store ``settings`` (name -> value) for device model ``model``, with the
    ``measurements`` they were chosen from; returns the file.

    Examples
    --------
    >>> save("NVIDIA H100 80GB HBM3", {"ALIGN_STRIP_ROWS": 64}, [])  # doctest: +SKIP
    PosixPath('/home/me/.cache/gpualign/tuning/nvidia-h100-80gb-hbm3.json')
    """
    path = store_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {"device": model, "gpualign": __version__,
                "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "settings": settings, "measurements": measurements}
    partial = path.with_suffix(".json.part")
    partial.write_text(json.dumps(document, indent=1) + "\n")
    partial.replace(path)  # a reader never sees half a file
    _parsed.cache_clear()
    return path


def reset(model: str | None = None) -> list[Path]:
    """Forget the choices of device model ``model`` (None: of every model); returns the files
    removed.

    Examples
    --------
    >>> reset("a GPU never tuned")
    []
    """
    paths = [store_path(model)] if model is not None else [path for _, path in stored_models()]
    removed = [path for path in paths if path.is_file()]
    for path in removed:
        path.unlink()
    _parsed.cache_clear()
    return removed


def stored_models() -> list[tuple[str, Path]]:
    """``(device model, file)`` of every stored set of choices.

    Examples
    --------
    >>> isinstance(stored_models(), list)
    True
    """
    found = []
    for path in sorted(cache_dir().glob("*.json")):
        try:
            model = json.loads(path.read_text()).get("device", path.stem)
        except (OSError, ValueError, AttributeError):
            model = path.stem
        found.append((str(model), path))
    return found


def apply(model: str) -> dict[str, Any]:
    """Set the stored choices of device model ``model`` on :mod:`gpualign.config`, each only
    where the setting still holds its default; returns those set (nothing under
    ``GPUALIGN_TUNING=off``). Settings this version does not have are skipped.

    Examples
    --------
    >>> apply("a GPU never tuned")
    {}
    """
    if os.environ.get(ENV_VAR, "").lower() in ("off", "0"):
        return {}
    stored = _read(store_path(model))
    if not stored:  # every CUDA call comes here: nothing more to do for an untuned GPU
        return {}
    defaults = config.defaults()
    applied = {}
    for name, value in stored.items():
        if name in defaults and getattr(config, name) == defaults[name] != value:
            setattr(config, name, value)
            applied[name] = value
    return applied
