"""Buckets for lnk: an agent's files and memory's index kept anywhere rclone reaches, by a pinned, checked rclone."""

__version__ = "0.1.0"
