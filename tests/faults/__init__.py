"""The fault scenarios (issue 5): real `worqr worker` meshes under injected faults."""
