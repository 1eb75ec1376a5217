"""A worker's share of a crawl that many workers run on one state: the hosts it holds.

Every ``poll`` seconds (and whenever it runs out of work) a worker says it is alive, renews
its leases, gives back the hosts it holds past its share (``ceil(hosts with work / live
workers)``), and claims free hosts up to its share (``storage/postgres/leases.py``). A host it
has nothing left of here is kept, and opened again, while the state holds URLs of it that
other workers queued; only a host with no work left anywhere is given back.

Only a held host's URLs are in the worker's scheduler, so ``--crawl-per-host``, ``--delay``,
``--delay-factor`` and robots.txt ``Crawl-delay`` hold for the job as a whole: a host is
fetched by one worker at a time, and a host handed over keeps its rest (``Lease.next_at``, on
the state's clock). A page is acknowledged inside the transaction that records it
(:meth:`HostLeasing.acknowledge`), which fails if the host's lease was taken over meanwhile.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from harvester.storage.protocol import Lease, LeaseStore

log = logging.getLogger(__name__)


def hosts_at_once(concurrency: int, per_host: int, delay: float, delay_factor: float) -> int | None:
    """How many hosts one worker can keep busy: its fetch slots' worth of hosts, each resting
    ``delay_factor`` times as long as it is fetched, and one more to start when a host runs
    out; None (no bound) when a fixed ``delay`` makes a host's rest unknown in advance.

    >>> hosts_at_once(2, 1, 0.0, 0.0), hosts_at_once(16, 2, 0.0, 1.0), hosts_at_once(2, 1, 1, 0)
    (3, 17, None)
    """
    if delay > 0:
        return None
    return math.ceil(concurrency / max(per_host, 1) * (1 + delay_factor)) + 1


class HostLeasing:
    """``most``: the hosts this worker holds at most (:func:`hosts_at_once`); a held host it
    cannot fetch for want of slots is a host another worker could be fetching."""

    def __init__(
        self,
        leases: LeaseStore,
        site: str,
        worker: str,
        kind: str = "crawl",
        most: int | None = None,
    ) -> None:
        self.leases = leases
        self.site, self.worker, self.kind = site, worker, kind
        self.most = most
        self.poll = min(0.25, leases.seconds / 4)
        self.held: dict[str, Lease] = {}
        self._last = float("-inf")

    def owns(self, host: str) -> bool:
        return host in self.held

    def due(self, now: float) -> bool:
        return now - self._last >= self.poll

    def rebalance(
        self,
        now: float,
        idle: Callable[[str], bool],
        spent: Callable[[str], bool],
        rest: Callable[[str], float],
    ) -> tuple[list[Lease], list[str]]:
        """Renew, give back and claim; the leases claimed (or to open again: a host spent here
        that others queued work for) and the hosts given up (lost ones included).
        ``idle(host)``: nothing of it in flight; ``spent(host)``: nothing queued here either;
        ``rest(host)``: seconds before it may be asked again."""
        self._last = now
        gone = [lease.host for lease in self.leases.renew(self.site, list(self.held.values()))]
        for host in gone:
            log.warning("lost the lease on %s: another worker holds it now", host)
            del self.held[host]
        workers = self.leases.heartbeat(self.site, self.worker)
        share = self.leases.share(self.site, self.kind, workers)
        share = share if self.most is None else min(share, self.most)
        done_here = [h for h in self.held if spent(h)]
        refill = self.leases.with_work(self.site, self.kind, done_here)
        finished = [h for h in done_here if h not in refill]
        kept = [h for h in self.held if h not in finished]
        extra = [h for h in kept if idle(h)][: max(len(kept) - share, 0)]
        for host in [*finished, *extra]:
            self.give_up(host, rest(host))
            gone.append(host)
        refill -= set(extra)
        claimed = self.leases.claim_hosts(self.site, self.worker, self.kind, share - len(self.held))
        for lease in claimed:
            self.held[lease.host] = lease
        return [*claimed, *(self.held[h] for h in refill)], gone

    def give_up(self, host: str, rest: float) -> None:
        lease = self.held.pop(host)
        self.leases.release(self.site, lease, self.leases.now() + rest if rest > 0 else 0.0)

    def wait_before(self, lease: Lease) -> float:
        """Seconds before the first request to a host just claimed (its rest handed over)."""
        return max(lease.next_at - self.leases.now(), 0.0) if lease.next_at else 0.0

    def acknowledge(self, host: str, url: str) -> None:
        """Inside the page's transaction: LeaseLost unless the host is still ours."""
        self.leases.acknowledge(self.site, self.held[host], url)

    def others_busy(self) -> bool:
        """Whether another worker holds a host: it may still queue work for anyone."""
        return any(w != self.worker for w in self.leases.held(self.site).values())

    def close(self) -> None:
        self.held.clear()
        self.leases.leave(self.site, self.worker)
