"""Server-rendered web pages (Jinja2): what contestants and organizers see in a browser.

Pages call the same service functions as the JSON API (api.actions.submissions, api.actions.admin,
api.actions.problems, ...), so both always agree. Every POST form carries a CSRF token
(checked for the whole router by `csrf_guard`). Errors reach browsers as HTML pages
through `error_page`; a page that needs a login sends the browser to /login.
"""

from api.pages import (  # noqa: F401  (they add their routes)
    contestant,
    messages,
    organizer,
    organizer_accounts,
    organizer_contests,
    organizer_problems,
    signup,
)
from api.pages.common import error_page, router, wants_html

__all__ = ["error_page", "router", "wants_html"]
