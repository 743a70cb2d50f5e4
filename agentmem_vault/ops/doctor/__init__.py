"""doctor: find what is wrong in memory/, and with ``--fix`` repair what is safe.

"Safe" means nothing is lost and no judgement is needed: a lost reference is re-recorded, a
reference to a session that no longer exists anywhere is dropped, a snapshot gets the row it lacks,
an exact duplicate row goes, ``closed``/``archived`` become ``stale``, a sync-conflict copy of the
index is folded back row by row (the rules of board/rules.py, as the daemon does).
Everything else — broken rows, differing duplicates, references in snapshots, conflict copies of
snapshots — is reported for a person with the command that resolves it. Files are backed up under
``memory/.agentmem/backups/`` first.

A process killed in the middle of an atomic write leaves its temporary file
(``.<name>.<pid>.<n>.agentmem-tmp``, see ``fs.TMP_SUFFIX``) next to the file it was writing.
Those are reported anywhere under ``memory/``; ``--fix`` removes the ones last modified more than
STALE_TEMP_SECONDS ago (a write takes milliseconds, so their writer is gone), under the vault lock.
Younger ones may belong to a write in progress and are only reported.

The parts: ``state`` reads the files (the only reader), ``checks`` is the pure diagnosis of the
board and snapshots (one small registered function per check), ``vault_checks`` the checks that
ask the vault itself, ``repairs`` applies the planned fixes through ``VaultWriter``, ``render``
writes the report for a person.
"""

from agentmem_vault.ops.doctor.render import render_report
from agentmem_vault.ops.doctor.repairs import repair
from agentmem_vault.ops.doctor.vault_checks import diagnose

__all__ = ["diagnose", "render_report", "repair"]
