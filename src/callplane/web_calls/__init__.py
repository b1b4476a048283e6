"""Web calls: a browser talks to an agent over WebRTC (docs/web-calls.md)."""
