"""Which config to run for a shape on a device: exact, nearest, far or default; device kinds; the
in-memory index."""
