"""The client of a MemoRace server: HTTP (`http`), its config (`config`), the event
stream (`sse`) and the `submit`/`status`/`leaderboard` commands (`cli`).

Apart from `judge` (the offline judge, which never imports this package or an HTTP
client): this package may use `judge`, never the other way round.
"""
