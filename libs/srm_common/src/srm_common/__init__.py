"""Domain core shared by every SRM service."""
