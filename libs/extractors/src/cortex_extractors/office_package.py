"""Checks on an Office Open XML (DOCX/XLSX/PPTX) file before a parser opens it.

Password-protected OOXML is not a ZIP at all but an OLE container holding an `EncryptedPackage`
stream; a ZIP whose members unpack to far more than the upload is a decompression bomb.
"""

import io
import zipfile
import zlib

from cortex_extractors.errors import CorruptFile, EncryptedFile, TooLarge, UnsupportedMediaType
from cortex_extractors.limits import MAX_ARCHIVE_MEMBERS, MAX_UNPACKED_BYTES, check_count
from cortex_extractors.media_types import OLE_MAGIC, ZIP_MAGIC

ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")
XML_SNIFF_BYTES = 1024
BOMS_AND_BLANKS = b"\xef\xbb\xbf\xfe\xff\x00 \t\r\n"  # UTF-8/16/32 byte order marks and zero bytes, blanks


def _parsed_as_xml(package: zipfile.ZipFile, member: zipfile.ZipInfo, kind: str) -> bool:
    """Whether a part reads as XML, whatever its name: readers find parts by content type and relationship."""
    if member.filename.endswith((".xml", ".rels")):
        return True
    try:
        with package.open(member) as part:
            head = part.read(XML_SNIFF_BYTES).lstrip(BOMS_AND_BLANKS)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError) as exc:
        raise CorruptFile(f"not a valid {kind} file: its part {member.filename} is damaged ({exc})") from exc
    return not head or head.startswith(b"<")


def check_package(data: bytes, kind: str, *, max_part_bytes: int = MAX_UNPACKED_BYTES) -> None:
    """Refuse what `kind` (DOCX, XLSX, PPTX) parsers should not open: encrypted, legacy, not ZIP, or a bomb."""
    if data.startswith(OLE_MAGIC):
        if ENCRYPTED_PACKAGE in data:
            raise EncryptedFile(f"the {kind} file needs a password to open")
        raise UnsupportedMediaType(f"a legacy binary Office file, not {kind}: save it as {kind} and upload again")
    if not data.startswith(ZIP_MAGIC):
        raise CorruptFile(f"not a valid {kind} file: it is not a ZIP package")
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptFile(f"not a valid {kind} file: damaged ZIP package ({exc})") from exc
    with package:
        members = package.infolist()
        check_count("parts in its package", len(members), MAX_ARCHIVE_MEMBERS)
        if sum(member.file_size for member in members) > MAX_UNPACKED_BYTES:
            raise TooLarge(f"the {kind} package unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB")
        big = (member for member in members if member.file_size > max_part_bytes)
        if any(_parsed_as_xml(package, member, kind) for member in big):
            raise TooLarge(f"the {kind} file has a part larger than {max_part_bytes // 2**20} MiB")
