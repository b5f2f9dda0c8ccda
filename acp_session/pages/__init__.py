"""Self-contained web pages: a recorded session as a timeline (``session_view``) and the page skeleton they share
(``html``: data as inert JSON, rendered with ``textContent`` only, under a strict Content-Security-Policy)."""
