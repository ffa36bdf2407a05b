"""Live events: the per-process broadcaster that feeds every stream (broadcast), a
submission's server-sent events (events), the clarifications and announcements feed
(message_feed), the news of a change from the workers to every API process (news: the
workers publish it, so they import this module) and how many streams the open-files
limit lets a process hold (fdlimit)."""
