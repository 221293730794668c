"""Campaign effects: route assertion, settling cells (capture, spend, score), the report."""
