"""Problems from files PyTorch writes: CUDA memory snapshots and profiler Chrome traces.

Framework-free: the files are read as data (a restricted unpickler, plain JSON), never
with PyTorch, so organizers can import them on the judge's machines."""
