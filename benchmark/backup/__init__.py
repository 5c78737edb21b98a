"""Backup and restore of the whole database and the media storage (``manage.py backup`` and
``manage.py restore``): ``services`` does both, ``databases`` holds what differs per engine,
``manifest`` reads and checks a backup folder without Django."""
