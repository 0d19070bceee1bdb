"""The only wing that imports CuPy: the evaluator process, measuring, probes, launches and
arrays."""
