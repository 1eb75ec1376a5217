"""A folder of real files in many formats, made here (no fixtures carried): a PDF, a JPEG with
EXIF camera fields, a PNG, a GIF, a ZIP, a WAV, an HTML page, a CSV, a PNG named ``.pdf``, an
empty file and a malformed PDF; with the PRONOM identifier each one's content has."""

from __future__ import annotations

import io
import wave
import zipfile
from pathlib import Path

from PIL import Image

CAMERA_MAKE, CAMERA_MODEL = "Nikon", "COOLPIX P900"


def pdf() -> bytes:
    """A one-page PDF 1.4 with a correct cross-reference table."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>",
        b"<< /Title (Forensic test) /Producer (coop-archive tests) >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        % (len(objects) + 1, xref)
    )
    return out.getvalue()


def jpeg() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = CAMERA_MAKE
    exif[0x0110] = CAMERA_MODEL
    out = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(out, "JPEG", exif=exif.tobytes())
    return out.getvalue()


def image(kind: str) -> bytes:
    out = io.BytesIO()
    Image.new("P" if kind == "GIF" else "RGB", (8, 8)).save(out, kind)
    return out.getvalue()


def wav(frames: bytes = b"\x00\x01" * 800) -> bytes:
    """A WAVE file of ``frames``: PCM, 8 kHz, 16-bit, mono."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(frames)
    return out.getvalue()


def zipped() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("readme.txt", "hello " * 50)
    return out.getvalue()


HTML = b"<!DOCTYPE html>\n<html><head><title>T</title></head><body><p>x</p></body></html>\n"


# name: (bytes, the PUID its content has, or None where PRONOM has none for it)
def corpus() -> dict[str, tuple[bytes, str | None]]:
    return {
        "doc.pdf": (pdf(), "fmt/18"),  # PDF 1.4
        "photo.jpg": (jpeg(), "fmt/43"),  # JFIF 1.01 (Pillow writes JFIF, then Exif)
        "image.png": (image("PNG"), "fmt/11"),  # PNG 1.0
        "anim.gif": (image("GIF"), "fmt/3"),  # GIF 87a
        "archive.zip": (zipped(), "x-fmt/263"),  # ZIP
        "sound.wav": (wav(), "fmt/141"),  # WAVE PCM
        "page.html": (HTML, "fmt/471"),  # HTML 5
        "data.csv": (b"id,name\n1,alpha\n2,beta\n", "x-fmt/18"),  # CSV: by its extension
        "lies.pdf": (image("PNG"), "fmt/11"),  # a PNG whose name says PDF
        "empty.txt": (b"", None),
        "broken.pdf": (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog\n", None),  # no trailer, no EOF
    }


def make_corpus(root: Path) -> dict[str, str | None]:
    """Write the corpus into ``root``; the expected PUID by name."""
    root.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name, (data, puid) in corpus().items():
        (root / name).write_bytes(data)
        expected[name] = puid
    return expected
