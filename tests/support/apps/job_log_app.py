"""A job handler that writes its log, importable by module and name, so an
isolated child (`worker.job(..., isolated=True)`) can run it too."""

from __future__ import annotations

import worqr


def logs(payload: str) -> str:
    """Logs ``payload`` lines (a count) and a bad one, then says it is done."""
    job = worqr.current_job()
    for i in range(int(payload)):
        job.log(f"attempt {job.attempt} line {i}")
    try:
        job.log(b"not a str")  # type: ignore[arg-type]
    except TypeError as error:
        job.log(f"refused: {error}")
    return "done"
