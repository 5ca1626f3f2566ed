"""One adapter per system; a module is imported only when its system runs, so a
missing peer package only removes that peer."""

from __future__ import annotations

import importlib
import importlib.util

from .base import Adapter

# name -> (module, class, top-level packages it needs)
SYSTEMS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "worqr": ("worqr_bench", "WorqrAdapter", ("worqr",)),
    "worqr-async": ("worqr_bench", "WorqrAsyncAdapter", ("worqr",)),
    "worqr-jobs": ("worqr_bench", "WorqrJobsAdapter", ("worqr",)),
    "worqr-jobs-async": ("worqr_bench", "WorqrJobsAsyncAdapter", ("worqr",)),
    "worqr-jobs-2": ("worqr_bench", "WorqrJobsTwoAdapter", ("worqr",)),
    "worqr-isolated": ("worqr_bench", "WorqrIsolatedAdapter", ("worqr",)),
    "raw-list": ("rawlist_bench", "RawListAdapter", ("redis",)),
    "rq": ("rq_bench", "RQAdapter", ("rq",)),
    "rq-simple": ("rq_bench", "RQSimpleAdapter", ("rq",)),
    "arq": ("arq_bench", "ArqAdapter", ("arq",)),
    "saq": ("saq_bench", "SaqAdapter", ("saq",)),
    "dramatiq": ("dramatiq_bench", "DramatiqAdapter", ("dramatiq",)),
    "celery": ("celery_bench", "CeleryAdapter", ("celery",)),
    "celery-prefork-2": ("celery_bench", "CeleryPreforkTwoAdapter", ("celery",)),
    "celery-threads": ("celery_bench", "CeleryThreadsAdapter", ("celery",)),
    "huey": ("huey_bench", "HueyAdapter", ("huey",)),
}

ON_REQUEST = frozenset({"worqr-jobs-2", "worqr-isolated", "celery-prefork-2"})
"""Systems a full run leaves out: the isolation benchmark's trio
(``--systems worqr-jobs-2,worqr-isolated,celery-prefork-2``)."""


def installed(name: str) -> bool:
    return all(importlib.util.find_spec(package) is not None for package in SYSTEMS[name][2])


def load(name: str) -> Adapter:
    module_name, class_name, _ = SYSTEMS[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    adapter: Adapter = getattr(module, class_name)()
    return adapter


__all__ = ["ON_REQUEST", "SYSTEMS", "Adapter", "installed", "load"]
