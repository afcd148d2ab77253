"""The test bed: real services and stand-ins started by the session fixtures (tests/conftest.py)."""
