"""Records mode: ingest from any OAI-PMH repository, whose identifiers are not URLs.

Each item's records (one per metadataPrefix) are archived with their list pages, its linked
resources (landing pages and files) are fetched through the one HTTP seam, and one MPEG-21
DIDL preservation record describes the item: :mod:`harvester.records.ingest` runs it.
"""
