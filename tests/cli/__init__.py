"""The `worqr` command line, run as subprocesses."""
