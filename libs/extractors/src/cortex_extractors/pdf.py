"""PDF: the text of each page, in order. A PDF that needs a password is reported as encrypted.

PDFs encrypted with an empty user password (owner restrictions only) open for anyone, so they are read.
pypdf's own caps on stream sizes guard against decompression bombs.
"""

import io

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, LimitReachedError

from cortex_extractors.errors import EncryptedFile, TooLarge
from cortex_extractors.extracted import Extracted
from cortex_extractors.limits import MAX_PAGES, BoundedText, check_count, short_title
from cortex_extractors.media_types import PDF

# pypdf's encryption code: it raises NotImplementedError for a scheme it lacks (a security handler other
# than Standard, an unknown algorithm) and DependencyError for one it needs a library for.
ENCRYPTION_MODULES = ("pypdf._encryption", "pypdf._crypt_providers")


def _raised_by_encryption(exc: BaseException) -> bool:
    """Whether `exc` was raised in pypdf's encryption code: while opening the file (`PdfReader` reads the
    encryption dictionary) or decrypting an object later. Elsewhere the same errors mean something else,
    such as a stream filter pypdf lacks."""
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame is not None and str(frame.tb_frame.f_globals.get("__name__", "")).startswith(ENCRYPTION_MODULES)


def _open(reader: PdfReader) -> None:
    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise EncryptedFile("the PDF needs a password to open")


class PdfExtractor:
    media_types = frozenset({PDF})

    def extract(self, data: bytes, filename: str | None) -> Extracted:
        try:
            reader = PdfReader(io.BytesIO(data))
            _open(reader)
            check_count("pages", len(reader.pages), MAX_PAGES)
            out = BoundedText()
            for page in reader.pages:
                out.add(page.extract_text())
            title = reader.metadata.title if reader.metadata is not None else None
        except LimitReachedError as exc:
            raise TooLarge(f"the PDF is over a safety limit ({exc})") from exc
        except (DependencyError, NotImplementedError) as exc:
            if _raised_by_encryption(exc):
                raise EncryptedFile(f"the PDF is encrypted with a scheme that cannot be opened here ({exc})") from exc
            raise
        return Extracted(title=short_title(title), text=out.text())


extractor = PdfExtractor()
