"""Checks on an Office Open XML (DOCX/XLSX/PPTX) file before a parser opens it.

Password-protected OOXML is not a ZIP at all but an OLE container holding an `EncryptedPackage`
stream; a ZIP whose members unpack to far more than the upload is a decompression bomb.
"""

import io
import zipfile

from cortex_extractors.errors import CorruptFile, EncryptedFile, TooLarge, UnsupportedMediaType
from cortex_extractors.limits import MAX_ARCHIVE_MEMBERS, MAX_UNPACKED_BYTES, check_count
from cortex_extractors.media_types import OLE_MAGIC, ZIP_MAGIC

ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def check_package(data: bytes, kind: str, *, max_part_bytes: int = MAX_UNPACKED_BYTES) -> None:
    """Refuse what `kind` (DOCX, XLSX, PPTX) parsers should not open: encrypted, legacy, not ZIP, or a bomb."""
    if data.startswith(OLE_MAGIC):
        if ENCRYPTED_PACKAGE in data:
            raise EncryptedFile(f"the {kind} file needs a password to open")
        raise UnsupportedMediaType(f"a legacy binary Office file, not {kind}: save it as {kind} and upload again")
    if not data.startswith(ZIP_MAGIC):
        raise CorruptFile(f"not a valid {kind} file: it is not a ZIP package")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptFile(f"not a valid {kind} file: damaged ZIP package ({exc})") from exc
    check_count("parts in its package", len(members), MAX_ARCHIVE_MEMBERS)
    if sum(member.file_size for member in members) > MAX_UNPACKED_BYTES:
        raise TooLarge(f"the {kind} package unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB")
    if any(member.file_size > max_part_bytes for member in members if member.filename.endswith(".xml")):
        raise TooLarge(f"the {kind} file has a part larger than {max_part_bytes // 2**20} MiB")
