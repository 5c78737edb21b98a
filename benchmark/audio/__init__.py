"""Audio files stored once by content hash (m&m's speech inputs): storing, reading for a user,
and the permission-checked player source."""
