"""A worker's share of a crawl that many workers run on one state: the hosts it holds.

Every ``poll`` seconds (and whenever it runs out of work) a worker says it is alive, renews
its leases, gives back the hosts it holds past its share (``ceil(hosts with work / live
workers)``) or that it has nothing left of, and claims free hosts up to its share
(``storage/postgres/leases.py``). Only a held host's URLs are in the worker's scheduler, so
``--crawl-per-host``, ``--delay``, ``--delay-factor`` and robots.txt ``Crawl-delay`` hold for
the job as a whole: a host is fetched by one worker at a time, and a host handed over keeps
its rest (``Lease.next_at``, on the state's clock). A page is acknowledged inside the
transaction that records it (:meth:`HostLeasing.acknowledge`), which fails if the host's lease
was taken over meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from harvester.storage.protocol import Lease, LeaseStore

log = logging.getLogger(__name__)


class HostLeasing:
    def __init__(self, leases: LeaseStore, site: str, worker: str, kind: str = "crawl") -> None:
        self.leases = leases
        self.site, self.worker, self.kind = site, worker, kind
        self.poll = min(0.5, leases.seconds / 4)
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
        """Renew, give back and claim; the leases claimed and the hosts given up (lost ones
        included). ``idle(host)``: nothing of it in flight; ``spent(host)``: nothing queued
        here either (the state may hold more, queued by other workers: given back, it is
        claimed again with them); ``rest(host)``: seconds before it may be asked again."""
        self._last = now
        gone = [lease.host for lease in self.leases.renew(self.site, list(self.held.values()))]
        for host in gone:
            log.warning("lost the lease on %s: another worker holds it now", host)
            del self.held[host]
        workers = self.leases.heartbeat(self.site, self.worker)
        share = self.leases.share(self.site, self.kind, workers)
        extra = [h for h in self.held if idle(h)][: max(len(self.held) - share, 0)]
        for host in {*extra, *(h for h in self.held if spent(h))}:
            self.give_up(host, rest(host))
            gone.append(host)
        claimed = self.leases.claim_hosts(self.site, self.worker, self.kind, share - len(self.held))
        for lease in claimed:
            self.held[lease.host] = lease
        return claimed, gone

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
