"""Prometheus metrics: worker hooks, the mesh collector, the exporter, the dashboard."""
