"""worqr behind real Redis Sentinels."""
