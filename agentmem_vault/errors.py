"""One error hierarchy. Only the CLI turns these into messages and exit codes; the daemon logs
them; hooks swallow them (a hook must never break the chat)."""

from __future__ import annotations


class AgentmemError(Exception):
    """Base: an operation was refused or failed and nothing was half-written."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details or {}

    def to_dict(self) -> dict:
        """The error object every front end answers with (``--json``, MCP tool errors)."""
        return {"code": self.code, "message": self.message, **({"details": self.details} if self.details else {})}


class UsageError(AgentmemError):
    """Bad arguments (exit 2)."""

    code = "usage"
    exit_code = 2


class UnknownProject(UsageError):
    """``--project NAME`` (or an MCP call's ``project``) names no project this vault knows."""

    code = "unknown_project"


class VaultNotFound(AgentmemError):
    code = "vault_not_found"


class InvalidSessionId(AgentmemError):
    code = "invalid_session_id"


class SessionNotFound(AgentmemError):
    code = "session_not_found"


class MemoryNotFound(AgentmemError):
    """No long-term memory has that ID, title or file name."""

    code = "memory_not_found"


class IndexFormatError(AgentmemError):
    """memory/index.md cannot be safely changed (wrong header, broken rows, binary junk)."""

    code = "index_malformed"


class SnapshotFormatError(AgentmemError):
    code = "snapshot_malformed"


class NoteFormatError(AgentmemError):
    """A long-term note whose frontmatter cannot be read (docs/notes.md); readers skip and report
    it, writers refuse to rewrite it."""

    code = "note_malformed"


class SnapshotMergeError(AgentmemError):
    """A snapshot merge would lose an item of the existing snapshot; nothing is written."""

    code = "merge_verification_failed"


class Unmergeable(AgentmemError):
    """A three-way merge (git merge driver) cannot merge by key: a side does not parse, holds
    duplicate Session IDs, or would lose an item. The driver falls back to git's line merge."""

    code = "unmergeable"


class LockTimeout(AgentmemError):
    code = "lock_timeout"


class WriteFailed(AgentmemError):
    """A write could not be done or did not verify; the previous content is intact."""

    code = "write_failed"


class NotRegularFile(AgentmemError):
    """A FIFO, socket, device or folder where the vault keeps a file: never read or written
    (reading a FIFO would hang while holding the vault lock)."""

    code = "not_a_regular_file"


class FileTooLarge(AgentmemError):
    """A file far bigger than any the tool writes there: refused on its size, never read whole."""

    code = "file_too_large"


class OutsideVault(AgentmemError):
    """A symlink (or a linked folder) in the vault resolves outside it: never read or written."""

    code = "outside_vault"


class VerifyFailed(WriteFailed):
    code = "verify_failed"


class Refused(AgentmemError):
    """The operation is not allowed in the current state (e.g. archive of a referenced session)."""

    code = "refused"


class UnsafeValue(Refused):
    """A path or name that a file written for another program cannot hold safely (a line break, a
    control character, bytes that are not UTF-8): refused before anything is written."""

    code = "unsafe_value"


class ConfigError(AgentmemError):
    code = "config_error"


class IncompleteOperation(AgentmemError):
    """A multi-file operation failed part way and its transaction undid every write."""

    code = "incomplete"

    @classmethod
    def undone(cls, what: str, cause: AgentmemError) -> IncompleteOperation:
        # Worded by this type alone: a transaction that raised restored every file it had touched.
        return cls(
            f"{what} is incomplete and was undone (every file is as it was): {cause.message}",
            details={"cause": cause.code},
        )


class LLMError(AgentmemError):
    """A model call failed (after the SDK's retries) or its reply was unusable."""

    code = "llm_error"


class PayloadError(AgentmemError, ValueError):
    """A hook's stdin was empty or not a JSON object: the hook answers ``{}`` and logs why."""

    code = "bad_payload"


class MissingExtra(AgentmemError):
    """An optional extra (e.g. ``agentmem-vault[mcp]``) is needed for this command."""

    code = "missing_extra"
