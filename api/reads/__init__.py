"""Reads and their caches: the leaderboard, each problem's score history, the per-case
comparison, the exports and what a viewer may see of hidden cases (hidden); the
per-process micro-cache of the hot reads (readcache), the one computation a herd of
misses shares (single_flight) and what a transaction wrote, as far as those caches
care (invalidation)."""
