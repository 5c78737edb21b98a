"""Unsaved input kept as a server-side draft: the editors' forms autosave what is typed here
(debounced, from ``static/js/drafts.js``), a reload or another browser offers it back, and the
real save deletes it. A draft's key names the form and the object (``tag-review:response:42``);
the feature that owns the form registers a *scope* for the key's first part, which says whether
the user may edit that object (``scopes.input_draft_scope_register``)."""
