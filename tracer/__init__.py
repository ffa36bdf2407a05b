"""`memorace trace`: record the tensors of one model step with PyTorch (the `trace` extra).

Only this package imports torch; nothing in judge/, api/ or worker/ imports it. The
traces it writes (format: TRACE_FORMAT.md) are turned into problem cases without
PyTorch: by the shipped problems' generators (problems/_lib/torchtrace.py) and by
`memorace problem import-torch` (judge/torch_import/memtrace.py). Its argument checks
need no torch either (configs.py holds the models' shapes)."""
