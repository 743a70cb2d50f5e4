from agentmem_vault.entry import main

main()
