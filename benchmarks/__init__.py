"""Side-by-side benchmarks of worqr and the queues people would pick instead.

Run ``python -m benchmarks.compare --help``. Peers come from the ``bench``
optional-dependency group (``pip install -e '.[bench]'``); nothing is installed
at run time.
"""
