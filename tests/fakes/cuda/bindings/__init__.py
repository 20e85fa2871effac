"""Test stand-in for cuda-python's `cuda.bindings` (see tests/fakes/README.md)."""
