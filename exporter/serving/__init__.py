"""Serving: the HTTP server, its web configuration (TLS, basic auth) and the exposition of the collectors."""
