"""The vocabulary every wing shares: shapes, configs, accuracy classes, statuses, measurement
phases, claims, errors. Standard library only (storage imports it too)."""
