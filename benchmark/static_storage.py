"""Static files with hashed names (WhiteNoise's compressed manifest storage), without turning a
missing manifest entry into a 500.

With DEBUG off, ``{% static %}`` looks each file up in the manifest that ``collectstatic``
writes. Before that has run (or for a file added since), Django's storage raises ValueError
while rendering, so every page, the 404 and 500 pages included, became a 500 (issue 14). Here
such a file gets its plain, unhashed URL instead, and the problem is logged once per file, so
pages still render while the log says to run ``collectstatic``.
"""

from __future__ import annotations

import logging

from whitenoise.storage import CompressedManifestStaticFilesStorage

log = logging.getLogger(__name__)


class ForgivingManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    _reported: set[str] = set()

    def url(self, name: str | None, force: bool = False) -> str:
        try:
            return super().url(name, force)
        except ValueError as exc:
            if name not in self._reported:
                self._reported.add(str(name))
                log.error("static file %s: %s (run `manage.py collectstatic`)", name, exc)
            return self._url(lambda n: n, str(name), force)
