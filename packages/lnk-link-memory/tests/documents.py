"""Real PDF and Word files, written here byte by byte, and crafted ones meant to hurt a parser."""

from __future__ import annotations

import io
import zipfile
import zlib


def pdf(text: str, stream: bytes | None = None, filters: str = "") -> bytes:
    """A one-page PDF showing `text` (or carrying `stream` as its page's content)."""
    content = stream if stream is not None else f"BT /F1 18 Tf 72 700 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)}{filters} >>\nstream\n".encode() + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer << /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def pdf_bomb(inflated: int = 400 * 2**20) -> bytes:
    """A page whose content stream inflates from a few hundred KB to `inflated` bytes."""
    squeeze = zlib.compressobj(9)
    block = b" " * 2**20
    packed = b"".join(squeeze.compress(block) for _ in range(inflated // len(block))) + squeeze.flush()
    return pdf("", stream=packed, filters=" /Filter /FlateDecode")


def docx(text: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "word/document.xml",
            '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
            f"<w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>",
        )
    return out.getvalue()


def docx_bomb(inflated: int = 300 * 2**20) -> bytes:
    """A .docx whose document.xml unzips to `inflated` bytes."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("word/document.xml", "w", force_zip64=True) as member,
    ):
        block = b" " * 2**20
        for _ in range(inflated // len(block)):
            member.write(block)
    return out.getvalue()
