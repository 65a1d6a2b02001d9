"""Evaluation piece by piece with carried state: streaming chunks, time split, live streams."""
