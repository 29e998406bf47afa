"""A PDF built to be slow to read, as a QA pass found one: small on disk, minutes of a parser's CPU."""

import zlib


def slow_pdf(pages: int = 4) -> bytes:
    """~6 KB of PDF whose pages share one 2 MiB content stream of empty text runs: reading each page parses
    all of it (~2.5 CPU-s a page here; QA's 20 pages took 52 s)."""
    stream = zlib.compress(b"BT /F1 1 Tf () Tj ET\n" * (2**21 // 21), 9)
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources " + font + b" >>"
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages)).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ] + [page] * pages
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
