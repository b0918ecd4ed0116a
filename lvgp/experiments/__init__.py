"""Comparative studies and the command-line interface."""
