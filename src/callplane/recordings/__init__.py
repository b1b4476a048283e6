"""Recording storage, signed URLs and audio serving."""
