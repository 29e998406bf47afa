"""Why a file yields no text. Each carries a reason a person can act on; `str(error)` is that reason."""


class ExtractionError(Exception):
    """The file cannot be turned into text. Retrying will not help: the bytes are what they are."""

    kind = "unreadable"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def summary(self) -> str:
        """`kind: reason`, e.g. `encrypted: the PDF needs a password to open`."""
        return f"{self.kind}: {self.reason}"


class UnsupportedMediaType(ExtractionError):
    kind = "unsupported"


class CorruptFile(ExtractionError):
    kind = "corrupt"


class EmptyFile(ExtractionError):
    kind = "empty"

    def __init__(self, reason: str = "the file holds no text") -> None:
        super().__init__(reason)


class ExtractorFailed(ExtractionError):
    """An extractor plugin raised something other than an `ExtractionError`: the plugin may be at fault, not
    the file (the built-in parsers' exceptions on malformed input are the file's: `CorruptFile`)."""

    kind = "extractor failed"


class EncryptedFile(ExtractionError):
    kind = "encrypted"


class TooLarge(ExtractionError):
    """Over one of the caps that guard against huge inputs and decompression bombs."""

    kind = "too large"
