import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")
application = get_asgi_application()

from benchmark.startup import warm_up  # noqa: E402 - after Django is set up

warm_up()
