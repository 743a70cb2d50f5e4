# agentmem completion for PowerShell. Add to your profile:  agentmem completion powershell | Out-String | Invoke-Expression
Register-ArgumentCompleter -Native -CommandName %(prog_name)s -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)
    $line = $commandAst.ToString()
    $upTo = [Math]::Min($line.Length, [Math]::Max(0, $cursorPosition - $commandAst.Extent.StartOffset))
    $env:COMP_WORDS = $line.Substring(0, $upTo)
    $env:COMP_CWORD = $wordToComplete
    $env:%(complete_var)s = 'powershell_complete'
    try {
        %(prog_name)s | ForEach-Object {
            $type, $value, $help = $_ -split "`t", 3
            if ($type -eq 'plain' -and $value) {
                $tip = if ($help) { $help } else { $value }
                [System.Management.Automation.CompletionResult]::new($value, $value, 'ParameterValue', $tip)
            }
        }
    } finally {
        Remove-Item Env:COMP_WORDS, Env:COMP_CWORD, Env:%(complete_var)s -ErrorAction SilentlyContinue
    }
}
