from django.apps import AppConfig


class BenchConfig(AppConfig):
    """Evaluation and benchmarks (flux_eval, flux_bench, the epistemic evaluation): no other app depends on it."""

    name = "bench"
    verbose_name = "Flux Memory evaluation and benchmarks"
