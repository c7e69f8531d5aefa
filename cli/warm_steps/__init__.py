"""Warm steps: each step of a local run forked from a process that already imported the heavy libraries."""
