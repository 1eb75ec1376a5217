"""Crawl policies: TOML loading and its errors, inheritance, switch rules, most trusting wins."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from harvester.crawl.policies import TRUST_ORDER, PolicySet, load_policies

EXAMPLE = r"""
[policies.favor]
boost = 5.0
damping = 0.5
max_distance = 3

[policies.favor.filters]
exclude = ["\\.pdf$"]

[policies.distrust]
boost = 0.0
follow = false

[[seed]]
url = "http://127.0.0.2:8000/"
policy = "favor"

[[seed]]
url = "http://127.0.0.3:8000/"

[[rule]]
match = "^http://127\\.0\\.0\\.5"
policy = "distrust"

[[rule]]
hosts = ["Trusted.Example", "mirror.example:8080"]
policy = "favor"
"""


@pytest.fixture
def policies(tmp_path: Path) -> PolicySet:
    path = tmp_path / "policy.toml"
    path.write_text(EXAMPLE, encoding="utf-8")
    return load_policies(path)


def test_built_in_multipliers() -> None:
    p = PolicySet()
    assert p.multiplier("favor", 0) == pytest.approx(4.0)
    assert p.multiplier("favor", 1) == pytest.approx(1 + 3 * 0.7)
    assert p.multiplier("favor", 50) == pytest.approx(1.0, abs=1e-6)  # the favour fades
    assert p.multiplier("default", 7) == 1.0
    assert p.multiplier("distrust", 0) == p.multiplier("distrust", 9) == pytest.approx(0.2)
    assert load_policies(None) == PolicySet()


def test_a_file_tunes_the_built_ins(policies: PolicySet) -> None:
    assert policies.multiplier("favor", 0) == pytest.approx(5.0)
    assert policies.multiplier("favor", 2) == pytest.approx(1 + 4 * 0.25)
    assert policies.multiplier("distrust", 0) == 0.0
    assert policies.multiplier("default", 0) == 1.0  # untouched


def test_seed_policies(policies: PolicySet) -> None:
    assert policies.for_seed("http://127.0.0.2:8000/") == "favor"
    assert policies.for_seed("http://127.0.0.3:8000/") == "default"  # listed, no policy
    assert policies.for_seed("http://127.0.0.5/x") == "distrust"  # by rule
    assert policies.for_seed("http://elsewhere/") == "default"


def test_links_inherit_their_pages_policy(policies: PolicySet) -> None:
    assert policies.inherit("favor", "http://127.0.0.2:8000/a", 1) == "favor"
    assert policies.inherit("default", "http://127.0.0.2:8000/a", 1) == "default"


def test_switch_rules_change_the_policy_on_the_way(policies: PolicySet) -> None:
    assert policies.inherit("favor", "http://127.0.0.5:8000/spam", 1) == "distrust"
    assert policies.inherit("default", "http://trusted.example/page", 4) == "favor"
    assert policies.inherit("default", "http://mirror.example:8080/", 4) == "favor"
    assert policies.inherit("default", "http://mirror.example/", 4) == "default"  # other port


def test_distrust_with_follow_false_stops_at_the_distrusted_page(policies: PolicySet) -> None:
    assert policies.inherit("distrust", "http://127.0.0.2:8000/a", 1) is None
    assert PolicySet().inherit("distrust", "http://x/a", 1) == "distrust"  # built-in follows


def test_a_policys_filters_reject_urls(policies: PolicySet) -> None:
    assert policies.inherit("favor", "http://127.0.0.2:8000/paper.pdf", 1) is None
    assert policies.inherit("default", "http://127.0.0.2:8000/paper.pdf", 1) == "default"


def test_include_filters_keep_only_matching_urls(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[policies.default.filters]\ninclude = ["^https://ok\\\\."]\n')
    p = load_policies(path)
    assert p.inherit("default", "https://ok.example/", 1) == "default"
    assert p.inherit("default", "https://other.example/", 1) is None


def test_favor_falls_to_default_beyond_max_distance(policies: PolicySet) -> None:
    assert policies.inherit("favor", "http://127.0.0.2:8000/a", 3) == "favor"
    assert policies.inherit("favor", "http://127.0.0.2:8000/a", 4) == "default"


@pytest.mark.parametrize(("a", "b"), list(itertools.product(TRUST_ORDER, repeat=2)))
def test_the_most_trusting_policy_wins(a: str, b: str) -> None:
    p = PolicySet()
    expected = {"favor"} & {a, b} or {"default"} & {a, b} or {"distrust"}
    assert p.combine(a, b) == p.combine(b, a) == expected.pop()


def test_unknown_policy_names_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown crawl policy 'trusted'"):
        PolicySet().combine("favor", "trusted")
    with pytest.raises(ValueError, match="unknown crawl policy"):
        PolicySet().inherit("trusted", "http://x/", 1)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[policies.favor\nboost = 2", "not valid TOML"),
        ("[policies.trusted]\nboost = 2.0", r"\[policies.trusted\]: unknown policy"),
        ("[policies.favor]\nbost = 2.0", r"\[policies.favor\]: unknown key\(s\) bost"),
        ('[policies.favor]\nboost = "high"', "boost must be a number"),
        ("[policies.favor]\nboost = -1", "boost must be >= 0"),
        ("[policies.favor]\ndamping = 1.5", "damping must be between 0 and 1"),
        ('[policies.distrust]\nfollow = "no"', "follow must be true or false"),
        ("[policies.favor]\nmax_distance = 1.5", "max_distance must be a whole number"),
        ('[policies.favor.filters]\nexclude = ["("]', "exclude: bad regular expression '\\('"),
        ("[policies.favor.filters]\ninclude = 3", "include: must be a list"),
        ('[[seed]]\npolicy = "favor"', "seed 1: needs a url"),
        ('[[seed]]\nurl = "http://x/"\npolicy = "trusted"', "seed 1: unknown policy 'trusted'"),
        ('[[rule]]\npolicy = "favor"', "rule 1: needs exactly one of 'match'"),
        ('[[rule]]\nmatch = "a"\nhosts = ["b"]\npolicy = "favor"', "rule 1: needs exactly one"),
        ('[[rule]]\nmatch = "a"', "rule 1: needs a policy"),
        (
            '[[rule]]\nmatch = "a"\npolicy = "favor"\n[[rule]]\nhosts = []\npolicy = "favor"',
            "rule 2: hosts must be a non-empty list",
        ),
        ('[[rule]]\nmatch = "[a"\npolicy = "favor"', "rule 1 match: bad regular expression"),
        ("seeds = 3", r"unknown key\(s\) seeds"),
        ("policies = 3", r"\[policies\]: must be a table"),
        ("seed = 3", r"\[\[seed\]\]: must be an array of tables"),
    ],
)
def test_loading_errors_name_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"policy file .*bad.toml: .*{problem}"):
        load_policies(path)


def test_a_missing_file_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"policy file .*nope\.toml: cannot read it"):
        load_policies(tmp_path / "nope.toml")
