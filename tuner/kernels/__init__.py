"""What a kernel is: families (parameters, rules, footprints), their spaces, resource checks,
padding plans, rendering and compiling."""
