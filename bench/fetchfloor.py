"""``python -m bench.fetchfloor URLS [--connections N] [--extract]``: a crawl's lower bound.

Not a benchmark of its own (``python -m bench`` skips it): ``bench crawl`` runs it as a child
process beside ours and wget, so its wall time counts from interpreter start to exit, as
theirs do. It GETs every URL of the file ``URLS`` (one per line, in the order given) with
aiohttp over ``--connections`` keep-alive connections and reads each body whole, then drops
it. No WARC, no state, no frontier. With ``--extract`` it also runs the crawler's own link
extractor (:func:`harvester.crawl.links.extract_links`) over each body, as any link crawler
must. It prints one JSON line: the pages answered 200 and the links extracted.

What this bounds: any crawler built on aiohttp that has to fetch these pages (and, with
``--extract``, find their links) in one process cannot go faster than this on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import aiohttp

from harvester.crawl.links import extract_links


async def fetch_all(urls: list[str], connections: int, extract: bool) -> tuple[int, int]:
    """(pages answered 200, links extracted) for ``urls``, ``connections`` at a time."""
    todo = iter(urls)
    pages = links = 0
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def worker() -> None:
            nonlocal pages, links
            for url in todo:  # the workers share one iterator: each URL is taken once
                async with session.get(url, allow_redirects=False) as response:
                    body = await response.read()
                    if response.status != 200:
                        continue
                    pages += 1
                    if extract:
                        links += len(extract_links(body, url, response.content_type))

        await asyncio.gather(*(worker() for _ in range(connections)))
    return pages, links


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fetchfloor", description=__doc__)
    parser.add_argument("urls", type=Path, help="a file of URLs, one per line")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--extract", action="store_true", help="also extract each page's links")
    args = parser.parse_args(argv)
    urls = args.urls.read_text(encoding="utf-8").split()
    pages, links = asyncio.run(fetch_all(urls, args.connections, args.extract))
    print(json.dumps({"urls": len(urls), "pages": pages, "links": links}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
