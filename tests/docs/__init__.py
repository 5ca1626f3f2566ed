"""What ships besides the library: README snippets, examples, compose, demo, benchmarks."""
