"""Crawl policies that propagate along links: favor, default and distrust.

Each URL carries a policy, inherited from the page that linked to it (after Krugler et al. on the
Nutch developers' list). A policy tunes how much a URL's score is multiplied by and whether the
links of its pages are followed:

- ``favor`` multiplies by ``1 + (boost - 1) * damping ** distance``, where ``distance`` is the
  number of link hops from the favored seed (or from the page a rule switched to favor): the
  favour fades with distance, as trust does in TrustRank.
- ``default`` leaves scores alone (boost 1).
- ``distrust`` multiplies by its boost (< 1, or 0); with ``follow = false`` the links of a
  distrusted page are not followed at all.

A TOML file (``--policy FILE``) tunes them, lists seeds with their policies and gives switch
rules, tried in order, the first match winning::

    [policies.favor]
    boost = 4.0
    damping = 0.7
    max_distance = 5          # optional: beyond it, links from favored pages fall to default
    [policies.favor.filters]  # optional: what a URL of this policy must (not) look like
    include = ["^https://example\\.org/"]
    exclude = ["\\.pdf$"]
    [policies.distrust]
    boost = 0.2
    follow = false
    [[seed]]
    url = "https://example.org/"
    policy = "favor"
    [[rule]]
    match = "^https://spam\\."  # a URL regex (re.search), or hosts = ["a.example", "b.example"]
    policy = "distrust"

Only the three built-in names exist, so that "most trusting" is well defined: when one URL is
reached from pages of different policies, :meth:`PolicySet.combine` keeps the most trusting one
(favor > default > distrust), so a link from a distrusted page never demotes a URL a trusted page
also links to.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

TRUST_ORDER = ("distrust", "default", "favor")  # least to most trusting


@dataclass(frozen=True)
class Filters:
    """URL regexes a policy's URLs must match (any ``include``, when given) and must not."""

    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    def allows(self, url: str) -> bool:
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)


@dataclass(frozen=True)
class Policy:
    """One crawl policy's settings."""

    name: str
    boost: float = 1.0
    damping: float = 1.0  # how much of the boost is left after each link hop
    follow: bool = True  # whether links of this policy's pages are followed
    max_distance: int | None = None  # beyond it, links inherit ``default`` instead
    filters: Filters = field(default_factory=Filters)

    def multiplier(self, distance: int) -> float:
        """``1 + (boost - 1) * damping ** distance``: the boost, fading with link distance."""
        return 1.0 + (self.boost - 1.0) * self.damping ** max(distance, 0)


@dataclass(frozen=True)
class Rule:
    """A switch rule: URLs it matches take ``policy`` whatever their parent's."""

    policy: str
    pattern: re.Pattern[str] | None = None
    hosts: frozenset[str] = frozenset()

    def matches(self, url: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(url) is not None
        parts = urlsplit(url)
        return (parts.hostname or "") in self.hosts or parts.netloc.lower() in self.hosts


BUILTINS: Mapping[str, Policy] = {
    "favor": Policy("favor", boost=4.0, damping=0.7),
    "default": Policy("default"),
    "distrust": Policy("distrust", boost=0.2),
}


@dataclass(frozen=True)
class PolicySet:
    """The policies of one crawl, its seeds' policies and its switch rules."""

    policies: Mapping[str, Policy] = field(default_factory=lambda: dict(BUILTINS))
    seeds: Mapping[str, str] = field(default_factory=dict)  # seed URL -> policy
    rules: tuple[Rule, ...] = ()

    def for_seed(self, url: str) -> str:
        """A seed's policy: as listed, else the first matching rule's, else ``default``."""
        if url in self.seeds:
            return self.seeds[url]
        return self._switched(url) or "default"

    def inherit(self, parent_policy: str, url: str, distance_from_favor: int) -> str | None:
        """The policy of ``url`` reached by a link from a page of ``parent_policy``, or None if
        the link is not to be followed (the parent's policy doesn't follow links, or the
        resulting policy's filters reject the URL). ``distance_from_favor`` is the link's
        distance, in hops, from where the parent's policy began (its seed or switch)."""
        parent = self.get(parent_policy)
        if not parent.follow:
            return None
        name = parent.name
        if parent.max_distance is not None and distance_from_favor > parent.max_distance:
            name = "default"
        name = self._switched(url) or name
        return name if self.get(name).filters.allows(url) else None

    def combine(self, a: str, b: str) -> str:
        """The policy of a URL reached from pages of policies ``a`` and ``b``: the most
        trusting one (favor > default > distrust)."""
        self.get(a), self.get(b)  # unknown names are errors, not silently ranked
        return max(a, b, key=TRUST_ORDER.index)

    def multiplier(self, policy: str, distance: int) -> float:
        """How much a URL's score is multiplied by at ``distance`` hops into ``policy``."""
        return self.get(policy).multiplier(distance)

    def get(self, name: str) -> Policy:
        policy = self.policies.get(name)
        if policy is None:
            raise ValueError(f"unknown crawl policy {name!r}; known: {', '.join(TRUST_ORDER)}")
        return policy

    def _switched(self, url: str) -> str | None:
        return next((rule.policy for rule in self.rules if rule.matches(url)), None)


def load_policies(path: str | Path | None) -> PolicySet:
    """The policies of a TOML file, or the built-ins when ``path`` is None.

    Raises ValueError naming the file and the problem when it can't be read or is wrong."""
    if path is None:
        return PolicySet()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        return parse_policies(data)
    except OSError as exc:
        raise ValueError(f"policy file {path}: cannot read it ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"policy file {path}: not valid TOML: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"policy file {path}: {exc}") from exc


def parse_policies(data: Mapping[str, Any]) -> PolicySet:
    """A :class:`PolicySet` from a parsed TOML document."""
    _no_unknown_keys(data, {"policies", "seed", "rule"}, "the file")
    tables = _table(data.get("policies", {}), "[policies]")
    policies = dict(BUILTINS)
    for name, table in tables.items():
        if name not in BUILTINS:
            raise ValueError(f"[policies.{name}]: unknown policy; known: {', '.join(TRUST_ORDER)}")
        policies[name] = _policy(name, _table(table, f"[policies.{name}]"))
    seeds = dict(_seed(t, i) for i, t in enumerate(_tables(data.get("seed", []), "[[seed]]"), 1))
    rules = tuple(_rule(t, i) for i, t in enumerate(_tables(data.get("rule", []), "[[rule]]"), 1))
    return PolicySet(policies, seeds, rules)


def _policy(name: str, table: Mapping[str, Any]) -> Policy:
    where = f"[policies.{name}]"
    _no_unknown_keys(table, {"boost", "damping", "follow", "max_distance", "filters"}, where)
    base = BUILTINS[name]
    boost = _number(table, "boost", base.boost, where)
    damping = _number(table, "damping", base.damping, where)
    if boost < 0:
        raise ValueError(f"{where}: boost must be >= 0, not {boost}")
    if not 0 <= damping <= 1:
        raise ValueError(f"{where}: damping must be between 0 and 1, not {damping}")
    follow = table.get("follow", base.follow)
    if not isinstance(follow, bool):
        raise ValueError(f"{where}: follow must be true or false, not {follow!r}")
    max_distance = table.get("max_distance", base.max_distance)
    if max_distance is not None and (not _is_int(max_distance) or max_distance < 0):
        raise ValueError(f"{where}: max_distance must be a whole number >= 0")
    filters = _filters(_table(table.get("filters", {}), f"{where}.filters"), where)
    return Policy(name, boost, damping, follow, max_distance, filters)


def _filters(table: Mapping[str, Any], where: str) -> Filters:
    _no_unknown_keys(table, {"include", "exclude"}, f"{where}.filters")
    return Filters(
        _patterns(table.get("include", []), f"{where}.filters.include"),
        _patterns(table.get("exclude", []), f"{where}.filters.exclude"),
    )


def _seed(table: Mapping[str, Any], number: int) -> tuple[str, str]:
    where = f"seed {number}"
    _no_unknown_keys(table, {"url", "policy"}, where)
    url = table.get("url")
    if not isinstance(url, str) or not url:
        raise ValueError(f"{where}: needs a url")
    return url, _policy_name(table.get("policy", "default"), where)


def _rule(table: Mapping[str, Any], number: int) -> Rule:
    where = f"rule {number}"
    _no_unknown_keys(table, {"match", "hosts", "policy"}, where)
    if "policy" not in table:
        raise ValueError(f"{where}: needs a policy")
    policy = _policy_name(table["policy"], where)
    if ("match" in table) == ("hosts" in table):
        raise ValueError(f"{where}: needs exactly one of 'match' (a URL regex) or 'hosts'")
    if "match" in table:
        return Rule(policy, pattern=_patterns([table["match"]], f"{where} match")[0])
    hosts = table["hosts"]
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        raise ValueError(f"{where}: hosts must be a non-empty list of host names")
    return Rule(policy, hosts=frozenset(h.lower() for h in hosts))


def _policy_name(value: object, where: str) -> str:
    if not isinstance(value, str) or value not in BUILTINS:
        raise ValueError(f"{where}: unknown policy {value!r}; known: {', '.join(TRUST_ORDER)}")
    return value


def _patterns(values: object, where: str) -> tuple[re.Pattern[str], ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where}: must be a list of regular expressions (strings)")
    compiled = []
    for value in values:
        try:
            compiled.append(re.compile(value))
        except re.error as exc:
            raise ValueError(f"{where}: bad regular expression {value!r}: {exc}") from exc
    return tuple(compiled)


def _number(table: Mapping[str, Any], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {key} must be a number, not {value!r}")
    return float(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _table(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where}: must be a table")
    return value


def _tables(value: object, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"{where}: must be an array of tables")
    return value


def _no_unknown_keys(table: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {sorted(known)}")
