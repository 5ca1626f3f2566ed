"""The sans-I/O core: what to send to Redis and how to read the replies.

Imports no socket, thread or asyncio code (``tests/core/test_layers.py`` checks
it): the clients in `worqr._clients` execute its plans.
"""

from __future__ import annotations

from .._settings import Settings
from .bulk import Bulk
from .dead_letters import DeadLetters
from .deletion import QueueDeletion
from .flows import Flows
from .groups import Groups
from .history import History
from .job_logs import JobLogs
from .jobs_read import JobReads
from .jobs_submit import JobSubmission
from .jobs_work import JobWork
from .kinds import QueueKinds
from .limits import Limits
from .liveness import Liveness
from .membership import Membership
from .notify import Notifications
from .pausing import Pausing
from .processes import Processes
from .produce import Producing
from .reads import Reads
from .relay import Relay
from .sched_refill import ScheduleRefill
from .schedules import Schedules
from .state import Callback, CoreState
from .upkeep import Upkeep


class Core:
    """State and plans of one client, as parts: `Worqr` and `AsyncWorqr` run
    ``core.<part>.<plan>(...)``. Each part gets, when it is built, the state
    and the parts it calls; none inherits from another (docs/design.md, "The
    core: parts, not mixins")."""

    def __init__(self, settings: Settings, *, cluster: bool = False) -> None:
        self.state = state = CoreState(settings, cluster=cluster)
        self.kinds = kinds = QueueKinds(state)
        self.notifications = notifications = Notifications(state)
        self.relay = relay = Relay(state, kinds)
        self.reads = Reads(state)
        self.upkeep = upkeep = Upkeep(state)
        self.schedule_refill = refill = ScheduleRefill(state)
        self.membership = membership = Membership(state, kinds, notifications, relay)
        self.processes = Processes(state, membership)
        self.liveness = Liveness(state, kinds, membership, upkeep, relay)
        self.producing = producing = Producing(state, kinds, relay)
        self.submission = submission = JobSubmission(state, kinds, producing)
        self.job_reads = job_reads = JobReads(state, kinds, notifications, relay)
        self.job_work = job_work = JobWork(state, kinds, membership, relay, refill)
        self.bulk = bulk = Bulk(state, kinds, relay, producing)
        self.dead_letters = DeadLetters(state, kinds, job_reads, job_work, bulk)
        self.flows = Flows(state, kinds, producing, submission, job_reads, relay)
        self.schedules = Schedules(state, kinds, producing, submission)
        self.limits = Limits(state, kinds)
        self.deletion = QueueDeletion(state, kinds, relay)
        self.pausing = Pausing(state, kinds, submission)
        self.groups = Groups(state, kinds)
        self.job_logs = JobLogs(state, kinds)
        self.history = History(state)


__all__ = ["Callback", "Core"]
