"""The one exception type of the data layer.

Every problem a user can hit while finding, verifying, building or loading task data is raised as
``DataError`` with a message that names the file (and line where it applies) and says how to fix
it, so the CLI can print it as is.
"""

from __future__ import annotations

from bench.api.errors import UserError


class DataError(UserError):
    """A missing, altered or malformed data file; the message is meant for the user as is."""
