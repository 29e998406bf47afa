"""Text out of files, by media type: markdown, plain text, HTML, PDF, DOCX, XLSX, PPTX (plugins may add more)."""

from cortex_extractors.errors import CorruptFile, EncryptedFile, ExtractionError, TooLarge, UnsupportedMediaType
from cortex_extractors.extracted import Extracted, Extractor
from cortex_extractors.media_types import detect_media_type
from cortex_extractors.registry import extract, supported_media_types

__all__ = [
    "CorruptFile",
    "EncryptedFile",
    "Extracted",
    "ExtractionError",
    "Extractor",
    "TooLarge",
    "UnsupportedMediaType",
    "detect_media_type",
    "extract",
    "supported_media_types",
]
