# agentmem hook for Cursor, Claude Code and Codex CLI (Windows PowerShell 5.1 / pwsh 7); one script
# for both events.
#
#   Cursor (hooks.json) runs commands through PowerShell on Windows:
#     "command": "powershell -NoProfile -ExecutionPolicy Bypass -File \"C:\\Users\\me\\agentmem hooks\\agentmem-hook.ps1\" start cursor"
#   First argument: start | end. Second: cursor | claude | codex.
#   Further arguments (e.g. -- --vault "G:\我的雲端硬碟\Obsidian\Agent") are passed to agentmem.
#
#   start -> `agentmem hook <agent>-session-start`: registers the chat, answers with its Session ID
#   end   -> `agentmem hook <agent>-session-end` (Codex: codex-stop): queues the transcript
#
# The agent's JSON is read from stdin as raw bytes and written as raw bytes to agentmem; its answer
# (ASCII JSON) is copied back byte for byte. No console code page ever touches the payload, so CJK
# and spaces in paths survive. If agentmem cannot be started (or the event is unknown) the answer is
# {}: no Session ID, nothing queued, so a broken install never breaks the chat.
# Set $env:AGENTMEM_BIN to pin the program (agentmem.exe, or python.exe to use -m agentmem_vault).
param(
    [string]$HookKind = "",
    [string]$Agent = "cursor",
    [Parameter(ValueFromRemainingArguments = $true)][string[]]$Rest = @()
)
$ErrorActionPreference = "Stop"

function Quote-Arg([string]$a) {
    # CreateProcess command-line quoting (the rules the C runtime and Python use to split argv).
    if ($a -ne "" -and $a -notmatch '[\s"]') { return $a }
    $q = $a -replace '(\\*)"', '$1$1\"'
    $q = $q -replace '(\\+)$', '$1$1'
    return '"' + $q + '"'
}

function Write-Answer([byte[]]$bytes) {
    $out = [Console]::OpenStandardOutput()
    $out.Write($bytes, 0, $bytes.Length)
    $out.Flush()
}

try {
    if (@("cursor", "claude", "codex") -notcontains $Agent) { $Agent = "cursor" }
    if (@("start", "session-start") -contains $HookKind) { $hook = "$Agent-session-start" }
    elseif (@("end", "session-end", "stop") -notcontains $HookKind) { throw "first argument must be start or end" }
    elseif ($Agent -eq "codex") { $hook = "codex-stop" }
    else { $hook = "$Agent-session-end" }

    # stdin -> bytes, waiting at most 3 s (some agents keep the pipe open).
    $stdin = [Console]::OpenStandardInput()
    $payload = New-Object System.IO.MemoryStream
    $copy = $stdin.CopyToAsync($payload)
    [void]$copy.Wait(3000)
    $bytes = $payload.ToArray()

    $exe = $null
    $prefix = @()
    if ($env:AGENTMEM_BIN) {
        $exe = $env:AGENTMEM_BIN
        if ([IO.Path]::GetFileNameWithoutExtension($exe) -like "python*") { $prefix = @("-m", "agentmem_vault") }
    } else {
        $cmd = Get-Command agentmem -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
        if ($cmd) { $exe = $cmd.Source }
        else {
            foreach ($name in @("py", "python", "python3")) {
                $cmd = Get-Command $name -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
                if ($cmd) { $exe = $cmd.Source; $prefix = @("-m", "agentmem_vault"); break }
            }
        }
    }
    if (-not $exe) { throw "agentmem not found" }

    $argv = @($prefix) + @("hook", $hook) + @($Rest | Where-Object { $_ -ne "--" })
    $psi = New-Object System.Diagnostics.ProcessStartInfo
    $psi.FileName = $exe
    $psi.Arguments = ($argv | ForEach-Object { Quote-Arg $_ }) -join " "
    $psi.UseShellExecute = $false
    $psi.RedirectStandardInput = $true
    $psi.RedirectStandardOutput = $true
    $psi.CreateNoWindow = $true
    $proc = [System.Diagnostics.Process]::Start($psi)
    $proc.StandardInput.BaseStream.Write($bytes, 0, $bytes.Length)
    $proc.StandardInput.Close()
    $answer = New-Object System.IO.MemoryStream
    $proc.StandardOutput.BaseStream.CopyTo($answer)
    $proc.WaitForExit()
    if ($answer.Length -gt 0) { Write-Answer $answer.ToArray() }
    else { Write-Answer ([Text.Encoding]::ASCII.GetBytes("{}`n")) }
} catch {
    Write-Answer ([Text.Encoding]::ASCII.GetBytes("{}`n"))
}
exit 0
