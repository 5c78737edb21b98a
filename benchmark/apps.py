from django.apps import AppConfig


class BenchmarkConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmark"

    def ready(self) -> None:
        from axes.signals import user_locked_out

        from benchmark import checks  # noqa: F401 - registers the deploy checks
        from benchmark.login_throttle import api_locked_out

        user_locked_out.connect(api_locked_out, dispatch_uid="benchmark.api_locked_out")
