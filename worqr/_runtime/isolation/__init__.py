"""Handlers isolated in child processes (`Worker.job(..., isolated=True)`).

The worker process keeps the lease, the heartbeat and the take loop; a pool of
children it owns runs the handlers. Payloads and results travel by pipe as
bytes in `frames` (never pickled). A job past its timeout, or cancelled, has
its child stopped (SIGTERM, then SIGKILL after a grace) before its attempt is
failed, so a retry never runs beside it. A child that dies fails only its own
job's attempt, and the pool starts another.

- `frames`: the wire format between the worker and a child;
- `child`: the child's program (``python -m worqr._runtime.isolation.child``);
- `targets`: how a handler is named so that a child can import it;
- `outcomes`: what a child's answer means in the worker (results, errors);
- `pool`: the worker's side: starting, running, stopping and replacing children.
"""
