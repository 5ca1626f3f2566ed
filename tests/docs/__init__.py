"""What ships besides the library: the README and docs/ (every python block runs; the
maps stay true), examples, compose, demo, benchmarks."""
