"""daemon install|uninstall|status: the generated service definitions, and install/uninstall driven
through an injected runner (no test ever registers a real service)."""

from __future__ import annotations

import json
import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentmem_vault.vault import Vault
from agentmem_vault.integrations import user_service as us
from agentmem_vault.ops.board import init_vault

NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}


class FakeRunner:
    """Records every service-manager command; answers from a table (default: success)."""

    def __init__(self, answers: dict[str, tuple[int, str]] | None = None):
        self.calls: list[list[str]] = []
        self.answers = answers or {}

    def __call__(self, argv: list[str]) -> tuple[int, str]:
        self.calls.append(argv)
        for key, ans in self.answers.items():
            if key in " ".join(argv):
                return ans
        return 0, ""


@pytest.fixture(autouse=True)
def _no_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)


@pytest.fixture
def odd_vault(tmp_path: Path) -> Vault:
    """A vault path with everything a service file must quote: CJK, spaces, %, $, quotes, &, <."""
    v = Vault(tmp_path / "雲端 硬碟" / "100% $HOME 'O\"Neil' & <x>")
    v.root.mkdir(parents=True)
    init_vault(v)
    return v


def _agentmem() -> str:
    cand = Path(sys.executable).parent / "agentmem"
    return str(cand if cand.exists() else sys.executable)


def test_systemd_unit_content(odd_vault: Vault) -> None:
    argv = ["/opt/my env/bin/agentmem"]
    sd = us.service_definition(odd_vault, platform="linux", argv=argv, home=Path("/home/me"))
    assert sd.kind == "systemd" and sd.name == f"agentmem-daemon-{odd_vault.key[:8]}.service"
    assert sd.path == Path("/home/me/.config/systemd/user") / sd.name
    lines = sd.text.splitlines()
    assert "Restart=on-failure" in lines and "WantedBy=default.target" in lines and "Type=simple" in lines
    exec_start = next(ln for ln in lines if ln.startswith("ExecStart="))
    root = str(odd_vault.root).replace("%", "%%").replace("$", "$$").replace("\\", "\\\\").replace('"', '\\"')
    assert exec_start == f'ExecStart="/opt/my env/bin/agentmem" --vault "{root}" daemon run'
    assert "%%" in next(ln for ln in lines if ln.startswith("Description="))
    assert sd.start[-1] == ["systemctl", "--user", "enable", "--now", sd.name]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_accepts_the_unit(odd_vault: Vault, tmp_path: Path) -> None:
    sd = us.service_definition(odd_vault, platform="linux", argv=[_agentmem()], home=tmp_path)
    unit = tmp_path / "units" / sd.name
    unit.parent.mkdir()
    unit.write_bytes(sd.content)
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], check=False, capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0 and "Failed to initialize manager" in proc.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    assert sd.name not in proc.stderr, proc.stderr  # no warnings about our unit


def test_launchd_plist_content(odd_vault: Vault) -> None:
    argv = ["/Users/me/.local/bin/agentmem"]
    sd = us.service_definition(odd_vault, platform="darwin", argv=argv, home=Path("/Users/me"))
    assert sd.kind == "launchd" and sd.path == Path("/Users/me/Library/LaunchAgents") / f"{sd.name}.plist"
    plist = plistlib.loads(sd.content)
    assert plist["Label"] == sd.name == f"com.agentmem.daemon.{odd_vault.key[:8]}"
    assert plist["ProgramArguments"] == [*argv, "--vault", str(odd_vault.root), "daemon", "run"]
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["StandardErrorPath"].startswith("/Users/me/Library/Logs/agentmem/")
    assert sd.start[0][:2] == ["launchctl", "bootstrap"] and sd.start[0][-1] == str(sd.path)


def test_windows_task_xml_content(odd_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USERNAME", "me")
    monkeypatch.setenv("USERDOMAIN", "DESKTOP-1")
    argv = [r"C:\Users\me\my venv\Scripts\agentmem.exe"]
    sd = us.service_definition(odd_vault, platform="win32", argv=argv)
    assert sd.kind == "schtasks" and sd.name == f"\\agentmem\\daemon-{odd_vault.key[:8]}"
    assert sd.content.startswith(b"\xff\xfe")  # UTF-16 with BOM, as Task Scheduler expects
    root = ET.fromstring(sd.content.decode("utf-16").split("?>", 1)[1])
    assert root.find("t:Triggers/t:LogonTrigger/t:UserId", NS).text == "DESKTOP-1\\me"
    assert root.find("t:Principals/t:Principal/t:LogonType", NS).text == "InteractiveToken"
    assert root.find("t:Settings/t:RestartOnFailure/t:Count", NS).text == "999"
    assert root.find("t:Settings/t:ExecutionTimeLimit", NS).text == "PT0S"
    exec_ = root.find("t:Actions/t:Exec", NS)
    assert exec_.find("t:Command", NS).text == argv[0]
    assert exec_.find("t:Arguments", NS).text == subprocess.list2cmdline(
        ["--vault", str(odd_vault.root), "daemon", "run"]
    )
    assert sd.start[0][:2] == ["schtasks", "/Create"] and "/XML" in sd.start[0]


def test_install_is_idempotent_and_uninstall_removes(vault: Vault, tmp_path: Path) -> None:
    run = FakeRunner()
    res = us.install(vault, runner=run, platform="linux", argv=["/bin/agentmem"], home=tmp_path)
    path = Path(res["file"])
    assert res["action"] == "create" and res["started"] and path.read_bytes().startswith(b"# Written by")
    assert run.calls == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", res["name"]],
    ]
    st = us.service_status(
        vault,
        runner=FakeRunner({"is-enabled": (0, "enabled"), "is-active": (0, "active")}),
        platform="linux",
        home=tmp_path,
    )
    assert st == {
        "installed": True,
        "kind": "systemd",
        "name": res["name"],
        "file": str(path),
        "state": "enabled, active",
    }
    before = path.stat().st_mtime_ns
    run2 = FakeRunner()
    again = us.install(vault, runner=run2, platform="linux", argv=["/bin/agentmem"], home=tmp_path)
    assert again["action"] == "unchanged" and path.stat().st_mtime_ns == before
    assert ["systemctl", "--user", "restart", res["name"]] not in run2.calls
    moved = us.install(vault, runner=(run3 := FakeRunner()), platform="linux", argv=["/new/agentmem"], home=tmp_path)
    assert moved["action"] == "update" and run3.calls[-1] == ["systemctl", "--user", "restart", res["name"]]
    run4 = FakeRunner()
    out = us.uninstall(vault, runner=run4, platform="linux", home=tmp_path)
    assert out["removed"] and not path.exists()
    assert run4.calls == [
        ["systemctl", "--user", "disable", "--now", res["name"]],
        ["systemctl", "--user", "daemon-reload"],
    ]
    assert us.service_status(vault, runner=FakeRunner(), platform="linux", home=tmp_path)["installed"] is False
    assert us.uninstall(vault, runner=FakeRunner(), platform="linux", home=tmp_path)["removed"] is False


def test_dry_run_writes_and_runs_nothing(vault: Vault, tmp_path: Path) -> None:
    run = FakeRunner()
    res = us.install(vault, dry_run=True, runner=run, platform="darwin", argv=["/bin/agentmem"], home=tmp_path)
    assert res["dry_run"] and "<key>KeepAlive</key>" in res["definition"] and run.calls == []
    assert not Path(res["file"]).exists()


def test_unreachable_service_manager_writes_the_file_and_says_how_to_start(vault: Vault, tmp_path: Path) -> None:
    run = FakeRunner({"daemon-reload": (1, "Failed to connect to bus: No medium found")})
    res = us.install(vault, runner=run, platform="linux", argv=["/bin/agentmem"], home=tmp_path)
    assert not res["started"] and Path(res["file"]).is_file()
    assert "No medium found" in res["note"] and "systemctl --user enable --now" in res["note"]
    st = us.service_status(
        vault, runner=FakeRunner({"systemctl": (1, "Failed to connect to bus")}), platform="linux", home=tmp_path
    )
    assert st["state"].startswith("state unknown")


def test_windows_falls_back_to_a_startup_entry(vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    run = FakeRunner({"/Create": (1, "ERROR: Access is denied.")})
    res = us.install(vault, runner=run, platform="win32", argv=[r"C:\a\agentmem.exe"])
    assert res["kind"] == "startup" and "Access is denied" in res["note"]
    startup = Path(res["file"])
    assert startup.parent == tmp_path / "Roaming" / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Startup"
    assert "daemon run" in startup.read_text(encoding="utf-8")
    assert us.service_status(vault, runner=FakeRunner(), platform="win32")["kind"] == "startup"
    out = us.uninstall(vault, runner=FakeRunner(), platform="win32")
    assert out["kind"] == "startup" and not startup.exists()


def test_install_needs_an_initialised_vault(tmp_path: Path) -> None:
    from agentmem_vault.errors import AgentmemError

    with pytest.raises(AgentmemError, match="agentmem init --vault"):
        us.install(Vault(tmp_path), runner=FakeRunner(), platform="linux", home=tmp_path)


def test_cli_dry_run_and_status(cli, vault: Vault) -> None:
    r = cli("daemon", "install", "--dry-run", vault=vault)
    assert r.returncode == 0, r.stderr
    if sys.platform.startswith("linux"):
        assert "Restart=on-failure" in r.stdout and "systemctl --user enable --now" in r.stdout
    assert not list(Path.home().rglob("agentmem-daemon-*"))
    r = cli("daemon", "status", "--json", vault=vault)
    assert json.loads(r.stdout)["service"]["installed"] is False
    r = cli("daemon", "status", vault=vault)
    assert "service: not installed" in r.stdout


def test_install_answers_with_its_keys_in_their_documented_order(vault: Vault, tmp_path: Path) -> None:
    # `agentmem daemon install --json` prints this dict as it is: scripts and people reading it see
    # the service, what is done to its file, then the definition and the commands.
    keys = ["kind", "name", "file", "action", "dry_run", "definition", "commands", "started", "note"]
    run = FakeRunner()
    res = us.install(vault, dry_run=True, runner=run, platform="linux", argv=["/bin/agentmem"], home=tmp_path)
    assert list(res) == keys
    res = us.install(vault, runner=run, platform="linux", argv=["/bin/agentmem"], home=tmp_path)
    assert list(res) == keys
