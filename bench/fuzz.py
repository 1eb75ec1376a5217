"""``python -m bench fuzz [--examples 10000] [--socket 1000]``: the provider fuzz, long.

The same requests and oracle as ``tests/test_provider_fuzz.py`` (``tests/fuzz_requests.py``,
``tests/fuzz_oracle.py``), run for many more examples: ``--examples`` in process through the
Flask test client, then ``--socket`` over loopback to the production server (the CLI's
gunicorn, one worker). Failures are counted, not raised, so every example runs; the first few
are printed in the notes. The site is ``tests.sites.make_site`` (30 pages) in
``bench/out/fuzz/``, rebuilt on every run.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bench.harness import Report
from tests.fuzz_oracle import Corpus, Wire, check
from tests.fuzz_provider import (
    GUNICORN_ENV,
    corpus_of,
    fuzz_app,
    gunicorn_refusal,
    serve_argv,
    socket_corpus,
)
from tests.fuzz_requests import send_app, send_socket, wires
from tests.servers import start_command, wait_analysed
from tests.sites import make_site

OUT = Path(__file__).resolve().parent / "out" / "fuzz"
Send = Callable[[Wire], tuple[int, str, bytes]]


class Tally:
    """Examples run, their outcomes, and the failures (kept, not raised)."""

    def __init__(self, gunicorn: bool) -> None:
        self.gunicorn = gunicorn
        self.examples = 0
        self.outcomes: Counter[str] = Counter()
        self.failures: list[str] = []

    def judge(self, answer: tuple[int, str, bytes], wire: Wire, corpus: Corpus) -> None:
        self.examples += 1
        status, content_type, body = answer
        try:
            refusal = gunicorn_refusal(wire) if self.gunicorn else None
            if refusal:
                assert status == refusal, f"HTTP {status} for {wire!r}, not {refusal}"
                self.outcomes[f"HTTP {status} from gunicorn"] += 1
            else:
                self.outcomes[check(status, content_type, body, wire, corpus)] += 1
        except AssertionError as failure:
            self.failures.append(str(failure).splitlines()[0][:300])


def fuzz(send: Send, corpus: Corpus, examples: int, **spelling: bool) -> tuple[Tally, float]:
    tally = Tally(gunicorn=bool(spelling))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run_one(data: st.DataObject) -> None:
        wire = data.draw(wires(corpus, **spelling))
        tally.judge(send(wire), wire, corpus)

    started = time.perf_counter()
    run_one()
    return tally, time.perf_counter() - started


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench fuzz")
    parser.add_argument("--examples", type=int, default=10_000, help="in process")
    parser.add_argument("--socket", type=int, default=1_000, help="over loopback to gunicorn")
    return parser.parse_args(argv)


def run(argv: list[str]) -> Report:
    args = _args(argv)
    shutil.rmtree(OUT, ignore_errors=True)
    site = make_site(OUT / "www", pages=30, seed=5)
    client = fuzz_app(site, OUT / "app.sqlite").test_client()
    corpus = corpus_of(client)
    local, local_s = fuzz(lambda wire: send_app(client, wire), corpus, args.examples)
    argv_ = serve_argv(site.root, OUT / "gunicorn.sqlite")
    with start_command(argv_, env=GUNICORN_ENV, ready_path="/oai?verb=Identify") as server:
        wait_analysed(OUT / "gunicorn.sqlite")  # the plugins' restamps done before the fuzz
        remote_corpus = socket_corpus(server)
        remote, remote_s = fuzz(
            lambda wire: send_socket(server.host, server.port, wire),
            remote_corpus,
            args.socket,
            wire_safe=True,
        )
    report = Report("fuzz", ["run", "examples", "seconds", "examples/s", "failures"])
    for name, tally, seconds in (
        ("in process (Flask test client)", local, local_s),
        ("loopback socket (gunicorn, 1 worker)", remote, remote_s),
    ):
        rate = tally.examples / seconds if seconds else 0.0
        report.rows.append([name, tally.examples, seconds, rate, len(tally.failures)])
        report.notes.append(f"{name}: outcomes {dict(tally.outcomes.most_common())}")
        report.notes += [f"failure: {f}" for f in tally.failures[:5]]
    report.figures.update(
        examples=local.examples,
        seconds=round(local_s, 1),
        failures=len(local.failures),
        socket_examples=remote.examples,
        socket_seconds=round(remote_s, 1),
        socket_failures=len(remote.failures),
    )
    return report
