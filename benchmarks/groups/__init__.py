"""Fair-share groups and durable pause: the benchmark targets of issue 29.

    python -m benchmarks.groups                       # every target, full sizes
    python -m benchmarks.groups --quick               # smaller floods and group counts
    python -m benchmarks.groups --only flat,pause     # some targets

Starts its own redis-server (or uses ``--url``); the worker processes are real
`worqr.Worker` processes of this module's ``--child`` mode, a no-op
``@worker.job`` handler each (default settings). Prints a Markdown table per
target and a PASS/FAIL line against the issue's bound.

- fairness: 4 worker processes; tenant A's flood (``submit_many(group="A")``,
  filled while group A is paused, then resumed: all of it queued at once) while
  tenants B-K each submit one job every 100 ms (a thread, 10 ms apart). The
  start delay of B-K's jobs (the handler's ``time.time()`` minus
  ``JobInfo.created``, Redis's clock on this machine; and ``JobInfo.started`` -
  ``created``, when the take happened) against a run of B-K alone as long as
  the flood's drain, and a reference run where nobody has a group (FIFO).
- flat: Redis server time per call (``INFO commandstats``: the script calls'
  usec, EVALSHA or FCALL, which includes the commands the script runs) of a
  submit and of a worker's take (finish the job held, take one), at 10 groups
  and at ``--groups`` groups with queued jobs, and with ``group_max_active=1``
  at 10 groups and at ``--groups`` groups of which all but 10 are at their
  cap. Server time is what grows if a script scans; commands per call
  (scripts' own, counted by Redis) and client wall time are printed beside it.
  Queues alternate in short windows; ratios are medians of paired windows, as
  in ``benchmarks.delayed``.
- pause: 4 worker processes draining a deep ungrouped queue at full rate;
  ``pause()``; Redis TIME read when it returned; every job's
  ``JobInfo.started`` (the take, in server ms) must be <= that time; then
  ``resume()`` and the start rate in 100 ms windows against the rate before.
- memory: ``--memory-groups`` groups used once each (one job per group,
  ``result_ttl=0`` so finished records go too; submitted while the queue is
  paused, so every group is queued at once, then resumed and drained by 4
  workers), then DBSIZE and ``used_memory`` against before.

Bulk submits go through worqr's own submit plans (``submit_many``), many plans
side by side with one pipeline per step (`pipelined`): the same script calls a
loop of ``submit`` sends, without waiting for each reply.
"""
