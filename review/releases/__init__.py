"""Releases: frozen, checksummed snapshots of a project's chosen items (issue 13)."""
