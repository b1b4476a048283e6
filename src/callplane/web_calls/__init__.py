"""Web calls: a browser talks to an agent over WebRTC (DESIGN §16)."""
