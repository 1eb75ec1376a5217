"""The Flask blueprint of the served ResourceSync documents (names: :mod:`.publication`).

Each request first brings the ledger up to date with the index, so a document never lags the
OAI-PMH view of the same files. A site file with one of these names is shadowed by the
document.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app

from server_module.resourcesync.publication import NAMES
from server_module.resourcesync.source import Source

XML = "application/xml"


def resourcesync_blueprint() -> Blueprint:
    bp = Blueprint("resourcesync", __name__)
    for name in NAMES:
        endpoint = name.replace(".", "_").replace("/", "_")
        bp.add_url_rule("/" + name, endpoint, document, defaults={"name": name})
    bp.add_url_rule("/resourcelist-<part>.xml", "resourcelist-part", resource_part)
    bp.add_url_rule("/changelist-<part>.xml", "changelist-part", change_part)
    return bp


def document(name: str) -> Response:
    source: Source = current_app.extensions["resourcesync_source"]
    source.sync()
    with source.publication() as publication:
        body = publication.document(name)
    if body is None:
        return Response("not found\n", status=404, content_type="text/plain")
    return Response(body, content_type=XML)


def resource_part(part: str) -> Response:
    return document(f"resourcelist-{part}.xml")


def change_part(part: str) -> Response:
    return document(f"changelist-{part}.xml")
