"""The client API, `worqr.Worqr` and `worqr.AsyncWorqr`, against a real Redis."""
