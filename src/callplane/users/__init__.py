"""People who sign in to the dashboard: accounts, passwords, sign-in checks
(README.md#the-dashboard)."""
