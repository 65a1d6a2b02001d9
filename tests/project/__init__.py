"""Tests: the repository as shipped: docs' links and module maps, the installed wheel."""
