"""People: project members and their roles, invitation links, user accounts (for staff), and
the audit trail of every change to them."""
