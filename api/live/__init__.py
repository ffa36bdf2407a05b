"""Live events: the per-process broadcaster that feeds every stream (broadcast), a
submission's server-sent events (events), the clarifications and announcements feed
(message_feed) and how many streams the open-files limit lets a process hold (fdlimit).
The news they follow (api.news) sits in the lowest layer: the workers, the actions and
the read caches publish or hear it, and none of them imports live."""
