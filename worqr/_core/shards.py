"""Where a Redis Cluster client subscribes each channel: the placement policy of
the cluster subscribers, without I/O.

With sharded pub/sub (Redis >= 7) a channel lives on the shard that owns its
slot, so worqr subscribes (``SSUBSCRIBE``) on that node. With classic pub/sub
(older servers) a ``PUBLISH`` reaches every node, and the same routing simply
spreads the subscriptions. When a slot moves, the old owner ends the shard
subscriptions of that slot (a ``sunsubscribe`` the client did not ask for) and
refuses new ones with ``MOVED``; the subscriber then re-reads the slot map and
subscribes again on the new owner. The new confirmation is a drain hint, as
after any (re)subscribe, and the fallback poll covers the gap.

`ShardRouter` decides; the sync (`worqr._clients.shards`) and asyncio
(`worqr._clients.async_shards`) subscribers only carry out its steps, one
connection and reader per node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

Placement = dict[str, list[str]]
"""Node name -> channels."""

UNSUBSCRIBED = frozenset({"sunsubscribe", "unsubscribe"})
"""Message types that end a subscription (on a cluster: the server's own, when a slot moves)."""


@dataclass(frozen=True, slots=True)
class DropNode:
    """Close the reader of a node that left the cluster (its subscriptions went with it)."""

    node: str


@dataclass(frozen=True, slots=True)
class Leave:
    """Unsubscribe ``channels`` on ``node`` (they belong elsewhere now)."""

    node: str
    channels: list[str]


@dataclass(frozen=True, slots=True)
class Join:
    """Subscribe ``channels`` on ``node`` (starting its reader if needed)."""

    node: str
    channels: list[str]


@dataclass(frozen=True, slots=True)
class CloseIdle:
    """Close the reader of ``node``: nothing is subscribed on it any more."""

    node: str


Step = DropNode | Leave | Join | CloseIdle


class ShardRouter:
    """Which channels are wanted and on which node each one is subscribed."""

    def __init__(self) -> None:
        self.wanted: set[str] = set()
        self.placed: dict[str, str] = {}  # channel -> node name it was subscribed on

    def want(self, channels: Iterable[str]) -> None:
        self.wanted.update(channels)

    def unwant(self, channels: Iterable[str]) -> Placement:
        """Forget ``channels``; returns where to unsubscribe them."""
        where: Placement = defaultdict(list)
        for channel in channels:
            self.wanted.discard(channel)
            node = self.placed.pop(channel, None)
            if node is not None:
                where[node].append(channel)
        return dict(where)

    def placement(
        self, readers: Iterable[str], owner: Callable[[str], str], known: set[str] | None = None
    ) -> Iterator[Step]:
        """The steps that put every wanted channel on the node ``owner`` names
        for it now, given the nodes that have a reader. ``known``: the nodes of a
        freshly read slot map; readers and placements on other nodes are dropped
        first. The caller carries out each step before asking for the next, and
        reports what a `Join` subscribed with `place`."""
        if known is not None:
            for node in sorted((set(readers) | self.nodes()) - known):
                self.forget_node(node)
                yield DropNode(node)
        leave: Placement = defaultdict(list)
        join: Placement = defaultdict(list)
        for channel in sorted(self.wanted):
            node = owner(channel)
            current = self.placed.get(channel)
            if current == node:
                continue
            if current is not None:
                leave[current].append(channel)
            join[node].append(channel)
        for node, channels in leave.items():
            for channel in channels:
                self.placed.pop(channel, None)
            yield Leave(node, channels)
        for node, channels in join.items():
            yield Join(node, channels)
        yield from self.idle(readers)

    def idle(self, readers: Iterable[str]) -> Iterator[CloseIdle]:
        """Readers with nothing subscribed on them."""
        used = self.nodes()
        for node in sorted(set(readers) - used):
            yield CloseIdle(node)

    def place(self, node: str, channels: Iterable[str]) -> None:
        for channel in channels:
            self.placed[channel] = node

    def dropped(self, node: str, channel: str) -> bool:
        """The server ended our subscription of ``channel`` on ``node`` (its slot
        moved). True when it is still wanted: subscribe it again elsewhere."""
        if self.placed.get(channel) != node:
            return False
        del self.placed[channel]
        return channel in self.wanted

    def forget_node(self, node: str) -> None:
        """Nothing is known to be subscribed on ``node`` any more."""
        for channel in [c for c, where in self.placed.items() if where == node]:
            del self.placed[channel]

    def nodes(self) -> set[str]:
        return set(self.placed.values())
