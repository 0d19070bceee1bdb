"""The vocabulary every wing shares: shapes, configs, accuracy classes, statuses, errors. Standard
library only."""
