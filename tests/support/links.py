"""The file a planted symbolic link points to in the tests that check freshrag never writes
through one (tests/conftest.py's `target` fixture writes it)."""

PRECIOUS = "someone else's file, whole\n"
