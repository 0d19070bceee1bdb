"""The study loop and its ports: evaluators, recorders, samplers, finalists, warm starts, replay."""
