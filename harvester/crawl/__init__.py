"""The link-crawling fallback: URLs, links, the seen-URL test, the frontier and its scheduling."""
