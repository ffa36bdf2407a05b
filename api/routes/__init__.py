"""The HTTP surface: the routers of the REST API under /api/v1 (the contestants' (v1),
the views beyond the board (views), the organizers' (admin, contests), accounts,
final judging (finals) and tokens), the OpenAPI page at /docs (docs) and the guides at
/guide (guide), and the hottest reads answered before FastAPI sees them (hot_reads).
Only api.app mounts them; the web pages (api.pages) reuse some of their checks. Nothing
below this layer imports it."""
