"""Access control and limits. Who is asking: passwords, API tokens and web sessions
(auth), the FastAPI dependencies that find the caller (deps), the caller without an ORM
row for the hot reads (caller) and the tokens checked recently (tokencache); logins
under attack (login) and accounts made by their owners (signup). And what every request
meets before a route runs: the cap on bodies (bodylimit), paths no route can answer
(pathguard), the bound on requests in flight (inflight), uploads read without trust
(uploads) and the headers on every answer (headers)."""
