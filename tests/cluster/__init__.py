"""worqr on a real Redis Cluster."""
