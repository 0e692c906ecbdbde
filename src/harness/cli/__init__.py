"""The `harness` command line."""
