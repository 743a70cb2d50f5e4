"""Long-term memory: turn finished sessions and agent transcripts into durable knowledge notes.

Rooms: ``sources`` (read a session/transcript into turns), ``noise`` and ``chunking`` (prepare text
for a model), ``schema`` (the Memory Object), ``llm`` (the Anthropic client behind a small
interface), ``offline`` (rule-based extractor used without an API key), ``filters`` and ``dedupe``
(quality layers), ``curate`` (create / update / ignore / deprecate against existing notes),
``notes`` (parse/render/write ``memory/long-term/*.md``), ``extract`` (the pipeline, incremental
state) and ``evaluate`` (precision/recall/F1 on labelled fixtures).
"""
