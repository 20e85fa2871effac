"""Test stand-in for cuda-python (see tests/fakes/README.md)."""
