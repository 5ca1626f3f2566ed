"""The small application docker-compose.yml runs (see `deploy.app`)."""
