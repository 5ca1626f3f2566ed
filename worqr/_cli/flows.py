"""`worqr flow ID`: one flow's state and its jobs."""

from __future__ import annotations

import argparse
import json

from .._errors import JobNotFoundError
from .base import EXIT_OK, CliError, admin_client
from .job_view import job_json, jobs_table


def flow(args: argparse.Namespace) -> int:
    with admin_client(args) as client:
        try:
            info = client.get_flow(args.id)
        except JobNotFoundError as error:
            raise CliError(str(error)) from None
    if args.json:
        document = {
            "id": info.id,
            "kind": info.kind,
            "state": info.state,
            "jobs": [job_json(job, values=False) for job in info.jobs],
        }
        print(json.dumps(document, indent=2))
        return EXIT_OK
    print(f"flow {info.id} ({info.kind}): {info.state}, {len(info.jobs)} jobs")
    if info.jobs:
        print(jobs_table(info.jobs))
    return EXIT_OK
