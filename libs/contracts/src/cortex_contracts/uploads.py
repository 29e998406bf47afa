"""`kb.<orgId>.upload.created`: a file was uploaded; its bytes are in the Object Store."""

from uuid import UUID, uuid5

from pydantic import Field, StrictInt

from cortex_contracts.base import BIGINT_MAX, NO_NUL, WireModel
from cortex_contracts.documents import DocClass, ObjectRef, Tag

TYPE_UPLOAD_CREATED = "kb.upload.created"
UPLOAD_DOCUMENTS = UUID("9d3c1f52-7a4e-4b8e-a1d6-3f0e2c5b7a90")


def upload_document_id(upload_id: UUID) -> UUID:
    """The document the indexer makes from an upload: the same id every time, on every copy of the indexer."""
    return uuid5(UPLOAD_DOCUMENTS, str(upload_id))


class UploadCreated(WireModel):
    upload_id: UUID = Field(description="The upload.")
    organization_id: UUID = Field(description="Owning organization.")
    work_id: UUID | None = Field(default=None, description="Work it was uploaded to; absent = org-wide.")
    filename: str = Field(min_length=1, max_length=500, pattern=NO_NUL, description="Original file name.")
    media_type: str = Field(min_length=1, max_length=200, pattern=NO_NUL, description="e.g. `application/pdf`.")
    size_bytes: int = Field(ge=0, le=BIGINT_MAX, description="Size of the file.")
    object: ObjectRef | None = Field(default=None, description="Where the bytes are.")
    doc_class: DocClass = Field(
        default=None,
        description="Class of the document made from it; surrounding white space is dropped, a blank class is none.",
    )
    tags: list[Tag] = Field(default_factory=list, max_length=32, description="Tags of the document made from it.")
    version: StrictInt | None = Field(
        default=None,
        ge=0,
        le=BIGINT_MAX,
        description="Monotonic per upload id (a file uploaded again keeps its id); absent = the event time in µs.",
    )
