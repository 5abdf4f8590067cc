"""hermes-sdk benchmarks: ``python -m benchmarks [--quick] [--json PATH]`` (see docs/performance.md)."""
