"""Imprecise timestamps: expected aggregates over possible times."""
