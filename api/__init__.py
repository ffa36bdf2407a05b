"""The service: the FastAPI app (app) and what it is made of, in layers.

At the bottom, what everything may use: the database (db), the blob store (blobs),
settings, service_urls, errors and numbers. Above them the concerns: contest actions
(actions), reads and their caches (reads), live events (live), access control and
limits (access). At the top the HTTP surface (routes) and the web pages (pages), which
only the app mounts. Beside them: bootstrap, logs, metrics, the queue producer (queue,
filebroker), worker presence (workers) and the collector's freeze (gc_freeze).
tests/test_import_boundary.py checks these layers, and that the workers use only the
parts of this package meant for them."""
