"""worqr's test suite (a package, so test modules in different folders may share
a file name and import `tests.support`). See tests/README.md for the map."""
