"""What runs candidates: the in-sandbox harness and the sandbox backends."""
