"""A worker's part of an OAI-PMH job that many workers share (a ``postgresql://`` state).

The endpoint's lists are listed once, by the worker that holds the lease ``list:<endpoint>``
(renewed after every page; the list's position is in the state, so a worker that takes the
lease over from a dead one resumes at its token). Fetching is shared by host: a worker claims
up to its share of the hosts whose resources are pending (``storage/postgres/leases.py``),
fetches those, acknowledges each under its host's lease in the batch that marks it, gives the
hosts back, and claims again, until no host has work, nobody lists and nobody else fetches.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from harvester.exceptions import LeaseLost
from harvester.storage.protocol import Lease, LeaseStore

log = logging.getLogger(__name__)
LIST = "list:"


class SharedJob:
    def __init__(self, leases: LeaseStore, site: str, worker: str) -> None:
        self.leases = leases
        self.site, self.worker = site, worker
        self.poll = min(0.5, leases.seconds / 4)
        self.hosts: dict[str, Lease] = {}

    def list_turn(self, endpoint: str) -> Lease | None:
        """The lease to list ``endpoint``, if no live worker holds it."""
        self.leases.heartbeat(self.site, self.worker)
        return self.leases.claim(self.site, LIST + endpoint, self.worker)

    def renewing(self, lease: Lease, expired: Callable[[], bool]) -> Callable[[], bool]:
        """``expired``, which also renews the list's lease; a lost lease stops the listing."""

        def check() -> bool:
            if self.leases.renew(self.site, [lease]):
                log.warning("lost the lease to list %s: another worker lists it", lease.name)
                return True
            return expired()

        return check

    def end_turn(self, lease: Lease) -> None:
        self.leases.release(self.site, lease)

    def claim_hosts(self) -> bool:
        """Claim up to this worker's share of the hosts with pending resources; waits a poll
        and says True while another worker lists or fetches; False when the job is done."""
        workers = self.leases.heartbeat(self.site, self.worker)
        share = self.leases.share(self.site, "fetch", workers)
        for lease in self.leases.claim_hosts(self.site, self.worker, "fetch", share):
            self.hosts[lease.host] = lease
        if self.hosts:
            return True
        others = [w for w in self.leases.held(self.site, "").values() if w != self.worker]
        if others:
            time.sleep(self.poll)
        return bool(others)

    def acknowledge(self, host: str, url: str) -> None:
        """Inside the resource's batch: LeaseLost unless its host is still this worker's."""
        lease = self.hosts.get(host)
        if lease is None:
            raise LeaseLost(f"{host} is not leased to {self.worker}")
        self.leases.acknowledge(self.site, lease, url)

    def give_back(self) -> None:
        for lease in self.hosts.values():
            self.leases.release(self.site, lease)
        self.hosts.clear()

    def close(self) -> None:
        self.hosts.clear()
        self.leases.leave(self.site, self.worker)
