import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")
application = get_wsgi_application()

from benchmark.startup import warm_up  # noqa: E402 - after Django is set up

warm_up()
