"""Commands registered on the agentmem group (placeholder until this area lands)."""
