"""Personal API tokens: a user makes named keys for scripts on their own page (or an operator
with ``manage.py api_token``); the API takes them as ``Authorization: Token <key>``. Only a
prefix (to tell them apart) and the sha256 of each key are stored; every use is counted."""
