"""The worker's consumer: Celery's, except that one malformed task message cannot stop
the worker.

Celery's task handler guards only the errors it expects (an unknown task, an invalid
body); anything else that a message makes it raise (a task name that is a list, a
protocol-2 header without its id) escapes into the consumer loop, which Celery treats
as unrecoverable: the worker process exits and nothing more is judged. Such a message
is logged and rejected here, like an invalid task. The broker's own errors still go to
Celery, which reconnects. Queue messages only wake a worker (the judging's row is the
truth): a rejected one costs nothing the reaper does not re-send."""

from __future__ import annotations

import logging
from typing import Any

from celery.exceptions import InvalidTaskError
from celery.worker.consumer import Consumer as CeleryConsumer

log = logging.getLogger("memorace.worker")
# What a message's content makes Celery's handler raise. Kombu's Redis transport counts
# KeyError among its connection errors: Celery reconnected and got the same message
# back, forever (a poison message stopped the worker from judging on Redis too).
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, IndexError)


class Consumer(CeleryConsumer):
    def create_task_handler(self, *args: Any, **kwargs: Any) -> Any:
        handle = super().create_task_handler(*args, **kwargs)

        def on_task_received(message: Any) -> Any:
            try:
                return handle(message)
            except MALFORMED as exc:  # before the broker's errors: Redis counts KeyError
                self._reject_malformed(message, exc)
            except (*self.connection_errors, *self.channel_errors):
                raise
            except Exception as exc:
                self._reject_malformed(message, exc)
            return None

        return on_task_received

    def _reject_malformed(self, message: Any, exc: Exception) -> None:
        why = InvalidTaskError(f"malformed task message ({type(exc).__name__}: {exc})")
        try:
            self.on_invalid_task(None, message, why)
        except (*self.connection_errors, *self.channel_errors):
            raise
        except Exception:
            log.exception("could not reject a malformed task message; dropping it")
